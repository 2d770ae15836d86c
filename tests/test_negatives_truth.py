"""Negatives that truly contradict: every fault the audit found on real GQA, on hand-made graphs.

The language backend here is a scripted one that answers what an LLM answered in the audit and applies
the pipeline's validation exactly as the real backends do; the negatives come from the real search."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from hardneg.backends.language import Answer, ReplaceRequest, RewriteRequest, Validator
from hardneg.core.gqa.plausibility import Counts, Plausibility
from hardneg.core.records import PathNode
from hardneg.core.resources import data_path
from hardneg.core.rows import PositiveRow
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import English, RelationVocab
from hardneg.generators.paths.expressions import Renderer, Templates
from hardneg.generators.text.negatives import NegativeContext, make_text_negatives
from hardneg.generators.text.sites import Site, SiteVocab
from tests.helpers import graph, node, obj, positive_row

WORDS = Words.load()
TABLE = AttributeTable.load()


class Scripted:
    """A language backend that proposes given words, validated like every backend does."""

    version = "scripted@test"

    def __init__(self, answers: dict[str, tuple[str, ...]]) -> None:
        self.answers = answers  # replaced word -> what the "LLM" proposes

    def rewrite(self, requests: Sequence[RewriteRequest], validate: Validator | None = None) -> list[Answer]:
        return [Answer(r.key, (r.expression, r.expression, r.expression)) for r in requests]

    def replace(self, requests: Sequence[ReplaceRequest], validate: Validator | None = None) -> list[Answer]:
        out = []
        for r in requests:
            values = self.answers.get(r.word, ())
            why = validate(r, values) if validate and values else "nothing proposed"
            out.append(Answer(r.key, None if why else values, error=why))
        return out

    def stats(self) -> dict[str, int]:
        return {}


def context(types: tuple[str, ...], plausibility: Plausibility | None = None) -> NegativeContext:
    renderer = Renderer(
        Templates.load(data_path("templates/expressions.v1.yaml")),
        English.load(data_path("templates/english.v1.yaml")),
        RelationVocab.load(data_path("templates/relations.v1.yaml")),
        TABLE,
        WORDS,
    )
    # the corpus vocabulary the options come from: every name of the categories these tests touch, the
    # attribute table, a few relations (the scripted "LLM" proposes other words than these options)
    categories = ("animal", "building", "clothing", "living", "person_gender", "plant", "plant_part", "structure",
                  "tableware", "vehicle")  # fmt: skip
    names = Counter({n: 1 for c in categories for n in WORDS.category_members(c)})
    attributes = Counter({a: 1 for cat in TABLE.categories.values() for a in cat})
    relations = Counter({r: 1 for r in ("to the left of", "to the right of", "on", "under", "in", "above", "below")})
    vocab = {"names": names, "attributes": attributes, "relations": relations}
    return NegativeContext(TABLE, WORDS, renderer, vocab, seed=0, per_positive=1, max_rounds=2, types=types,
                           plausibility=plausibility)  # fmt: skip


def positive(g, path: PathNode, ptype: str) -> PositiveRow:
    pid = PositiveRow.make_id(g.image_id, path)
    return positive_row(path, "x", image_id=g.image_id, id=pid, tuple_type=ptype, level=1, width=g.width,
                        height=g.height, template=f"{ptype}@v1#0", bbox=[0, 0, 1, 1])  # fmt: skip


def negatives(g, path: PathNode, ptype: str, answers: dict, types: tuple[str, ...], plaus=None):
    made, rejects, _ = make_text_negatives([positive(g, path, ptype)], {g.image_id: g}, context(types, plaus),
                                           Scripted(answers))  # fmt: skip
    return made, rejects


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("bike", "bicycle"), ("person", "man"), ("person", "guy"), ("person", "surfer"), ("man", "men"),
        ("building", "hotel"), ("hotel", "building"), ("tower", "building"), ("bowl", "dish"), ("plate", "dish"),
        ("tree", "branch"), ("branch", "tree"), ("fence", "pole"), ("hat", "helmet"), ("person", "boy"),
    ],
)  # fmt: skip
def test_a_replacement_object_that_does_not_contradict_is_refused_with_its_reason(old, new):
    g = graph(obj("1", old, box=(10, 10, 100, 100)), obj("2", "car", box=(300, 10, 100, 100)))
    path = node(old, rel=[("to the left of", node("car"))], oid="1")
    made, rejects = negatives(g, path, "1_hop", {old: (new,)}, ("replace_object",))
    assert not [n for n in made if n.change.get("to") == new]
    # refused either when proposed (the reason names it) or before: nothing of the category contradicts,
    # or the change rests on a crowd name
    reasons = " ".join(r.reason for r in rejects if r.detail.get("word") in (old, None))
    assert not reasons or new in reasons or "crowd name" in reasons, reasons  # rejects, if any, name it
    site = Site("replace_object", 1, (0,), word=old, category=WORDS.name_category(old))
    ok, why = SiteVocab(TABLE, WORDS).contradicts(site, path, new)
    assert not ok and new in why, why


@pytest.mark.parametrize(("old", "new"), [("metal", "chrome"), ("white", "colorful"), ("standing", "surfing")])
def test_a_replacement_attribute_that_can_hold_at_once_is_refused(old, new):
    g = graph(obj("1", "cup" if old != "standing" else "man", (old,)))
    path = node("cup" if old != "standing" else "man", old, oid="1")
    made, rejects = negatives(g, path, "0_hop", {old: (new,)}, ("replace_attribute",))
    assert not made and any(new in r.reason for r in rejects)


@pytest.mark.parametrize(("old", "new"), [("to the left of", "near"), ("to the left of", "next to"), ("in", "inside"),
                                          ("below", "under")])  # fmt: skip
def test_a_compatible_relation_is_refused(old, new):
    g = graph(obj("1", "cat", rels=((old, "2"),), box=(10, 200, 50, 50)), obj("2", "box", box=(300, 100, 80, 80)))
    path = node("cat", rel=[(old, node("box"))], oid="1")
    made, rejects = negatives(g, path, "1_hop", {old: (new,)}, ("replace_relation",))
    assert not made and all(new in r.reason for r in rejects)
    site = Site("replace_relation", 1, (0,), word=old, edge=0, category="relation")
    ok, why = SiteVocab(TABLE, WORDS).contradicts(site, path, new)
    assert not ok and new in why, why


def test_a_left_right_flip_true_of_an_unrelated_instance_is_refused():
    """A forest: the graph relates one tree to the road; another tree's box is right of it."""
    g = graph(
        obj("t1", "bench", rels=(("to the left of", "r"),), box=(10, 50, 60, 60)),
        obj("t2", "bench", box=(400, 40, 60, 60)),
        obj("r", "car", box=(150, 200, 150, 100)),
    )
    path = node("bench", rel=[("to the left of", node("car"))], oid="t1")
    made, rejects = negatives(g, path, "1_hop", {"to the left of": ("to the right of",)}, ("replace_relation",))
    assert not made
    assert any("still true of object t2" in r.reason for r in rejects)


def test_the_right_flip_stays_when_no_box_makes_it_true():
    g = graph(
        obj("b", "bench", rels=(("to the left of", "r"),), box=(10, 50, 60, 60)),
        obj("r", "car", box=(150, 200, 150, 100)),
    )
    path = node("bench", rel=[("to the left of", node("car"))], oid="b")
    made, _ = negatives(g, path, "1_hop", {"to the left of": ("to the right of",)}, ("replace_relation",))
    assert [n.change["to"] for n in made] == ["to the right of"]


def test_swaps_never_involve_crowd_names_or_move_a_colour_onto_a_person():
    # "the black bag to the left of the men" must not become "the black men that are to the left of the bag"
    g = graph(obj("1", "bag", ("black",), rels=(("to the left of", "2"),)), obj("2", "men", box=(300, 10, 80, 80)))
    made, rejects = negatives(g, node("bag", "black", rel=[("to the left of", node("men"))], oid="1"), "1_hop", {},
                              ("swap_object",))  # fmt: skip
    assert not made and any("crowd name 'men'" in r.reason for r in rejects)
    g = graph(obj("1", "car", ("black",), rels=(("to the left of", "2"),)), obj("2", "woman", box=(300, 10, 80, 80)))
    made, rejects = negatives(g, node("car", "black", rel=[("to the left of", node("woman"))], oid="1"), "1_hop", {},
                              ("swap_object",))  # fmt: skip
    assert not made and any("person noun 'woman' as 'black'" in r.reason for r in rejects)


@pytest.mark.parametrize(
    ("a", "b", "made"), [("skier", "woman", False), ("player", "man", False), ("woman", "man", True)]
)
def test_a_swap_of_names_one_person_may_carry_both_is_refused(a, b, made):
    """Real GQA: "the skier which is on the left of the woman" swapped into "the woman which is on the left of
    the skier" is still true where the skier is a woman and the woman skis too. A role and a sex (or an age)
    can name one person; a woman and a man cannot."""
    g = graph(obj("1", a, rels=(("to the left of", "2"),)), obj("2", b, box=(300, 10, 80, 80)))
    got, rejects = negatives(g, node(a, rel=[("to the left of", node(b))], oid="1"), "1_hop", {}, ("swap_object",))
    assert bool(got) is made, rejects
    assert made or any(r.reason.startswith(f"swap of names that can name one object: nothing separates '{a}'")
                       for r in rejects), rejects  # fmt: skip


@pytest.mark.parametrize(("name", "made"), [("work truck", True), ("zorb truck", True), ("zorblat", False)])
def test_a_swap_reads_a_compound_the_tables_do_not_list_by_its_head(name, made):
    """Real VG photo: "the man to the left of the work truck" could not swap, as the word tables do not list
    "work truck", though a compound is a kind of its head noun everywhere else they are read. A name they
    cannot read at all still refuses the swap."""
    g = graph(obj("1", "man", rels=(("to the left of", "2"),)), obj("2", name, box=(300, 10, 80, 80)))
    got, rejects = negatives(g, node("man", rel=[("to the left of", node(name))], oid="1"), "1_hop", {},
                             ("swap_object",))  # fmt: skip
    assert [n.expression for n in got] == ([f"the {name} to the left of the man"] if made else []), rejects
    assert made or any("which the word tables do not know" in r.reason for r in rejects), rejects


def test_a_swap_across_a_symmetric_relation_between_equal_objects_is_refused():
    g = graph(
        obj("1", "cup", ("white",), rels=(("next to", "2"),)), obj("2", "plate", ("white",), box=(300, 10, 80, 80))
    )
    made, rejects = negatives(g, node("cup", "white", rel=[("next to", node("plate", "white"))], oid="1"), "1_hop", {},
                              ("swap_object",))  # fmt: skip
    assert not made and any("symmetric relation" in r.reason for r in rejects)


@pytest.mark.parametrize(("ball", "kept"), [((), False), (("large",), True)])
def test_a_swap_stands_only_where_the_graph_contradicts_it(ball, kept):
    """ "the small car with the same color as the ball" swaps into "the small ball with the same color as the
    car": the colour is shared either way, so the negative is false only if the ball is not small. A ball
    without a size annotated may well be small; one annotated large is not."""
    g = graph(obj("c", "car", ("small", "red")), obj("b", "ball", ("red", *ball), box=(300, 10, 80, 80)))
    path = node("car", "small", same=[("color", node("ball", oid="b"))], oid="c")
    made, rejects = negatives(g, path, "same_attr", {}, ("swap_object",))
    assert [n.node().name for n in made] == (["ball"] if kept else [])
    assert kept or any(r.reason.startswith("may be true: object b ('ball') may match") for r in rejects), rejects


def test_a_replacement_name_is_refused_where_an_object_of_that_name_may_fit():
    """ "the checkered plate" -> "the checkered bottle": the graph has a bottle whose pattern nobody annotated,
    so the executor matching nothing proves nothing; a plain bottle contradicts it."""

    def made_with(bottle: tuple[str, ...]) -> list[str]:
        g = graph(obj("p", "plate", ("checkered",)), obj("b", "bottle", bottle, box=(300, 10, 80, 80)))
        made, _ = negatives(g, node("plate", "checkered", oid="p"), "0_hop", {"plate": ("bottle", "cup")},
                            ("replace_object",))  # fmt: skip
        return [n.change["to"] for n in made]

    assert made_with(()) == ["cup"]  # the bottle may be checkered; no cup is there, and a cup is no crowd
    assert made_with(("plain",)) == ["bottle"]


def _counts() -> Plausibility:
    c = Counts()
    c.names.update({"microwave": 80, "kitchen": 60, "shorts": 200, "surfer": 150, "man": 500, "table": 300, "cup": 250})
    c.attributes.update({"shirtless": 300, "colorful": 400, "black": 3000, "white": 3000})
    c.attribute_name.update({("shirtless", "man"): 250, ("shirtless", "surfer"): 50, ("colorful", "shorts"): 30})
    c.triples.update({("microwave", "in", "kitchen"): 40, ("surfer", "wearing", "shorts"): 90,
                      ("cup", "on", "table"): 120, ("man", "wearing", "shorts"): 100})  # fmt: skip
    c.relations.update({"in": 4000, "wearing": 3000, "on": 9000})
    return Plausibility(Counts.from_rows(c.rows()))


def test_absurd_swaps_are_refused_by_the_corpus_statistics():
    p = _counts()
    assert "is never seen, but 'microwave in kitchen' is seen 40 times" in p.absurd(
        node("kitchen", rel=[("in", node("microwave"))])
    )
    assert "'table' (seen 300 times) is never the subject of 'wearing'" in p.absurd(
        node("table", rel=[("wearing", node("man"))])
    )
    assert "'shirtless shorts' is never seen" in p.absurd(node("shorts", "shirtless"))
    assert p.absurd(node("microwave", rel=[("in", node("kitchen"))])) is None
    g = graph(obj("1", "cup", rels=(("on", "2"),)), obj("2", "table", box=(0, 100, 400, 200)))
    made, rejects = negatives(g, node("cup", rel=[("on", node("table"))], oid="1"), "1_hop", {},
                              ("swap_object",), plaus=p)  # fmt: skip
    assert not made and any("absurd swap" in r.reason for r in rejects)


def test_plausibility_scores_tell_good_odd_and_absurd_negatives_apart():
    from hardneg.filters.scorers.grammar import GrammarRuleScorer

    p = _counts()
    good = p.score(node("cup", rel=[("on", node("table"))]))
    absurd = p.score(node("table", rel=[("on", node("cup"))]))
    assert good > absurd + 1.0
    texts = ["the cup on the table", "the table on the cup"]
    assert GrammarRuleScorer().score(texts) == [1.0, 1.0]  # what refinement saw before: no signal at all


def test_contradiction_is_the_rule_for_sites():
    vocab = SiteVocab(TABLE, WORDS)
    path = node("car", "red", rel=[("to the left of", node("bus"))])
    site = Site("replace_object", 1, (0,), word="car", category=WORDS.name_category("car"))
    assert vocab.contradicts(site, path, "bus")[0]
    assert not vocab.contradicts(site, path, "vehicle")[0]
    rel = Site("replace_relation", 1, (0,), word="to the left of", edge=0, category="spatial")
    assert vocab.contradicts(rel, path, "to the right of")[0]
    assert not vocab.contradicts(rel, path, "next to")[0]


def test_a_negative_may_be_true_of_clothes_the_graph_leaves_off_its_people():
    """Real GQA: graphs box clothes for some of their people. "The red shirt" is false of the white one boxed
    on the first man and may be true of the second man's, which nobody boxed; with one man it is false. Where
    the graph annotates no one and its clothes lie apart (a ball game: the catcher's glove far from the
    batter's uniform), "the ball to the right of the uniform" may be true of another player's uniform. A piece
    put on a person stands on no side of them: "the shirt to the right of the woman" is not said of her own."""
    man, shirt, other = (obj("1", "man", box=(0, 0, 100, 300)), obj("2", "shirt", ("white",), box=(10, 60, 80, 100)),
                         obj("3", "man", box=(300, 0, 100, 300)))  # fmt: skip
    white = node("shirt", "white", oid="2")
    made, rejects = negatives(graph(man, shirt, other), white, "0_hop", {"white": ("red",)}, ("replace_attribute",))
    assert not made
    assert any("once the clothes the graph leaves off its people are put on them" in r.reason for r in rejects)
    made, _ = negatives(graph(man, shirt), white, "0_hop", {"white": ("red",)}, ("replace_attribute",))
    assert [n.change["to"] for n in made] == ["red"]

    game = graph(
        obj("1", "uniform", box=(260, 160, 80, 130)),
        obj("2", "glove", box=(20, 240, 40, 30)),
        obj("3", "ball", rels=(("to the left of", "1"),), box=(150, 200, 10, 10)),
    )
    path = node("ball", rel=[("to the left of", node("uniform"))], oid="3")
    made, rejects = negatives(game, path, "1_hop", {"to the left of": ("to the right of",)}, ("replace_relation",))
    assert not made and any("its clothes lie apart (glove 2 far from the uniform 1)" in r.reason for r in rejects)
    near = graph(*(o for o in game.objects.values() if o.id != "2"), obj("2", "helmet", box=(270, 120, 50, 40)))
    made, _ = negatives(near, path, "1_hop", {"to the left of": ("to the right of",)}, ("replace_relation",))
    assert [n.change["to"] for n in made] == ["to the right of"]  # one player's helmet and uniform

    left = graph(man, obj("2", "shirt", rels=(("to the left of", "3"),), box=(10, 60, 80, 100)),
                 obj("3", "woman", box=(300, 0, 100, 300)))  # fmt: skip
    path = node("shirt", rel=[("to the left of", node("woman"))], oid="2")
    made, _ = negatives(left, path, "1_hop", {"to the left of": ("to the right of",)}, ("replace_relation",))
    assert [n.change["to"] for n in made] == ["to the right of"]
