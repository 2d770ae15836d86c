"""GQA's spatial layer put back from the boxes: graphs without left/right edges (Visual Genome's raw graphs, a
corpus reduced to a few relations) get the edges GQA stores between objects side by side, and nothing else."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.core.config import load_config
from hardneg.core.geometry import side_by_side
from hardneg.core.gqa import hygiene
from hardneg.core.gqa.hygiene import MAX_SIDE, clean
from hardneg.core.records import Relation
from hardneg.core.words.table import Words
from hardneg.exports.stats import build_stats, markdown
from hardneg.generators.paths.stage import PathResources, generate_positives
from tests.helpers import graph, obj

WORDS = Words.load()


def _table() -> tuple:
    """A dining table seen from the side, 500 px wide: a cup, a plate and a bottle in a row, a lamp far to the
    right, a painting on the wall above the plate."""
    return (
        obj("c", "cup", ("white",), box=(60, 200, 50, 60)),
        obj("p", "plate", box=(115, 210, 80, 40)),
        obj("b", "bottle", ("green",), box=(200, 150, 30, 110)),
        obj("l", "lamp", box=(440, 190, 40, 80)),
        obj("w", "painting", box=(100, 20, 120, 90)),
    )


def _edges(g) -> set[tuple[str, str, str]]:
    return {(oid, r.name, r.object) for oid, o in g.objects.items() for r in o.relations}


def test_objects_side_by_side_get_gqa_left_right_edges_both_ways_and_nothing_else():
    cleaned, changes = clean(graph(*_table()), WORDS, 0.7, True)
    assert _edges(cleaned) == {
        ("c", "to the left of", "p"), ("p", "to the right of", "c"),
        ("c", "to the left of", "b"), ("b", "to the right of", "c"),
        ("p", "to the left of", "b"), ("b", "to the right of", "p"),
    }  # fmt: skip  # not the lamp (a fifth of the width away and more), not the painting (above, not beside)
    assert Counter(c.kind for c in changes) == {"added_side_by_side": 3}


def test_a_pair_the_graph_relates_left_or_right_keeps_its_own_edge_and_the_layer_can_be_switched_off():
    cup, plate, *rest = _table()
    stored = obj("c", "cup", ("white",), rels=(("on the left of", "p"),), box=cup.box)
    cleaned, _ = clean(graph(stored, plate, *rest), WORDS, 0.7, True)
    assert [r for r in cleaned.objects["c"].relations if r.object == "p"] == [Relation("on the left of", "p")]
    assert not [r for r in cleaned.objects["p"].relations if r.object == "c"]  # the graph's own choice stands
    assert ("c", "to the left of", "b") in _edges(cleaned)
    off, changes = clean(graph(*_table()), WORDS, 0.7, True, spatial_from_boxes=False)
    assert _edges(off) == set() and changes == []
    assert load_config(None).hygiene.spatial_from_boxes  # on by default


def test_boxes_side_by_side_by_the_three_bounds():
    w = 500
    assert side_by_side((0, 0, 50, 50), (60, 0, 50, 50), w) == "left"
    assert side_by_side((60, 0, 50, 50), (0, 0, 50, 50), w) == "right"
    assert side_by_side((0, 0, 50, 50), (35, 0, 50, 50), w) == "left"  # 15 px shared across: 30% of 50
    assert side_by_side((0, 0, 50, 50), (34, 0, 50, 50), w) is None  # 16 px: more than 30%
    assert side_by_side((0, 0, 50, 50), (150, 0, 50, 50), w) == "left"  # 100 px between: a fifth of 500
    assert side_by_side((0, 0, 50, 50), (151, 0, 50, 50), w) is None
    assert side_by_side((0, 0, 50, 50), (60, 20, 50, 50), w) == "left"  # 30 of 50 px of height shared: 60%
    assert side_by_side((0, 0, 50, 50), (60, 21, 50, 50), w) is None
    assert side_by_side((0, 0, 0, 50), (60, 0, 50, 50), w) is None  # an empty box stands nowhere


box = st.tuples(st.integers(0, 600), st.integers(0, 400), st.integers(0, 300), st.integers(0, 300))


@settings(max_examples=150, deadline=None)
@given(st.lists(box, min_size=2, max_size=25), st.integers(1, 800))
def test_the_pairs_found_all_at_once_are_the_pairs_the_single_rule_relates(boxes, width):
    g = graph(*(obj(str(k), "thing", box=b) for k, b in enumerate(boxes)), width=width)
    ids = list(g.objects)
    found = set(hygiene._side_by_side_pairs(g, ids))
    assert found == {
        (i, j)
        for i in range(len(ids))
        for j in range(i + 1, len(ids))
        if side_by_side(g.objects[ids[i]].box, g.objects[ids[j]].box, width) is not None
    }


def test_a_thousand_boxes_in_a_row_gain_a_bounded_number_of_edges_nearest_first():
    g = graph(*(obj(str(k), "window", box=(k * 3, 10, 3, 50)) for k in range(1000)), width=3000)
    cleaned, changes = clean(g, WORDS, 0.7, True)
    per_object = [len(o.relations) for o in cleaned.objects.values()]
    assert max(per_object) == MAX_SIDE and len(changes) <= MAX_SIDE * 1000 // 2
    assert {r.object for r in cleaned.objects["500"].relations} == {str(k) for k in range(492, 509)} - {"500"}


def test_a_graph_without_spatial_edges_gives_left_right_positives():
    """Visual Genome's raw graphs and corpora reduced to a few relations store no left/right edge: with the
    layer put back, positives name where things stand, as GQA's do (and relations can then be replaced)."""
    cfg = load_config(None, {"paths": {"max_per_image": 100}})
    res = PathResources.load(cfg)
    texts = [p.expression for p in generate_positives(clean(graph(*_table()), WORDS, 0.7, True)[0], cfg, res)[0]]
    assert any("to the left of" in t or "to the right of" in t for t in texts), texts
    bare = [p.expression for p in generate_positives(graph(*_table()), cfg, res)[0]]
    assert not any("left" in t or "right" in t for t in bare)


def test_stats_md_says_what_hygiene_changed_in_the_graphs():
    stats = build_stats(Counter(), Counter(), Counter(), {})
    stats["hygiene"] = {"added_side_by_side": 1234, "merged_duplicate": 3, "dropped_contradicted_edge": 0}
    line = next(x for x in markdown(stats).splitlines() if x.startswith("Scene graphs cleaned"))
    assert "3 duplicate annotations merged" in line and "1,234 pairs side by side given GQA's left/right" in line
    assert "contradict" not in line  # nothing of that kind was changed
