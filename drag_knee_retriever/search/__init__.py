"""The read side: one search, as one pipeline, and the sans-IO steps it strings together. A search
imports nothing of the build side (``build/``). Private modules; the public names are exported from
``drag_knee_retriever``.

- :mod:`._ops`: the operations a search asks of the outside world (rank, retrieve, read the roots,
  encode the query, ask a self-query model, read the request count), as plain values;
- :mod:`._plan`: a validated search (:class:`~._plan.SearchPlan`: settings, filters, trace,
  stopwatch) and the steps on it that need no I/O (cap, budget context, packing, public scores);
- :mod:`._roots`: what a search reads from the documents' roots (identities, metadata keys and
  values), kept until a write;
- :mod:`._pipeline`: the search itself (:func:`~._pipeline.search_steps`: plan, identity, walk,
  focus, budget, relevance scores, context) and the flat baseline (:func:`~._pipeline.flat_steps`),
  generators that yield operations and receive their answers;
- :mod:`._drivers`: :func:`~._drivers.run` and :func:`~._drivers.arun`, the only places a search
  calls the store, the encoder or a self-query model;
- the steps: the walk (:mod:`._traversal`), the budget fill (:mod:`._budget`), the context check
  (:mod:`._context`), the document identities (:mod:`._identity`, :mod:`._identity_terms`), the
  magnitude ranking (:mod:`._magnitude`), the flat page ranking (:mod:`._page_ranking`), the
  relevance scores (:mod:`._relevance`) and the collection's compatibility check (:mod:`._compat`).

This ``__init__`` imports nothing, so that a lower module may use :mod:`._ops` / :mod:`._drivers`
without importing the pipeline.
"""
