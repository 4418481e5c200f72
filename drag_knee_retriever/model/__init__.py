"""The data layer: the node model (documents, tree nodes, results, traces), derived ids, the
stored point's schema and the declarative settings. Private modules; the public names are
exported from ``drag_knee_retriever``."""
