"""The walks over a path that run once per candidate, positive or negative leave no reference cycles behind:
the runner runs units with the cyclic collector asleep (`core/runner/cycles.py`), so a cycle made per item
piles up until the unit ends (select made 4.3 million such objects in one GQA-sized unit)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hardneg.core.certify import context_objects
from hardneg.core.executor import GraphIndex
from hardneg.core.records import PathEdge, PathNode, Relation, SameEdge, SceneGraph, SceneObject, triples
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.generators.paths.select import swappable
from hardneg.generators.text.types import map_node

TABLE = AttributeTable.load(None)
PATH = PathNode(
    "cup", ("red",), (PathEdge("on", PathNode("table", ("wooden",), id="2")),),
    (SameEdge("color", PathNode("plate", ("white",), id="3")),), id="1",
)  # fmt: skip
GRAPH = SceneGraph("g", 200, 100, {
    "1": SceneObject("1", "cup", 10, 10, 20, 20, ("red",), (Relation("on", "2"),)),
    "2": SceneObject("2", "table", 0, 30, 200, 70, ("wooden",)),
    "3": SceneObject("3", "plate", 100, 10, 30, 10, ("white",)),
})  # fmt: skip


WALKS: dict[str, Callable[[], Any]] = {
    "select's swappable": lambda: swappable(PATH.to_json(), TABLE),
    "a positive's triples": lambda: triples(PATH),
    "TRICD's context objects": lambda: context_objects(PATH, GraphIndex(GRAPH, TABLE), "1"),
    "a negative's map_node": lambda: map_node(PATH, 1, lambda n: n),
}


@pytest.fixture
def saved_garbage() -> Iterator[list[Any]]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("walk", list(WALKS))
def test_a_walk_over_a_path_leaves_no_cycle(walk: str, saved_garbage: list[Any]):
    assert WALKS[walk]()  # it does its work
    gc.collect()
    assert saved_garbage == []
