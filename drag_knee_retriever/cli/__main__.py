"""``python -m drag_knee_retriever.cli``: the same as the ``drag-knee`` script."""

from drag_knee_retriever.cli import main

main()
