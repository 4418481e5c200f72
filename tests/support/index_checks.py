"""Checks the search-invariant tests share on a real index: a node's stored ancestors, and a
round-trip counter around ``store.rank``."""

from typing import Any, List


def ancestors(index: Any, node: Any) -> List[str]:
    """Ids of ``node``'s ancestors, nearest first, as the index's store holds them."""
    out, parent = [], node.parent_id
    while parent:
        (p,) = index.store.retrieve([parent])
        out.append(p.id)
        parent = p.parent_id
    return out


class CountingRank:
    """Wraps ``store.rank`` to count round trips (one call = one round trip)."""

    def __init__(self, store: Any) -> None:
        self.store, self.calls, self.inner = store, 0, store.rank

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner(*args, **kwargs)
