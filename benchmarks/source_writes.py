"""Does a vector store keep exactly what its calls acknowledged? (issue 38, items 1 and 2)

Two attacks on one source (every chunk has ``metadata["source"] = "notes.txt"``, so every add and
delete rewrites that source's tree), through the LangChain store over the real offline model:

1. ``--threads 8 --ops 100``: each thread runs ``ops`` random adds of a new chunk and deletes of
   one of its own earlier chunks, all at once. At the end the source's stored chunks must equal
   the acknowledged ones (added and not deleted), exactly.
2. ``--kills 20``: a child process adds and deletes chunks in a loop on a folder index and is
   SIGKILLed at a random moment, ``kills`` times over the same folder (seeded with 50 chunks). After each kill the folder
   is reopened: every acknowledged chunk must be there and no acknowledged delete undone; the one
   call in flight may have landed or not.

Prints the counts of each round and exits 1 on any mismatch. Example (about 5-8 minutes here)::

    python benchmarks/source_writes.py --threads 8 --ops 100 --kills 20 --engine edge

``--add-one 300`` times instead one page added to a 300-page source (a FinanceBench filing's pages
as LangChain page documents): the whole source was encoded again before the stored vectors of
unchanged texts were reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Set

SOURCE = "notes.txt"
TOPICS = ["volcanoes erupt basalt lava", "sourdough starters ferment flour", "glaciers carve valleys of ice",
          "honeybees dance to share nectar", "tides follow the moon", "copper wires carry current"]


def chunk_text(name: str) -> str:
    return f"Chunk {name}: {TOPICS[hash(name) % len(TOPICS)]}, note {name}."


def stored_ids(store) -> Set[str]:
    """The ids of every chunk of the source (read from the index, not from any call's answer)."""
    from drag_knee_retriever.integrations._members import MemberStore

    return {m.id for m in MemberStore(store.index).load([SOURCE])[SOURCE]}


# ---------------------------------------------------------------------------------------------
# 1. threads
# ---------------------------------------------------------------------------------------------


def threads_round(threads: int, ops: int, location: str, engine: str, seed: int) -> bool:
    from langchain_core.documents import Document

    from drag_knee_retriever import DragKneeIndex, StoreConfig
    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    index = DragKneeIndex(location, store=StoreConfig(collection="writes", engine=engine))
    store = DragKneeVectorStore(index)
    acked: Dict[int, Set[str]] = {t: set() for t in range(threads)}
    counts = {"adds": 0, "deletes": 0}
    lock = threading.Lock()
    barrier = threading.Barrier(threads)
    errors: List[BaseException] = []

    def work(t: int) -> None:
        rng = random.Random(seed * 1000 + t)
        barrier.wait()
        try:
            for k in range(ops):
                mine = sorted(acked[t])
                if mine and rng.random() < 0.4:
                    victim = rng.choice(mine)
                    store.delete([victim])
                    acked[t].discard(victim)
                    with lock:
                        counts["deletes"] += 1
                else:
                    name = f"t{t}-{k}"
                    (new_id,) = store.add_documents([Document(page_content=chunk_text(name), metadata={"source": SOURCE})])
                    acked[t].add(new_id)
                    with lock:
                        counts["adds"] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    started = time.perf_counter()
    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - started
    want = set().union(*acked.values())
    have = stored_ids(store)
    index.close()
    lost, extra = want - have, have - want
    print(f"threads: {threads} x {ops} ops ({counts['adds']} adds, {counts['deletes']} deletes acknowledged) in "
          f"{seconds:.0f} s: acknowledged {len(want)}, stored {len(have)}, lost {len(lost)}, "
          f"deleted but back {len(extra)}, errors {len(errors)}")
    for exc in errors[:3]:
        print(f"  error: {exc!r}")
    return not lost and not extra and not errors


# ---------------------------------------------------------------------------------------------
# 2. kills
# ---------------------------------------------------------------------------------------------

CHILD = r"""
import json, random, sys
from langchain_core.documents import Document
from drag_knee_retriever import DragKneeIndex, StoreConfig
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore
cfg = json.loads(sys.argv[1])
store = DragKneeVectorStore(DragKneeIndex(cfg["folder"], store=StoreConfig(collection="writes", engine=cfg["engine"])))
rng = random.Random(cfg["seed"])
mine = list(cfg["stored"])
print("ready", flush=True)
for k in range(10**6):
    if mine and rng.random() < 0.3:
        victim = mine.pop(rng.randrange(len(mine)))
        print("begin delete " + victim, flush=True)
        store.delete([victim])
        print("ack delete " + victim, flush=True)
    else:
        text = cfg["text"].replace("NAME", f"k{cfg['round']}-{k}")
        doc = Document(page_content=text, metadata={"source": cfg["source"]})
        print("begin add " + json.dumps(text), flush=True)
        (new_id,) = store.add_documents([doc])
        mine.append(new_id)
        print("ack add " + new_id, flush=True)
"""


def kills_round(kills: int, folder: str, engine: str, seed: int) -> bool:
    from drag_knee_retriever import DragKneeIndex, StoreConfig
    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    from langchain_core.documents import Document

    rng = random.Random(seed)
    ok = True
    # 50 chunks first (as the attack): the rewrite of a larger tree is a wider window to land in.
    with DragKneeIndex(folder, store=StoreConfig(collection="writes", engine=engine)) as index:
        acked: Set[str] = set(DragKneeVectorStore(index).add_documents(
            [Document(page_content=chunk_text(f"seed-{i}"), metadata={"source": SOURCE}) for i in range(50)]))
    for round_ in range(kills):
        cfg = {"folder": folder, "engine": engine, "seed": seed + round_, "round": round_, "source": SOURCE,
               "text": chunk_text("NAME"), "stored": sorted(acked)}
        child = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            print(f"kill {round_ + 1}: the child did not start: {child.stderr.read()[-1500:] if child.stderr else ''}")
            return False
        time.sleep(rng.uniform(0.2, 2.5))
        os.kill(child.pid, signal.SIGKILL)
        out, _ = child.communicate()
        in_flight = None
        for line in out.splitlines():
            kind, _, rest = line.partition(" ")
            what, _, arg = rest.partition(" ")
            if kind == "begin":
                in_flight = (what, arg)
            elif kind == "ack":
                (acked.add if what == "add" else acked.discard)(arg)
                in_flight = None
        started = time.perf_counter()
        with DragKneeIndex(folder, store=StoreConfig(collection="writes", engine=engine)) as index:
            reopened = time.perf_counter() - started
            have = stored_ids(DragKneeVectorStore(index))
        lost, extra = acked - have, have - acked
        # The call in flight may have landed (an add's chunk is there; a delete's chunk is gone).
        if in_flight and in_flight[0] == "add" and len(extra) == 1:
            acked |= extra
            extra = set()
        if in_flight and in_flight[0] == "delete" and lost == {in_flight[1]}:
            acked -= lost
            lost = set()
        good = not lost and not extra
        ok &= good
        print(f"kill {round_ + 1:2d}: in flight {in_flight[0] if in_flight else 'nothing'}; acknowledged "
              f"{len(acked)}, stored {len(have)}, lost {len(lost)}, unacknowledged extra {len(extra)}; "
              f"reopened in {reopened:.1f} s {'ok' if good else 'MISMATCH'}")
    return ok


# ---------------------------------------------------------------------------------------------
# 3. the cost of one chunk added to a long source
# ---------------------------------------------------------------------------------------------


def add_one_round(pages: int, location: str, engine: str) -> None:
    """Pages 0..pages-1 of the longest FinanceBench filing as LangChain page documents of one
    source, then page ``pages`` alone: seconds of that one-page add (and of the build, for scale)."""
    from langchain_core.documents import Document

    sys.path.append(str(Path(__file__).resolve().parent.parent))  # benchmarks.datasets; the library as installed
    from benchmarks.datasets import load_dataset
    from drag_knee_retriever import DragKneeIndex, StoreConfig
    from drag_knee_retriever.integrations.langchain import DragKneeVectorStore

    repo = Path(__file__).resolve().parent.parent
    os.environ.setdefault("DRAG_KNEE_DATASETS", str(repo.parent / "shared" / "datasets"))
    data = load_dataset("financebench")
    doc_id, units = max(data.units.items(), key=lambda item: len(item[1]))
    if len(units) <= pages:
        raise SystemExit(f"the longest filing has {len(units)} pages; ask for fewer than that")
    docs = [Document(page_content=text, metadata={"source": doc_id, "page": p}) for p, text in enumerate(units[: pages + 1])]
    with DragKneeIndex(location, store=StoreConfig(collection="add_one", engine=engine)) as index:
        store = DragKneeVectorStore(index)
        started = time.perf_counter()
        store.add_documents(docs[:pages])
        built = time.perf_counter() - started
        started = time.perf_counter()
        store.add_documents(docs[pages:])
        one = time.perf_counter() - started
    print(f"add one page: {pages}-page source built in {built:.1f} s; one page added to it in {one:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--ops", type=int, default=100, help="operations per thread")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--engine", default="edge", choices=("edge", "local"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--add-one", type=int, default=0, metavar="PAGES",
                        help="time adding one page to a source of PAGES pages (a FinanceBench filing) instead")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="source_writes_") as tmp:
        if args.add_one:
            add_one_round(args.add_one, str(Path(tmp) / "add_one"), args.engine)
            return
        if args.threads and args.ops:
            ok &= threads_round(args.threads, args.ops, str(Path(tmp) / "threads"), args.engine, args.seed)
        if args.kills:
            ok &= kills_round(args.kills, str(Path(tmp) / "kills"), args.engine, args.seed)
    print("every acknowledged write kept" if ok else "MISMATCH: see above")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
