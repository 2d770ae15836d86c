"""The path executor against the path form's matching rule, case by case."""

from __future__ import annotations

import pytest

from hardneg.core.executor import execute, matches_exactly
from hardneg.core.records import PathNode
from tests.helpers import graph, index, node, obj

# A kitchen: two plates (white, blue), two cups, rice, a table; edges stored as GQA stores them.
KITCHEN = graph(
    obj("p1", "plate", ("white", "round"), (("to the left of", "p2"), ("on", "t"))),
    obj("p2", "plate", ("blue", "round", "large"), (("to the right of", "p1"), ("on", "t"))),
    obj("c1", "cup", ("white",), (("on", "p2"), ("next to", "c2"))),
    obj("c2", "cup", ("red", "white", "ceramic"), (("next to", "c1"),)),
    obj("r", "rice", ("white",), (("on", "p1"),)),
    obj("t", "table", ("wooden", "brown"), (("under", "p1"), ("under", "p2"))),
)


@pytest.fixture(scope="module")
def kitchen():
    return index(KITCHEN)


def test_name_only_matches_every_object_of_that_name(kitchen):
    assert execute(node("plate"), kitchen) == {"p1", "p2"}
    assert execute(node("table"), kitchen) == {"t"}


def test_unknown_name_matches_nothing(kitchen):
    assert execute(node("giraffe"), kitchen) == frozenset()


def test_attributes_are_a_subset_test(kitchen):
    assert execute(node("plate", "round"), kitchen) == {"p1", "p2"}
    assert execute(node("plate", "white"), kitchen) == {"p1"}
    assert execute(node("plate", "white", "large"), kitchen) == frozenset()


def test_multi_valued_attributes_match_each_value(kitchen):
    # c2 is both red and white: either color, or both, picks it out among the cups.
    assert execute(node("cup", "red"), kitchen) == {"c2"}
    assert execute(node("cup", "white"), kitchen) == {"c1", "c2"}
    assert execute(node("cup", "red", "white"), kitchen) == {"c2"}


def test_relation_child_needs_an_edge_to_a_matching_object(kitchen):
    assert execute(node("plate", rel=[("to the left of", node("plate"))]), kitchen) == {"p1"}
    assert execute(node("cup", rel=[("on", node("plate"))]), kitchen) == {"c1"}
    # Direction matters: the edge is stored on the subject.
    assert execute(node("plate", rel=[("on", node("cup"))]), kitchen) == frozenset()


def test_relation_child_attributes_narrow_the_child(kitchen):
    assert execute(node("cup", rel=[("on", node("plate", "blue"))]), kitchen) == {"c1"}
    assert execute(node("cup", rel=[("on", node("plate", "white"))]), kitchen) == frozenset()


def test_two_relation_children_must_both_hold(kitchen):
    both = node("plate", rel=[("on", node("table")), ("to the right of", node("plate"))])
    assert execute(both, kitchen) == {"p2"}
    never = node("plate", rel=[("on", node("table")), ("to the right of", node("cup"))])
    assert execute(never, kitchen) == frozenset()


def test_two_hop_chain(kitchen):
    # the rice on the plate that is to the left of the plate
    path = node("rice", rel=[("on", node("plate", rel=[("to the left of", node("plate"))]))])
    assert execute(path, kitchen) == {"r"}
    wrong = node("rice", rel=[("on", node("plate", rel=[("to the right of", node("plate"))]))])
    assert execute(wrong, kitchen) == frozenset()


def test_same_attribute_category(kitchen):
    # p1 is white like the rice; p2 is blue: only p1 has the same color as the rice.
    path = node("plate", same=[("color", node("rice"))])
    assert execute(path, kitchen) == {"p1"}


def test_same_uses_intersection_of_multi_valued_attributes(kitchen):
    # c2 is red and white, c1 white: they share white, so each has the same color as the other.
    assert execute(node("cup", same=[("color", node("cup"))]), kitchen) == {"c1", "c2"}
    # the red cup's color intersects the rice's (white): it counts.
    assert execute(node("cup", "red", same=[("color", node("rice"))]), kitchen) == {"c2"}


def test_same_excludes_the_object_itself(kitchen):
    # The table is the only brown/wooden thing: it cannot share a material with itself.
    assert execute(node("table", same=[("material", node("table"))]), kitchen) == frozenset()


def test_same_needs_both_sides_non_empty_in_the_category(kitchen):
    # No plate has a material; the table has one. Empty never intersects.
    assert execute(node("plate", same=[("material", node("table"))]), kitchen) == frozenset()


def test_same_with_unknown_category_matches_nothing(kitchen):
    assert execute(node("plate", same=[("flavour", node("rice"))]), kitchen) == frozenset()


def test_same_attr_two_hop(kitchen):
    # the cup with the same color as the rice that is on the plate
    path = node("cup", "red", same=[("color", node("rice", rel=[("on", node("plate"))]))])
    assert execute(path, kitchen) == {"c2"}
    path_none = node("cup", same=[("color", node("rice", rel=[("on", node("table"))]))])
    assert execute(path_none, kitchen) == frozenset()


def test_ids_on_path_nodes_do_not_constrain_matching(kitchen):
    # `id` names the grounded object; matching is by content only.
    assert execute(node("plate", "white", oid="p2"), kitchen) == {"p1"}


def test_matches_exactly(kitchen):
    assert matches_exactly(node("plate", "white"), kitchen, "p1")
    assert not matches_exactly(node("plate"), kitchen, "p1")
    assert not matches_exactly(node("plate", "blue"), kitchen, "p1")


def test_dangling_edges_are_ignored():
    g = graph(obj("a", "ball", rels=(("next to", "ghost"),)), obj("b", "box"))
    assert execute(node("ball", rel=[("next to", node("box"))]), index(g)) == frozenset()


def test_path_json_round_trip_is_exactly_the_spec_form():
    path = node(
        "plate",
        "white",
        oid="681267",
        rel=[("to the left of", node("cup", oid="681262"))],
        same=[("color", node("rice"))],
    )
    assert path.to_json() == {
        "name": "plate",
        "attributes": ["white"],
        "id": "681267",
        "relations": [
            {
                "name": "to the left of",
                "object": {"name": "cup", "attributes": [], "id": "681262", "relations": [], "same": []},
            }
        ],
        "same": [{"category": "color", "object": {"name": "rice", "attributes": [], "relations": [], "same": []}}],
    }
    assert PathNode.from_json(path.to_json()) == path


@pytest.mark.parametrize(
    "bad", [{"attributes": []}, {"name": 3}, {"name": "a", "attributes": "red"}, {"name": "a", "id": 5}]
)
def test_path_json_rejects_malformed_nodes(bad):
    with pytest.raises(ValueError):
        PathNode.from_json(bad)


def test_executor_agrees_with_brute_force_on_random_graphs():
    """Property check: a direct re-implementation of the matching rule on random graphs and paths."""
    import random

    from hardneg.core.geometry import relation_holds
    from hardneg.core.words.attribute_table import AttributeTable

    table = AttributeTable.load()
    names, attrs = ["a", "b", "c"], ["red", "blue", "small", "large", "wooden"]
    rels = ["on", "near", "to the left of", "above"]

    def holds(o, rel: str, y: str, g) -> bool:
        stored = any(r.name == rel and r.object == y for r in o.relations)
        return stored or (y != o.id and relation_holds(rel, o.box, g.objects[y].box) is True)

    def brute(n: PathNode, g) -> set[str]:
        out = set()
        for oid, o in g.objects.items():
            if o.name != n.name or not set(n.attributes) <= set(o.attributes):
                continue
            ok = all(any(holds(o, e.name, y, g) for y in brute(e.object, g)) for e in n.relations)
            for s in n.same:
                mine = {a for a in o.attributes if table.category(a) == s.category}
                ok = ok and any(
                    y != oid and mine & {a for a in g.objects[y].attributes if table.category(a) == s.category}
                    for y in brute(s.object, g)
                )
            if ok:
                out.add(oid)
        return out

    def rand_node(rng, depth):
        rel = [(rng.choice(rels), rand_node(rng, depth - 1))] if depth and rng.random() < 0.5 else []
        same = (
            [(rng.choice(["color", "size", "material"]), rand_node(rng, depth - 1))]
            if depth and rng.random() < 0.3
            else []
        )
        return node(rng.choice(names), *rng.sample(attrs, rng.randrange(2)), rel=rel, same=same)

    rng = random.Random(7)
    checked = nonempty = 0
    for _ in range(60):
        ids = [str(i) for i in range(rng.randrange(3, 9))]
        objs = [
            obj(
                i,
                rng.choice(names),
                tuple(rng.sample(attrs, rng.randrange(3))),
                tuple((rng.choice(rels), rng.choice(ids)) for _ in range(rng.randrange(3))),
                box=(rng.randrange(400), rng.randrange(300), rng.randrange(10, 90), rng.randrange(10, 90)),
            )
            for i in ids
        ]
        g = graph(*objs)
        idx = index(g)
        for _ in range(30):
            p = rand_node(rng, 2)
            got = execute(p, idx)
            assert got == brute(p, g), p
            checked += 1
            nonempty += bool(got)
    assert checked == 1800 and nonempty > 200  # the property was exercised on non-trivial results


# -------------------------------------------------------------------------------------- geometry


def test_boxes_decide_left_right_even_without_a_stored_edge():
    """A forest: the graph relates one tree to the road; the boxes put another tree right of it."""
    g = graph(
        obj("t1", "tree", rels=(("to the left of", "r"),), box=(10, 50, 60, 200)),
        obj("t2", "tree", box=(400, 40, 60, 200)),
        obj("r", "road", box=(150, 200, 150, 100)),
    )
    right = node("tree", rel=[("to the right of", node("road"))])
    assert execute(right, index(g)) == {"t2"}  # a negative claiming it is true of t2: refused
    from hardneg.core.executor import GraphIndex
    from hardneg.core.words.attribute_table import AttributeTable

    assert execute(right, GraphIndex(g, AttributeTable.load(), geometry=False)) == frozenset()


def test_a_positive_is_unique_only_when_no_other_box_fits_its_relation():
    g = graph(
        obj("m1", "man", rels=(("to the left of", "c"),), box=(10, 100, 50, 150)),
        obj("m2", "man", box=(80, 100, 50, 150)),  # also left of the car, no edge stored
        obj("c", "car", box=(300, 150, 150, 100)),
    )
    assert not matches_exactly(node("man", rel=[("to the left of", node("car"))]), index(g), "m1")


def test_the_margin_keeps_stacked_boxes_from_reading_as_left_or_right():
    from hardneg.core.geometry import MARGIN, holds

    cup, plate = (100, 50, 40, 40), (95, 90, 60, 20)  # centres 120 and 125: 5 px apart, margin 4 px
    assert MARGIN == 0.1
    assert holds("left", cup, plate) and not holds("right", cup, plate)
    assert holds("above", cup, plate) and holds("below", plate, cup)
    stacked = (100, 50, 40, 40), (98, 90, 44, 20)  # centres 120 and 120
    assert not holds("left", *stacked) and not holds("right", *stacked)


def test_boxes_decide_every_spelling_of_a_direction():
    """VG and GQA write "to left of", "on left side of", "underneath of" beside "to the left of": the box rule
    (uniqueness, negatives, hygiene) reads them all; it only knew one spelling of each."""
    from hardneg.core.geometry import contradicted, relation_holds

    a, b = (0, 0, 10, 10), (100, 0, 10, 10)
    for r in ("to left of", "to the left of", "on left of", "on left side of", "left of"):
        assert relation_holds(r, a, b) is True and contradicted(r, b, a), r
    assert relation_holds("underneath of", (0, 100, 10, 10), (0, 0, 10, 10)) is True
    assert relation_holds("near", a, b) is None and not contradicted("near", a, b)
