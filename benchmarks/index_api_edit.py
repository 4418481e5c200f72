"""Issue 40 item 10: LangChain's index() (record manager, incremental cleanup) on a source edited on
one page: the texts encoded by the dense model and the seconds, first run and edit run.

    PYTHONPATH=. python benchmarks/index_api_edit.py 300

Synthetic pages (no dataset), the default offline model, an in-memory index. index()'s default
batch_size=100 splits the source over batches: its cleanup after the first batch removes the pages
the later batches add back.
"""
import time, sys
from langchain_core.documents import Document
from langchain_core.indexing import index, InMemoryRecordManager
from drag_knee_retriever.integrations.langchain import DragKneeVectorStore
from drag_knee_retriever import DragKneeIndex
N = int(sys.argv[1]) if len(sys.argv) > 1 else 40
idx = DragKneeIndex(":memory:")
enc = idx.encoder
count = {"n": 0}
orig = enc.encode_dense
def counted(texts, *a, **k):
    count["n"] += len(texts); return orig(texts, *a, **k)
enc.encode_dense = counted
store = DragKneeVectorStore(idx)
rm = InMemoryRecordManager("ns"); rm.create_schema()
words = "coral reef bleach ocean heat algae polyp marine current tide mangrove storm".split()
def page(i, v=0):
    return Document(page_content=f"Page {i} v{v}. " + " ".join(words[(i*j+v) % len(words)] for j in range(120)), metadata={"source": "report.pdf", "page": i})
docs = [page(i) for i in range(N)]
t = time.perf_counter(); print(index(docs, rm, store, cleanup="incremental", source_id_key="source")); print("first", count, time.perf_counter()-t)
count["n"] = 0
docs2 = list(docs); docs2[5] = page(5, 1)
t = time.perf_counter(); print(index(docs2, rm, store, cleanup="incremental", source_id_key="source")); print("edit", count, time.perf_counter()-t)
