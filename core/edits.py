"""Scene-graph edits: what a negative image changed, as a change to the graph.

An image negative records its `edit`, so the claim "the original path matches nothing in the edited
image" can be re-checked on `apply_edit(graph, edit)`. The edited graph describes the *pixels*: what is
pasted brings its looks and whatever its crop holds. Forms (the path form's edits, plus `remove`, which
the copy-paste backend needs when no donor object exists):

    {"op": "flip"}                                  mirror boxes; left<->right in relations and attributes
    {"op": "rename", "object": ID, "name": NEW,     a new object painted in the old one's box
     "attributes": [...], "adds": [...]}
    {"op": "set_attribute", "object": ID, "from": OLD, "to": NEW}
    {"op": "swap_names", "objects": [ID1, ID2],     each object's crop pasted into the other's box
     "attributes": [[...], [...]], "adds": [...]}
    {"op": "swap_attributes", "objects": [ID1, ID2], "from": [A1, A2]}
    {"op": "remove", "object": ID}                  the object and its edges are gone
    {"op": "sequence", "edits": [...]}

`attributes`, when present, is the object's whole attribute list after the edit (for a swap, one list per
object): a pasted crop shows its own colour, material and pattern, so those move with it, while what the
box decides (size, position) stays (`looks`). `adds` lists objects the pasted crops carry along, each
`{"id", "name", "attributes", "box"}` with its box in the edited image: a caravan crop may hold a bicycle,
and a rider's crop holds part of his bike. Edits recorded without them mean names only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hardneg.core.records import Relation, SceneGraph, SceneObject

# Attribute categories a box decides, not the crop painted in it: "the large car" pasted into a small
# box is small.
BOX_BOUND = frozenset({"size", "position"})

_LR = re.compile(r"\b(left|right)\b")


def mirror_word(text: str) -> str:
    """left <-> right as whole words ("to the left of" -> "to the right of")."""
    return _LR.sub(lambda m: "right" if m.group(1) == "left" else "left", text)


def has_left_right(text: str) -> bool:
    return _LR.search(text) is not None


def flip_graph(graph: SceneGraph) -> SceneGraph:
    objects = {
        oid: replace(
            o,
            x=graph.width - o.x - o.w,
            attributes=tuple(mirror_word(a) for a in o.attributes),
            relations=tuple(Relation(mirror_word(r.name), r.object) for r in o.relations),
        )
        for oid, o in graph.objects.items()
    }
    return replace(graph, objects=objects)


def _obj(graph: SceneGraph, oid: Any) -> SceneObject:
    if not isinstance(oid, str) or oid not in graph.objects:
        raise ValueError(f"edit names object {oid!r}, which is not in image {graph.image_id}")
    return graph.objects[oid]


def _with(graph: SceneGraph, *objs: SceneObject) -> SceneGraph:
    objects = dict(graph.objects)
    for o in objs:
        objects[o.id] = o
    return replace(graph, objects=objects)


def looks(attributes: tuple[str, ...] | list[str], category: Callable[[str], str | None]) -> tuple[str, ...]:
    """The attributes a pasted crop carries with it: all but those its box decides (size, position)."""
    return tuple(a for a in attributes if category(a) not in BOX_BOUND)


def _attributes(value: Any, old: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return old
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise ValueError(f"edit attributes must be a list of words, got {value!r}")
    return tuple(dict.fromkeys(value))


def _added(graph: SceneGraph, edit: dict[str, Any]) -> SceneGraph:
    """`graph` with the objects the pasted crops carried along."""
    adds = edit.get("adds") or []
    if not isinstance(adds, list):
        raise ValueError(f"edit adds must be a list, got {adds!r}")
    objects = dict(graph.objects)
    for a in adds:
        try:
            oid, name, box = str(a["id"]), str(a["name"]), [int(v) for v in a["box"]]
            attrs = _attributes(a.get("attributes") or [], ())
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"edit adds a malformed object {a!r}") from e
        if oid in objects or len(box) != 4:
            raise ValueError(f"edit adds object {oid!r}: its id is taken or its box {box} is not xywh")
        objects[oid] = SceneObject(oid, name, *box, attributes=attrs)
    return replace(graph, objects=objects)


def apply_edit(graph: SceneGraph, edit: dict[str, Any]) -> SceneGraph:
    """The graph of the edited image. Raises ValueError naming a malformed edit."""
    op = edit.get("op") if isinstance(edit, dict) else None
    if op == "flip":
        return flip_graph(graph)
    if op == "rename":
        o = _obj(graph, edit.get("object"))
        attrs = _attributes(edit.get("attributes"), o.attributes)
        return _added(_with(graph, replace(o, name=str(edit["name"]), attributes=attrs)), edit)
    if op == "set_attribute":
        o = _obj(graph, edit.get("object"))
        old, new = edit.get("from"), edit.get("to")
        if old not in o.attributes:
            raise ValueError(f"set_attribute: object {o.id} has no attribute {old!r}")
        attrs = tuple(dict.fromkeys(new if a == old else a for a in o.attributes))
        return _with(graph, replace(o, attributes=attrs))
    if op == "swap_names":
        a, b = (_obj(graph, i) for i in edit.get("objects", [None, None]))
        lists = edit.get("attributes") or [None, None]
        if not isinstance(lists, list) or len(lists) != 2:
            raise ValueError(f"swap_names: attributes must be two lists, got {lists!r}")
        a2 = replace(a, name=b.name, attributes=_attributes(lists[0], a.attributes))
        b2 = replace(b, name=a.name, attributes=_attributes(lists[1], b.attributes))
        return _added(_with(graph, a2, b2), edit)
    if op == "swap_attributes":
        a, b = (_obj(graph, i) for i in edit.get("objects", [None, None]))
        x, y = edit.get("from", [None, None])
        if x not in a.attributes or y not in b.attributes:
            raise ValueError(f"swap_attributes: {a.id} lacks {x!r} or {b.id} lacks {y!r}")
        a2 = replace(a, attributes=tuple(dict.fromkeys(y if t == x else t for t in a.attributes)))
        b2 = replace(b, attributes=tuple(dict.fromkeys(x if t == y else t for t in b.attributes)))
        return _with(graph, a2, b2)
    if op == "remove":
        gone = _obj(graph, edit.get("object")).id
        objects = {
            oid: replace(o, relations=tuple(r for r in o.relations if r.object != gone))
            for oid, o in graph.objects.items()
            if oid != gone
        }
        return replace(graph, objects=objects)
    if op == "sequence":
        for e in edit.get("edits", []):
            graph = apply_edit(graph, e)
        return graph
    raise ValueError(f"unknown edit {edit!r}")
