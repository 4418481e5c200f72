"""The light nodes a walk reads (point_schema.light_node), built without the dataclass's __init__."""

from __future__ import annotations

from dataclasses import fields

import pytest

from drag_knee_retriever.errors import IndexDamagedError
from drag_knee_retriever.model._nodes import Span, TreeNode
from drag_knee_retriever.model._point_schema import WALK_FIELDS, light_node, node_payload

ROOT = "0b4b6f7e-2c1a-4a55-9b8e-3f1d2c3b4a59"
LEAF = "5d0c9d9e-8f7a-4b6c-9d1e-2f3a4b5c6d7e"


def _nodes():
    span = Span(3, 3, 2, 2, 1, 2)
    leaf = TreeNode(id=LEAF, doc_id="report.pdf", level=2, is_leaf=True, span=span, text="the passage",
                    parent_id=ROOT, keywords=("k",), title="Title", path="r.1.3", metadata={"year": 2022},
                    doc_hash="h1", description="d", context="ctx", statement="balance")
    root = TreeNode(id=ROOT, doc_id="report.pdf", level=0, is_leaf=False, span=Span(0, 9, 1, 5), text="summary",
                    child_ids=(LEAF,), doc_hash="h1")
    return [leaf, root]


@pytest.mark.parametrize("node", _nodes(), ids=["leaf", "root"])
def test_a_light_node_equals_the_dataclass_built_one_with_the_walk_fields(node):
    payload = {k: v for k, v in node_payload(node).items() if k in WALK_FIELDS}
    light = light_node(node.id, payload)
    expected = TreeNode(id=node.id, doc_id=node.doc_id, level=node.level, is_leaf=node.is_leaf,
                        span=Span(node.span.first_leaf, node.span.last_leaf, node.span.first_page, node.span.last_page),
                        text="", parent_id=node.parent_id, child_ids=node.child_ids, doc_hash=node.doc_hash,
                        statement=node.statement)
    assert light == expected and hash(light.span) == hash(expected.span)
    # Every field of both dataclasses is set (a field added to TreeNode or Span must be added there too).
    assert set(vars(light)) == {f.name for f in fields(TreeNode)}
    assert set(vars(light.span)) == {f.name for f in fields(Span)}
    assert light.metadata == {} and light.metadata is not light_node(node.id, payload).metadata
    with pytest.raises(AttributeError):  # still frozen
        light.level = 5  # type: ignore[misc]


def test_a_payload_without_a_walk_field_says_the_index_is_damaged():
    payload = {k: v for k, v in node_payload(_nodes()[0]).items() if k in WALK_FIELDS and k != "doc_id"}
    with pytest.raises(IndexDamagedError, match="has no 'doc_id'"):
        light_node(LEAF, payload)
