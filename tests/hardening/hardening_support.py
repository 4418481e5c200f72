"""Helpers shared by the hardening tests (not a test module).

- :class:`WritePlan` / :func:`install_write_hook`: count the engine's write calls (one batch upsert
  or one delete = one step) and run a hook before / after each (raise, kill the process, pause).
- :func:`snapshot` / :func:`assert_only_complete_trees_visible`: what "no partial tree" means, checked
  against everything the store holds.
- :func:`bounded`: run one operation in a thread with a deadline ("never a hang").
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from drag_knee_retriever.build._builder import build_document_trees
from drag_knee_retriever.model._nodes import TreeNode
from drag_knee_retriever.store import QdrantClientStore
from support import make_store  # noqa: F401  (re-exported: the hardening tests import it from here)

METHODS = ("fixed", "knee", "sensitive_knee", "branch")


# ---------------------------------------------------------------------------------------------
# write-step hooks (fault injection, kills, pauses)
# ---------------------------------------------------------------------------------------------


class InjectedFault(RuntimeError):
    """The failure the tests inject into a write step."""


Hook = Callable[[int, str, str], None]  # (step number, "before" | "after", what) -> None


@dataclass
class WritePlan:
    """Counts engine write calls; ``hook(step, phase, what)`` runs before and after each."""

    hook: Optional[Hook] = None
    steps: int = 0
    log: List[str] = field(default_factory=list)
    context: str = ""  # the store method being run ("upsert" / "delete_nodes"), for readable logs

    def run(self, what: str, call: Callable[[], Any]) -> Any:
        what = f"{self.context}: {what}" if self.context else what
        step = self.steps
        self.steps += 1
        self.log.append(what)
        if self.hook:
            self.hook(step, "before", what)
        result = call()
        if self.hook:
            self.hook(step, "after", what)
        return result


@contextlib.contextmanager
def raises_injected() -> Iterator[None]:
    """Expect the injected fault to reach the caller (as itself, or wrapped by the store as StoreError)."""
    import pytest

    from drag_knee_retriever.errors import StoreError

    with pytest.raises((InjectedFault, StoreError)) as info:
        yield
    chain, error = [], info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any(isinstance(e, InjectedFault) for e in chain), f"another error than the injected fault: {info.value!r}"


def fail_at(step: int, phase: str) -> Hook:
    """A hook raising :class:`InjectedFault` at one step, before it is applied or after."""

    def hook(k: int, when: str, what: str) -> None:
        if k == step and when == phase:
            raise InjectedFault(f"injected fault {phase} write step {k} ({what})")

    return hook


def kill_at(step: int, phase: str) -> Hook:
    """A hook killing this process (SIGKILL: no cleanup, no flush) at one write step."""

    def hook(k: int, when: str, what: str) -> None:
        if k == step and when == phase:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


class _ShardProxy:
    """Stands in for a Qdrant Edge shard: ``update`` (upserts and deletes) goes through the plan."""

    def __init__(self, shard: Any, plan: WritePlan) -> None:
        self._shard = shard
        self._plan = plan

    def update(self, operation: Any) -> Any:
        return self._plan.run(f"edge update {type(operation).__name__}", lambda: self._shard.update(operation))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shard, name)


def install_write_hook(store: Any, plan: WritePlan) -> WritePlan:
    """Route every engine write of ``store`` (each upsert batch, each delete) through ``plan``."""
    for name in ("upsert", "delete_nodes"):
        method = getattr(store, name)

        def labelled(*args: Any, _method: Callable[..., Any] = method, _name: str = name, **kwargs: Any) -> Any:
            plan.context = _name
            try:
                return _method(*args, **kwargs)
            finally:
                plan.context = ""

        setattr(store, name, labelled)
    if isinstance(store, QdrantClientStore):
        client = store.client
        upsert, delete = client.upsert, client.delete
        client.upsert = lambda *a, **k: plan.run("client upsert", lambda: upsert(*a, **k))
        client.delete = lambda *a, **k: plan.run("client delete", lambda: delete(*a, **k))
    elif getattr(store, "engine", None) == "edge":
        store._shard = _ShardProxy(store._shard, plan)
        if store._roots is not None:  # the roots' own shard (their copy) is written too
            store._roots = _ShardProxy(store._roots, plan)
    else:  # pragma: no cover - a new engine needs its own hook
        raise TypeError(f"no write hook for store {type(store).__name__}")
    return plan


# ---------------------------------------------------------------------------------------------
# what "no partial tree" means
# ---------------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """Everything stored, and for each document with a root, the ids reachable from that root."""

    nodes: Dict[str, TreeNode]
    complete: Dict[str, Set[str]]
    problems: List[str]

    def span_text(self, node: TreeNode) -> str:
        """The text a search must return for ``node`` (its own, or its leaves' in order)."""
        if node.is_leaf:
            return node.text
        leaves = sorted(
            (self.nodes[i] for i in self.complete[node.doc_id] if self.nodes[i].is_leaf
             and node.span.first_leaf <= self.nodes[i].span.first_leaf <= node.span.last_leaf),
            key=lambda n: n.span.first_leaf,
        )
        return "\n\n".join(leaf.text for leaf in leaves)

    def ancestors(self, node: TreeNode) -> List[str]:
        out, parent = [], node.parent_id
        while parent is not None and parent in self.nodes and len(out) < 100:
            out.append(parent)
            parent = self.nodes[parent].parent_id
        return out


def snapshot(index: Any) -> Snapshot:
    """Read the whole store and check every stored root's tree is whole and of one version."""
    nodes = {n.id: n for n in index.store.scroll_nodes()}
    complete: Dict[str, Set[str]] = {}
    problems: List[str] = []
    for root in (n for n in nodes.values() if n.level == 0):
        if root.parent_id is not None:
            problems.append(f"root {root.id} of {root.doc_id} has a parent")
        reachable, todo = {root.id}, [root]
        while todo:
            node = todo.pop()
            for child_id in node.child_ids:
                child = nodes.get(child_id)
                if child is None:
                    problems.append(f"{root.doc_id}: child {child_id} of {node.id} is missing (partial tree visible)")
                    continue
                if (child.doc_id, child.doc_hash, child.parent_id, child.level) != (
                        root.doc_id, root.doc_hash, node.id, node.level + 1):
                    problems.append(f"{root.doc_id}: node {child_id} belongs to another version or place")
                reachable.add(child_id)
                todo.append(child)
        leaves = sorted(nodes[i].span.first_leaf for i in reachable if nodes[i].is_leaf)
        if leaves != list(range(root.span.last_leaf + 1)):
            problems.append(f"{root.doc_id}: leaves {leaves[:5]}... do not cover 0..{root.span.last_leaf}")
        complete[root.doc_id] = reachable
    return Snapshot(nodes=nodes, complete=complete, problems=problems)


def check_hits(snap: Snapshot, hits: Iterable[Any], *, texts: bool = True) -> List[str]:
    """Problems with search hits (ScoredNode) against a snapshot: empty list = consistent."""
    problems = []
    hits = list(hits)
    ids = {h.node.id for h in hits}
    for hit in hits:
        node = hit.node
        if node.doc_id not in snap.complete:
            problems.append(f"{node.id} of {node.doc_id}: its document has no root (partial tree returned)")
            continue
        if node.id not in snap.complete[node.doc_id]:
            problems.append(f"{node.id} of {node.doc_id}: not in the tree under the document's root (orphan)")
            continue
        if snap.nodes[node.id].doc_hash != node.doc_hash:
            problems.append(f"{node.id}: version {node.doc_hash} returned, {snap.nodes[node.id].doc_hash} stored")
        if set(snap.ancestors(node)) & ids:
            problems.append(f"{node.id} returned together with its ancestor")
        if texts and hit.text != snap.span_text(snap.nodes[node.id]):
            problems.append(f"{node.id}: returned text differs from its span's stored text")
    return problems


def search_problems(index: Any, queries: Sequence[str], snap: Optional[Snapshot] = None,
                    methods: Sequence[str] = METHODS, filters: Any = None) -> List[str]:
    """Run every method on every query; report hits or trace candidates outside complete trees."""
    snap = snap or snapshot(index)
    problems = list(snap.problems)
    for query in queries:
        for method in methods:
            result = index.search(query, method=method, filters=filters)
            problems += [f"{method}: {p}" for p in check_hits(snap, result.nodes)]
            for step in result.trace.steps:
                for c in step.candidates:
                    if c.node_id not in snap.complete.get(c.doc_id, ()):
                        problems.append(f"{method}: trace candidate {c.node_id} of {c.doc_id} is outside any complete tree")
    return problems


def flat_problems(index: Any, queries: Sequence[str], snap: Optional[Snapshot] = None) -> List[str]:
    snap = snap or snapshot(index)
    problems = []
    for query in queries:
        hits = index.flat_search(query, k=50, scope="leaves")
        problems += [f"flat: {p}" for p in check_hits(snap, hits)]
    return problems


def expected_ids(index: Any, documents: Sequence[Any]) -> Dict[str, Tuple[str, Set[str]]]:
    """doc_id -> (doc_hash, node ids) that the builder makes for ``documents`` with the index's settings."""
    trees = build_document_trees(list(documents), index.build_config, index.summarizer)
    return {t.doc_id: (t.doc_hash, {n.id for n in t.nodes}) for t in trees}


def stored_ids(index: Any) -> Dict[str, Tuple[Set[str], Set[str]]]:
    """doc_id -> (doc_hashes, node ids) as stored."""
    out: Dict[str, Tuple[Set[str], Set[str]]] = {}
    for node in index.store.scroll_nodes(with_text=False):
        hashes, ids = out.setdefault(node.doc_id, (set(), set()))
        hashes.add(node.doc_hash)
        ids.add(node.id)
    return out


# ---------------------------------------------------------------------------------------------
# deadlines
# ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    value: Any = None
    error: Optional[BaseException] = None
    seconds: float = 0.0


def bounded(seconds: float, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Outcome:
    """Run ``fn`` in a daemon thread; fail the test if it has not returned within ``seconds``."""
    import pytest

    outcome = Outcome()

    def target() -> None:
        try:
            outcome.value = fn(*args, **kwargs)
        except BaseException as exc:  # the caller decides whether an error is the right answer
            outcome.error = exc

    started = time.perf_counter()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    outcome.seconds = time.perf_counter() - started
    if worker.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} did not finish within {seconds}s (a hang)")
    return outcome


# ---------------------------------------------------------------------------------------------
# the drag-knee command, as a user runs it
# ---------------------------------------------------------------------------------------------


def cli_command(*args: str) -> List[str]:
    """The ``drag-knee`` command line of this interpreter's installation."""
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("drag-knee")
    return ([str(script)] if script.exists() else [sys.executable, "-m", "drag_knee_retriever.cli"]) + list(args)


def cli_env(cwd: Any, **extra: str) -> Dict[str, str]:
    """The environment of a ``drag-knee`` subprocess: the offline model, a private data folder."""
    env = dict(os.environ, XDG_DATA_HOME=str(cwd) + "/xdg", COLUMNS="200")
    env.pop("DRAG_KNEE_DEBUG", None)
    env.update(extra)
    return env


def cli(cwd: Any, *args: str, timeout: float = 240, **env: str) -> Any:
    """Run ``drag-knee ARGS`` in ``cwd`` and return the finished process (text output captured)."""
    import subprocess

    return subprocess.run(cli_command(*args), capture_output=True, text=True, timeout=timeout,
                          env=cli_env(cwd, **env), cwd=cwd)


def cli_all(cwd: Any, commands: Sequence[Sequence[str]], timeout: float = 240) -> List[Any]:
    """Several ``drag-knee`` commands at once (each a subprocess); their finished processes, in order."""
    import subprocess

    running = [subprocess.Popen(cli_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=cli_env(cwd), cwd=cwd) for args in commands]
    done = []
    for proc, args in zip(running, commands):
        out, err = proc.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(list(args), proc.returncode, out, err))
    return done
