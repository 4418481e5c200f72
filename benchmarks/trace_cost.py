"""What sending the walk's trace to tracing tools costs, as a share of a search.

Same index (XQuAD-en, first 12 articles, Qdrant Edge in memory), same pre-encoded questions:
LangChain ``retriever.invoke`` with no callback handler vs with a real ``BaseCallbackHandler``
receiving the ``drag_knee_trace`` custom event; LlamaIndex ``retriever.retrieve`` with no
instrumentation handler vs with a ``BaseEventHandler`` receiving ``DragKneeTraceEvent`` (and a
``LlamaDebugHandler`` on the callback manager). Rounds alternate the two settings, so a change in
machine load hits both; the figure is the median of per-round ratios (with / without).

    nice -n 10 python benchmarks/trace_cost.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from drag_knee_retriever import DragKneeIndex, StoreConfig  # noqa: E402
from benchmarks.datasets import load_dataset  # noqa: E402


def _timed(fn, questions: List[str]) -> float:
    start = time.perf_counter()
    for q in questions:
        fn(q)
    return (time.perf_counter() - start) / len(questions) * 1e3


def main() -> None:
    from langchain_core.callbacks import BaseCallbackHandler
    from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler

    from drag_knee_retriever.integrations.langchain import DragKneeRetriever as LCRetriever
    from drag_knee_retriever.integrations.llamaindex import DragKneeRetriever as LIRetriever

    ds = load_dataset("xquad-en", os.environ.get("DRAG_KNEE_DATASETS") or REPO.parent / "shared/datasets", limit_docs=12)
    index = DragKneeIndex(store=StoreConfig(engine="edge"))
    index.add_documents(ds.documents)
    questions = [q.text for q in ds.questions[:60]]
    # Warm the query encoder's cache-free path and the engine.
    for q in questions[:5]:
        index.search(q)

    class Sink(BaseCallbackHandler):
        def __init__(self) -> None:
            self.events = 0

        def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
            self.events += 1

    class EventSink(BaseEventHandler):
        events: int = 0

        @classmethod
        def class_name(cls) -> str:
            return "EventSink"

        def handle(self, event: Any, **kwargs: Any) -> None:
            self.events += 1

    lc = LCRetriever(index=index)
    sink = Sink()
    li_plain = LIRetriever(index)
    li_traced = LIRetriever(index, callback_manager=CallbackManager([LlamaDebugHandler(print_trace_on_end=False)]))
    event_sink = EventSink()
    root = get_dispatcher()

    ratios = {"langchain": [], "llamaindex": []}
    base = {"langchain": [], "llamaindex": []}
    for _ in range(int(os.environ.get("ROUNDS", "5"))):
        a = _timed(lambda q: lc.invoke(q), questions)
        b = _timed(lambda q: lc.invoke(q, config={"callbacks": [sink]}), questions)
        ratios["langchain"].append(b / a)
        base["langchain"].append(a)
        c = _timed(li_plain.retrieve, questions)
        root.add_event_handler(event_sink)
        try:
            d = _timed(li_traced.retrieve, questions)
        finally:
            root.event_handlers.remove(event_sink)
        ratios["llamaindex"].append(d / c)
        base["llamaindex"].append(c)
    assert sink.events and event_sink.events
    # The load on a shared machine moves whole rounds by +-50%, so also time the emission alone
    # (building the payload and handing it to a handler) against the searches it follows, in CPU
    # time of this process, over the same queries.
    from langchain_core.callbacks import CallbackManager as LCCallbackManager

    from drag_knee_retriever.integrations._common import trace_payload
    from drag_knee_retriever.integrations.llamaindex import DragKneeTraceEvent

    results = []
    search_cpu = 0.0
    for q in questions:
        c = time.process_time()
        results.append(index.search(q))
        search_cpu += time.process_time() - c
    manager = LCCallbackManager.configure([sink]).on_retriever_start(None, "q")
    c = time.process_time()
    for r in results:
        manager.get_child().on_custom_event("drag_knee_trace", trace_payload(r), run_id=manager.run_id)
    lc_emit = time.process_time() - c
    root.add_event_handler(event_sink)
    try:
        c = time.process_time()
        for q, r in zip(questions, results):
            get_dispatcher("drag_knee_retriever.integrations.llamaindex").event(
                DragKneeTraceEvent(query=q, trace=trace_payload(r)))
        li_emit = time.process_time() - c
    finally:
        root.event_handlers.remove(event_sink)
    print(f"emission alone, CPU time: LangChain {lc_emit / search_cpu:.2%} of the searches' CPU time, "
          f"LlamaIndex {li_emit / search_cpu:.2%} ({search_cpu / len(questions) * 1e3:.1f} ms CPU per search)")
    for name in ratios:
        print(f"{name}: search {statistics.median(base[name]):.2f} ms/query without a handler; with the trace sent: "
              f"x{statistics.median(ratios[name]):.3f} (rounds: {', '.join(f'{r:.3f}' for r in ratios[name])})")


if __name__ == "__main__":
    main()
