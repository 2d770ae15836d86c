"""Scene-graph edits, the flip above all."""

from __future__ import annotations

import pytest

from hardneg.core.edits import apply_edit, flip_graph, mirror_word
from hardneg.core.executor import execute
from tests.helpers import graph, index, node, obj

G = graph(
    obj("a", "man", ("left", "tall"), (("to the left of", "b"), ("on the left side of", "c")), box=(10, 20, 50, 100)),
    obj("b", "dog", ("brown",), (("to the right of", "a"),), box=(300, 50, 80, 60)),
    obj("c", "car", ("red",), (), box=(0, 0, 500, 40)),
    width=500,
    height=400,
)


def test_mirror_word_swaps_whole_words_only():
    assert mirror_word("to the left of") == "to the right of"
    assert mirror_word("on the right side of") == "on the left side of"
    assert mirror_word("leftover righteous") == "leftover righteous"


def test_flip_mirrors_boxes_relations_and_attributes():
    f = flip_graph(G)
    assert (f.objects["a"].x, f.objects["a"].y, f.objects["a"].w) == (500 - 10 - 50, 20, 50)
    assert f.objects["c"].x == 0  # a full-width box stays full width
    assert f.objects["a"].attributes == ("right", "tall")
    assert [r.name for r in f.objects["a"].relations] == ["to the right of", "on the right side of"]
    assert [r.name for r in f.objects["b"].relations] == ["to the left of"]
    assert flip_graph(f) == G  # an involution
    assert G.objects["a"].x == 10  # the input is not modified


def test_flip_makes_a_left_right_path_match_nothing():
    path = node("man", rel=[("to the left of", node("dog"))])
    assert execute(path, index(G)) == {"a"}
    assert execute(path, index(apply_edit(G, {"op": "flip"}))) == frozenset()
    by_attr = node("man", "left")
    assert execute(by_attr, index(apply_edit(G, {"op": "flip"}))) == frozenset()


def test_rename_set_attribute_and_swaps():
    assert apply_edit(G, {"op": "rename", "object": "b", "name": "cat"}).objects["b"].name == "cat"
    g = apply_edit(G, {"op": "set_attribute", "object": "b", "from": "brown", "to": "white"})
    assert g.objects["b"].attributes == ("white",)
    g = apply_edit(G, {"op": "swap_names", "objects": ["a", "b"]})
    assert (g.objects["a"].name, g.objects["b"].name) == ("dog", "man")
    g = apply_edit(G, {"op": "swap_attributes", "objects": ["b", "c"], "from": ["brown", "red"]})
    assert (g.objects["b"].attributes, g.objects["c"].attributes) == (("red",), ("brown",))


def test_remove_drops_the_object_and_every_edge_to_it():
    g = apply_edit(G, {"op": "remove", "object": "b"})
    assert "b" not in g.objects
    assert [r.object for r in g.objects["a"].relations] == ["c"]


def test_sequence_applies_in_order():
    seq = {"op": "sequence", "edits": [{"op": "rename", "object": "b", "name": "cat"}, {"op": "flip"}]}
    g = apply_edit(G, seq)
    assert g.objects["b"].name == "cat" and g.objects["b"].x == 500 - 300 - 80


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "rename", "object": "zz", "name": "x"},
        {"op": "set_attribute", "object": "b", "from": "green", "to": "red"},
        {"op": "swap_attributes", "objects": ["b", "c"], "from": ["red", "brown"]},
        {"op": "explode"},
        "flip",
    ],
)
def test_malformed_edits_are_named(bad):
    with pytest.raises(ValueError):
        apply_edit(G, bad)
