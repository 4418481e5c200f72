"""The write side: what an ingest runs (the tree builder, headings and statements, OCR,
summaries, vectors, the ingest itself). A search imports nothing of it. Private modules; the
public names are exported from ``drag_knee_retriever``."""
