"""``python -m drag_knee_retriever.cli``: the same as the ``drag-knee`` script."""

from . import main

main()
