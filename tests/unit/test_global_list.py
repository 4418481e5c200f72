"""The focus step's global list (search/_global_list.py): which documents' leaves count, asked of the
engine or checked on the hits."""

from drag_knee_retriever import FocusConfig, SearchConfig
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.search._global_list import global_list
from drag_knee_retriever.store.base import RankedHit
from drag_knee_retriever.store.filters import any_of, parse_filters


def _hit(doc_id, level=1):
    node = TreeNode(id=f"{doc_id}-{level}", doc_id=doc_id, level=level, is_leaf=level > 0, span=Span(0, 0), text="")
    return RankedHit(node=node, score=1.0)


ROOTS = [_hit("a", 0), _hit("b", 0)]


def test_every_root_and_no_filter_checks_the_documents_on_the_hits():
    glob = global_list(SearchConfig(), (), ROOTS, every=True)
    assert glob.filters == () and glob.docs == {"a", "b"}
    # A leaf of a tree the roots ranking cannot see (its root copy missing after a cut write) stays out.
    assert [h.node.doc_id for h in glob.admit([_hit("a"), _hit("orphan"), _hit("b")])] == ["a", "b"]


def test_otherwise_the_engine_is_asked_for_the_documents():
    user = parse_filters({"year": 2022})
    for filters, every in ((user, True), ((), False), (user, False)):
        glob = global_list(SearchConfig(), filters, ROOTS, every=every)
        assert glob.docs is None and glob.filters == tuple(filters) + (any_of("doc_id", ["a", "b"]),)
        assert len(glob.admit([_hit("a"), _hit("orphan")])) == 2  # the engine already held them out


def test_the_collection_scope_is_the_users_filter_alone():
    config = SearchConfig(focus=FocusConfig(global_scope="collection"))
    glob = global_list(config, (), ROOTS, every=True)
    assert glob.filters == () and glob.docs is None
