"""One in-memory ranker for tests of the walk (``traversal.walk`` takes any ranker callable).

It ranks honestly by a score per node (fixed, or drawn per request), honours candidate ids,
level, leaves_only, filters and limit, orders ties by id as the stores do, counts round trips and
records every request: so a test can work its expectations out by hand. Tests that need rankings
computed from vectors use the reference engine, ``drag_knee_retriever.store.memory.MemoryStore``.
"""

from __future__ import annotations

import random
from typing import Dict, List, Optional, Sequence

from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.store import RankedHit, RankRequest, node_matches


class FakeRanker:
    """``FakeRanker(forest, scores)``: rank ``forest`` (id -> node) by ``scores`` (id -> score).

    ``scores=None`` draws every score afresh from ``choices`` with ``rng`` (a new score per request,
    as a real engine's fused score changes with the candidate set); a missing id scores 0.
    """

    def __init__(self, forest: Dict[str, TreeNode], scores: Optional[Dict[str, float]] = None,
                 rng: Optional[random.Random] = None, choices: Sequence[float] = (0.0, 0.5, 1.0)) -> None:
        self.forest, self.scores = forest, scores
        self.rng, self.choices = rng or random.Random(0), tuple(choices)
        self.calls = 0
        self.requests: List[RankRequest] = []

    def score(self, node: TreeNode) -> float:
        if self.scores is None:
            return self.rng.choice(self.choices)
        return self.scores.get(node.id, 0.0)

    def __call__(self, requests: Sequence[RankRequest]) -> List[List[RankedHit]]:
        self.calls += 1
        out = []
        for r in requests:
            self.requests.append(r)
            if r.candidate_ids is None:
                pool = list(self.forest.values())
            else:
                pool = [self.forest[i] for i in dict.fromkeys(r.candidate_ids) if i in self.forest]
            pool = [n for n in pool if (r.level is None or n.level == r.level) and (n.is_leaf or not r.leaves_only)
                    and node_matches(n, r.filters)]
            hits = sorted((RankedHit(node=n, score=self.score(n)) for n in pool), key=lambda h: (-h.score, h.node.id))
            out.append(hits[: r.limit])
        return out
