"""The embedded default store: Qdrant Edge (``qdrant-edge-py``), the Qdrant engine in process.

Every ``qdrant_edge`` call of the library lives in this package, one module per job (``engine.py``
opens, reads and closes; ``rank.py`` ranks, as plan, execute and read; ``writes.py`` writes;
``roots.py`` keeps the roots' shard; ``maps.py`` / ``node_map.py`` / ``fast.py`` hold the fast path
of the walk's rankings; ``split.py`` the split BM25 side; ``calls.py`` the engine's import and
errors; ``lock.py`` the folder
lock and in-memory folders), so an API change of the (beta) package touches one place. The
semantics are those of :class:`~drag_knee_retriever.store.qdrant.QdrantClientStore`
(same vector names, payload, bookkeeping point, fusion and tie-breaking), which the congruence tests
check request by request.

Decisions, each measured on the 2-core development machines (see ``benchmarks/engine.py``):

- **Exact search, no HNSW.** Edge builds HNSW graphs only when ``optimize()`` runs over a segment
  above ``indexing_threshold``. Measured on real MiniLM embeddings (COVID-QA paragraphs + HotpotQA
  sentences: 9,406 leaves, 1,092 document roots as centroids, 1,480 real questions), default HNSW
  (m=16, ef_construct=100) against exact search:

  - root ranking (``level=0``, 1,092 roots): recall@10 1.000, because a filter that small is
    below the planner's full-scan threshold (~6,600 384-d vectors) and is scanned exactly anyway;
  - flat top-10 over the 9,406 leaves: recall@10 0.992, only 94.6% of questions got the exact top
    10 and some got none of it (min 0.0); hnsw_ef=512 reaches 0.999 at 1.4 ms; m=32,
    ef_construct=200 reaches 0.9987 at 1.2 ms, while the exact scan takes 2.0 ms;
  - building the graph took 6.8 s for those 10.5k points (57 s for 50k random points) and raised
    resident memory by ~70% at 50k (357 -> 603 MB).

  Saving about a millisecond per flat query is not worth a wrong top 10 for one question in
  twenty, seconds of optimisation after every ingest and the memory; candidate-set rankings (the
  walk below the roots) are exact in any case. So indexing is off (``indexing_threshold=0``), every
  request is an exact scan in Rust, and both engines agree. A flat scan over 50k nodes costs ~7 ms;
  at 1M nodes (``benchmarks/engine.py --scale``, 2 loaded cores) a flat query costs ~0.5 s and a knee
  search ~0.1 s, three quarters of it the exact ranking of the 18k roots; above a few hundred
  thousand nodes, move to a Qdrant server (``url=``), which indexes with HNSW.
- **Large folders.** A reopened index rebuilds its BM25 document frequencies by reading every
  node's sparse vector, one scroll page at a time (78 s at 1M nodes, under load); where the engine
  keeps payloads is ``EdgeStore(payload_memory=...)`` (``"cold"``: read from disk when needed).
- **Booleans in filters.** qdrant-edge-py 0.9.0 converts ``MatchValue(True)`` to the integer 1 (a
  Python bool is an int), so it matches no boolean payload; ``numpy.bool_`` reaches the engine as a
  boolean. :func:`.calls.match_value` does that conversion for every bool (``is_leaf`` and metadata).
- **RRF.** Edge's ``Fusion.Rrf(k, weights)`` gives the scores of qdrant-client local mode exactly,
  ``sum_i 1 / ((rank_i + 1) / w_i + k - 1)`` with 0-based ranks (= ``w / (k + rank)`` only when
  ``w = 1``), including a weight of 0 (that side contributes 0 and its points still appear with
  score 0). ``k = 0`` is rejected by qdrant-client and gives infinite scores in Edge, so this store
  rejects it too.
- **The walk's rankings read no payload.** Loading and converting a payload costs Edge ~10 us per
  hit, and a knee walk ranks ~100 candidates in 5 round trips: a store that created its shard keeps
  every node's structure in a :class:`.node_map.NodeCache` (exact: it sees every write), light rankings ask
  for ids and scores only, and with explain on they ask for the two side rankings only and fuse
  them here (:func:`.fast.fuse_rrf`, the engine's float32 RRF bit for bit) instead of scanning both sides
  twice; without explain (the default) only the hits that can survive a request's limit are
  read (:func:`.fast.hits_from_map`). Measured at 10k nodes (``benchmarks/engine.py``): the knee search
  10.3 -> ~4.5 ms, ~1.1x a flat top-10 (explain on: ~1.15-1.2x). An index above the map's capacity
  (200,000 nodes: a 1M-node index keeps none) fuses its scored rankings (the focus step's, explain's)
  here too: the dense side brings the walk's payload fields and the few hits only BM25 returned are
  read in one call, instead of a fused request that filters the same points twice more.
  Such an index still keeps its roots' walk fields (a roots map, loaded in the background when
  opened, bounded by ``roots_map_capacity``), so its roots ranking reads no payload either, and a roots
  ranking on the roots' own shard sends no ``level = 0`` condition (every point there is a root): at
  1M nodes the roots trip ~3 -> ~1.3 ms (benchmarks/RESULTS.md, "scale10").
- **Filtered BM25 rankings walk the inverted index** above 1,000 admitted points (new shards:
  ``full_scan_threshold``; the engine's default, 5,000, scored the focus step's global list point by
  point). Same scores (the same sums in the same order); measured in ``benchmarks/RESULTS.md``, "scale".
- **A filtered BM25 side split per group of documents** (``split.py``): above 100,000 points, the
  focus step's global list's BM25 side (the leaves of the ~50 best documents) is sent as one
  request per group of documents holding fewer than 1,000 nodes, scored point by point, instead
  of one walk over the whole inverted index (at 1M nodes ~2.5 ms against ~12 ms); the groups' lists
  are merged by score, then id, as every side ranking is ordered, so the ranking is the same.
- **One process per folder.** Edge's own WAL lock makes a second ``load`` fail with an opaque
  "WouldBlock"; we hold an ``fcntl.flock`` on ``<folder>/<collection>/drag_knee.lock`` while open
  and raise :class:`StoreLockedError` naming the holder's pid.
"""

from drag_knee_retriever.store.edge.engine import EDGE_PACKAGE, EDGE_VERSION, EdgeStore
from drag_knee_retriever.store.edge.lock import LOCK_FILE

__all__ = ["EDGE_PACKAGE", "EDGE_VERSION", "EdgeStore", "LOCK_FILE"]
