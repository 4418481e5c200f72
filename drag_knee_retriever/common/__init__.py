"""Helpers every layer may use (the bottom layer): URL redaction, disk refusals, the knee cut,
exact BM25 IDF. Private modules; the public names are exported from ``drag_knee_retriever``."""
