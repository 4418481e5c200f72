"""The facade: ``DragKneeIndex`` and what its methods share (opening an index, listing
documents and nodes, the settings reference). Private modules; the public
names are exported from ``drag_knee_retriever``."""
