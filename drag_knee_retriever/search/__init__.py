"""A search as one pipeline: the steps in one generator, the store's answers from one of two drivers.

- :mod:`.ops`: the operations a search asks of the outside world (rank, retrieve, read the roots,
  encode the query, ask a self-query model, read the request count), as plain values;
- :mod:`.plan`: a validated search (:class:`~.plan.SearchPlan`: settings, filters, trace,
  stopwatch) and the steps on it that need no I/O (cap, budget context, packing, public scores);
- :mod:`.roots`: what a search reads from the documents' roots (identities, metadata keys and
  values), kept until a write;
- :mod:`.pipeline`: the search itself (:func:`~.pipeline.search_steps`: plan, identity, walk,
  focus, budget, relevance scores, context) and the flat baseline (:func:`~.pipeline.flat_steps`),
  generators that yield operations and receive their answers;
- :mod:`.drivers`: :func:`~.drivers.run` and :func:`~.drivers.arun`, the only places a search calls
  the store, the encoder or a self-query model.

The walk (:mod:`~drag_knee_retriever.search._traversal`), the budget fill (:mod:`~drag_knee_retriever.search._budget`)
and the context check (:mod:`~drag_knee_retriever.search._context`) stay sans-IO modules of their own; the
pipeline strings them together. This ``__init__`` imports nothing, so that a lower module may use
:mod:`.ops` / :mod:`.drivers` without importing the pipeline.
"""
