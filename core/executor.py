"""The path executor: the single source of truth for "unique" and "matches nothing".

Implements the matching rule of the path form. A node matches object X when X's name equals the
node's name, the node's attributes are a subset of X's, every relation child is satisfied by some edge
`X -name-> Y` with Y matching the child, and every `same` child by some Y != X matching the child whose
attributes of that category intersect X's (both non-empty). The result of a path is the set of objects its
root matches.

For relations boxes can decide (left/right, above/below: `core/geometry.py`), the edge `X -name-> Y`
also holds when the boxes say so, stored or not: graphs store such edges for some pairs only, so without
this a negative could be true of an unrelated pair and a "unique" positive could fit another object.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hardneg.core.geometry import direction, holds
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.words.attribute_table import AttributeTable


class CategoryAttributes(dict[str, dict[str, frozenset[str]]]):
    """Object id -> its attributes by category, worked out for an object the first time it is asked: only
    `same` edges ask, and most graphs an export reads to certify a candidate never do."""

    __slots__ = ("graph", "table")

    def __init__(self, graph: SceneGraph, table: AttributeTable) -> None:
        super().__init__()
        self.graph, self.table = graph, table

    def __missing__(self, oid: str) -> dict[str, frozenset[str]]:
        cats: dict[str, set[str]] = defaultdict(set)
        for a in self.graph.objects[oid].attributes:
            if (c := self.table.category(a)) is not None:
                cats[c].add(a)
        got = self[oid] = {c: frozenset(v) for c, v in cats.items()}
        return got


class GraphIndex:
    """Per-image indexes built once and shared by every path executed against the image.

    Objects are indexed by name (a node only ever looks at objects of its own name), attributes are
    frozensets, out-edges are grouped by relation name, and each object's attributes are grouped by
    category for `same` edges.
    """

    __slots__ = ("_out", "attrs", "boxes", "by_name", "cat_attrs", "geometry", "graph", "memo", "table")

    def __init__(self, graph: SceneGraph, table: AttributeTable, geometry: bool = True) -> None:
        self.graph = graph
        self.table = table
        self.geometry = geometry  # False only to see what the stored edges alone say (tests, diagnostics)
        self.memo: dict[Any, Any] = {}  # what callers work out once per graph (`Certifier.candidates`)
        self.boxes = {oid: obj.box for oid, obj in graph.objects.items()}
        by_name: dict[str, list[str]] = defaultdict(list)
        attrs: dict[str, frozenset[str]] = {}
        for oid, obj in graph.objects.items():
            by_name[obj.name].append(oid)
            attrs[oid] = frozenset(obj.attributes)
        self.by_name = {k: tuple(v) for k, v in by_name.items()}
        self.attrs = attrs
        self._out: dict[str, dict[str, set[str]]] | None = None
        self.cat_attrs = CategoryAttributes(graph, table)

    @property
    def out(self) -> dict[str, dict[str, set[str]]]:
        """Object id -> relation -> the objects its stored edges of that relation point to; built the first
        time a relation is asked (an export certifies most candidate graphs on names and attributes alone)."""
        if self._out is None:
            out: dict[str, dict[str, set[str]]] = {oid: {} for oid in self.graph.objects}
            for oid, obj in self.graph.objects.items():
                for rel in obj.relations:
                    if rel.object in out:  # the loader drops dangling edges; tolerate hand-built graphs too
                        out[oid].setdefault(rel.name, set()).add(rel.object)
            self._out = out
        return self._out

    def name_count(self, name: str) -> int:
        return len(self.by_name.get(name, ()))

    def related(self, oid: str, relation: str, others: frozenset[str] | set[str]) -> bool:
        """Whether `oid relation Y` holds for some Y in `others`: a stored edge, or the boxes."""
        if not others.isdisjoint(self.out[oid].get(relation, ())):
            return True
        d = direction(relation) if self.geometry else None
        if d is None:
            return False
        box = self.boxes[oid]
        return any(y != oid and holds(d, box, self.boxes[y]) for y in others)


def execute(path: PathNode, index: GraphIndex) -> frozenset[str]:
    """Return the ids of every object the path's root matches."""
    return frozenset(_match(path, index))


def matches_exactly(path: PathNode, index: GraphIndex, target: str) -> bool:
    result = _match(path, index)
    return len(result) == 1 and target in result


def _match(node: PathNode, index: GraphIndex) -> set[str]:
    candidates = index.by_name.get(node.name)
    if not candidates:
        return set()
    if node.attributes:
        need = frozenset(node.attributes)
        attrs = index.attrs
        matched = [oid for oid in candidates if need <= attrs[oid]]
    else:
        matched = list(candidates)
    # Cheapest filters first: each relation child narrows by edge lookups.
    for edge in node.relations:
        if not matched:
            return set()
        child = _match(edge.object, index)
        if not child:
            return set()
        matched = [oid for oid in matched if index.related(oid, edge.name, child)]
    for same in node.same:
        if not matched:
            return set()
        child = _match(same.object, index)
        if not child:
            return set()
        cat_attrs = index.cat_attrs
        cat = same.category
        kept = []
        for oid in matched:
            mine = cat_attrs[oid].get(cat)
            if not mine:
                continue
            for other in child:
                if other == oid:
                    continue
                theirs = cat_attrs[other].get(cat)
                if theirs and not mine.isdisjoint(theirs):
                    kept.append(oid)
                    break
        matched = kept
    return set(matched)
