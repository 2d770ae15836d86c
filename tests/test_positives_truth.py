"""Positives a person can resolve: every fault of the audit that the graph alone exposes, on
hand-made graphs, plus the detector that finds what the graph missed (a drawn, unannotated twin)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from PIL import Image, ImageDraw

from hardneg.core.config import load_config
from hardneg.core.gqa.hygiene import clean
from hardneg.core.records import PathNode, Relation
from hardneg.core.words.table import Words
from hardneg.generators.paths.select import attributes_swappable
from hardneg.generators.paths.stage import PathResources, generate_positives
from hardneg.generators.text.english import EnglishCheck
from tests.helpers import graph, node, obj, positive_row, text_negative_row

CFG = load_config(None, {"paths": {"max_per_image": 100}})
RES = PathResources.load(CFG)


def _positives(g):
    positives, rejects, stats = generate_positives(g, CFG, RES)
    return positives, rejects, stats


def _names(p) -> list[str]:
    return [n.name for n in p.node().nodes()]


@pytest.mark.parametrize("name", ["window", "tree", "pole", "wire", "men", "bananas", "leaves", "grass"])
def test_crowd_names_are_never_targets(name):
    g = graph(obj("1", name, ("white",), rels=(("to the left of", "2"),), box=(10, 10, 80, 80)),
              obj("2", "car", ("red",), box=(300, 10, 120, 80)))  # fmt: skip
    positives, rejects, _ = _positives(g)
    assert all(p.node().name != name for p in positives)
    assert any(r.stage == "targets" and repr(name) in r.reason for r in rejects)  # a crowd or stuff name


def test_no_name_three_times_and_no_same_name_anchor_in_a_crowd_of_it():
    """ "the chair to the right of a chair which is to the right of a chair": three chairs in a row."""
    chairs = [
        obj(str(i), "chair", rels=(("to the right of", str(i - 1)),) if i else (), box=(20 + 120 * i, 200, 80, 80))
        for i in range(3)
    ]
    g = graph(*chairs, obj("h", "hat", ("red",), box=(20, 20, 60, 60)))
    positives, _, stats = _positives(g)
    assert positives  # the chairs are still described, by other means
    for p in positives:
        names = _names(p)
        assert names.count("chair") < 3, p.expression
        assert not (p.node().name == "chair" and "chair" in names[1:]), p.expression
    assert stats["refused:name_chains"] > 0


def test_a_relation_that_tells_the_target_apart_never_rests_on_a_crowd_name():
    """ "the tree to the left of the tree which is right of the hat" has a crowd target; "the man to the left of
    the tree" (two men) would rest on one tree of a forest."""
    g = graph(
        obj("m1", "man", rels=(("to the left of", "t"),), box=(10, 100, 50, 150)),
        obj("m2", "man", rels=(("to the right of", "t"),), box=(400, 100, 50, 150)),
        obj("t", "tree", box=(200, 50, 60, 250)),
    )
    positives, _, stats = _positives(g)
    assert not [p for p in positives if p.node().name == "man" and "tree" in _names(p)]
    assert stats["refused:crowd_anchors"] > 0


def test_a_refused_relation_counts_once_whatever_attributes_could_go_with_it():
    """refused:* counts relation choices a rule refused, not each with every attribute subset of the target
    (two men alike: no subset tells them apart, so every one would need the relation to the tree)."""

    def refused(attrs: tuple[str, ...]) -> int:
        g = graph(
            obj("m1", "man", attrs, rels=(("to the left of", "t"),), box=(10, 100, 50, 150)),
            obj("m2", "man", attrs, rels=(("to the right of", "t"),), box=(400, 100, 50, 150)),
            obj("t", "tree", box=(200, 50, 60, 250)),
        )
        return _positives(g)[2]["refused:crowd_anchors"]

    assert refused(()) > 0
    assert refused(("young", "smiling")) == refused(())


def test_one_object_annotated_twice_is_merged_before_any_path():
    """ "the pole on the left of the metal tower and to the left of a tower": one tower, two annotations."""
    words = Words.load()
    g = graph(
        obj("p", "pole", rels=(("to the left of", "a"), ("to the left of", "b")), box=(10, 10, 40, 200)),
        obj("a", "tower", ("metal",), box=(200, 10, 100, 300)),
        obj("b", "tower", box=(205, 12, 98, 296)),
    )
    cleaned, changes = clean(g, words, 0.7, True)
    assert set(cleaned.objects) == {"p", "a"}
    assert cleaned.objects["p"].relations == (Relation("to the left of", "a"),)  # the two edges are one now
    assert [c.kind for c in changes] == ["merged_duplicate"]
    positives, _, _ = _positives(cleaned)
    assert all(_names(p).count("tower") < 2 for p in positives)


def test_a_contradicted_left_right_edge_is_dropped():
    g = graph(
        obj("1", "cup", rels=(("to the left of", "2"),), box=(300, 10, 50, 50)), obj("2", "bowl", box=(10, 10, 50, 50))
    )
    cleaned, changes = clean(g, Words.load(), 0.7, True)
    assert cleaned.objects["1"].relations == ()
    assert changes[0].kind == "dropped_contradicted_edge"


def test_a_relation_written_as_visual_genome_writes_it_reads_as_gqa_writes_it():
    """Raw Visual Genome graphs say "wears", "carries", "is on": the templates read them after a noun, so
    unrespelled they made "the man that is wears the backpack"."""
    g = graph(
        obj("m", "man", ("walking",), rels=(("wears", "b"), ("is on", "s")), box=(100, 50, 80, 300)),
        obj("b", "backpack", ("silver",), box=(120, 80, 40, 60)),
        obj("s", "sidewalk", box=(0, 300, 500, 100)),
    )
    cleaned, changes = clean(g, Words.load(), 0.7, True)
    assert cleaned.objects["m"].relations == (Relation("wearing", "b"), Relation("on", "s"))
    assert sorted(c.reason for c in changes) == ["'is on' -> 'on'", "'wears' -> 'wearing'"]
    texts = [p.expression for p in _positives(cleaned)[0]]
    assert any("wearing the silver backpack" in t for t in texts), texts
    assert not [t for t in texts if " is wears" in t or " wears " in t or "is is on" in t]


def test_same_size_only_between_objects_of_one_kind():
    """ "the blue house with the same size as a red flower" compares labels across very different sizes."""
    g = graph(obj("h", "house", ("blue", "small"), box=(10, 10, 200, 150)),
              obj("h2", "house", ("blue", "large"), box=(250, 10, 200, 150)),
              obj("f", "flower", ("red", "small"), box=(10, 300, 40, 40)))  # fmt: skip
    positives, _, stats = _positives(g)
    assert not [p for p in positives if p.node().same and p.node().same[0].category == "size"]
    assert stats["refused:size_across_categories"] > 0


def test_mass_nouns_take_no_article_and_bad_english_is_refused():
    idx_graph = graph(obj("1", "snow", box=(0, 300, 500, 100)), obj("2", "snow", box=(0, 0, 100, 50)))
    from hardneg.core.executor import GraphIndex

    index = GraphIndex(idx_graph, RES.table)
    assert RES.renderer.noun_phrase(node("snow"), index, root=False) == "the snow"  # never "a snow"
    check = EnglishCheck(Words.load())
    for bad in ("the bananas that is yellow", "the man on a snow", "the dog in a mud", "the boy near a food"):
        assert check.check(bad) is not None, bad
    assert check.check("the man on the snow") is None


def test_a_plural_only_noun_takes_a_plural_verb():
    """ "shorts", "pants", "jeans" are plural (not invariant like "sheep"): "the shorts that is green" was
    read as fine, and the lexicon's "the green shorts" -> "the shorts that is green" went out as a positive."""
    check = EnglishCheck(Words.load())
    for bad in ("the shorts that is green", "the pants that is red", "the jeans which is blue"):
        assert check.check(bad) is not None, bad
    for good in ("the shorts that are green", "the sheep that is white", "the sheep that are white"):
        assert check.check(good) is None, good


def test_the_batched_check_tags_only_texts_it_could_refuse_and_agrees_with_the_full_check(monkeypatch):
    """`check_many` skips tagging a text with no article and none of is/are/has/... among its tokens (the
    tokenizer's own special cases included: "isnt" is "is" + "nt", "Ima" holds "a"); every verdict equals
    the one-text-at-a-time check on the whole pipeline."""
    from hardneg.generators.text.rewrite import load_nlp

    texts = [
        "the bananas that is yellow", "the man on a snow", "the cup on the table", "a apple near the plate",
        "the dog which isnt brown", "Ima dog", "the A-frame house", "an umbrella", "the boys that are running",
        "the horse to the left of the fence", "the plates that has food", "the sheep that are white", "",
    ]  # fmt: skip
    full = EnglishCheck(Words.load())
    want = {t: full.check_doc(load_nlp()(t)) for t in texts}
    nlp = load_nlp()
    tagged: list[str] = []
    real_pipe = type(nlp).pipe

    def counting_pipe(self, docs, **kw):
        docs = list(docs)
        tagged.extend(d.text for d in docs)
        return real_pipe(self, docs, **kw)

    monkeypatch.setattr(type(nlp), "pipe", counting_pipe)
    assert EnglishCheck(Words.load()).check_many(texts) == want
    assert sorted(tagged) == sorted(
        {"the bananas that is yellow", "the man on a snow", "a apple near the plate", "the dog which isnt brown",
         "Ima dog", "the A-frame house", "an umbrella", "the boys that are running", "the plates that has food",
         "the sheep that are white"}
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------ detector


@pytest.fixture(scope="module")
def red_detector(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from tests.tiny_detector import save_red_detector

    return save_red_detector(tmp_path_factory.mktemp("detector") / "owlvit")


def _scene(twin: bool) -> Image.Image:
    im = Image.new("RGB", (480, 480), (120, 140, 120))
    d = ImageDraw.Draw(im)
    # aligned to the tiny detector's 80 px grid (480 px / 6 patches), so its cell boxes read cleanly
    d.ellipse((80, 80, 240, 240), fill=(230, 20, 20))  # the annotated ball
    if twin:
        d.ellipse((320, 320, 400, 400), fill=(230, 20, 20))  # a second ball nobody annotated
    return im


def test_the_detector_drops_a_positive_whose_twin_nobody_annotated(red_detector: Path):
    from hardneg.filters.base import Item
    from hardneg.filters.decide import Rule, decide_text, first_failure
    from hardneg.filters.registry import build, filter_class, thresholds

    # OWL-ViT's box prior centres patch i's box at (i + 1) / 6 of the side: the cells of the ball's patches
    # span 120-280 px, so the ball's annotation (80-280) explains them all, and the twin's (360-440) not
    g = graph(obj("b", "ball", ("red",), box=(80, 80, 200, 200)), obj("c", "car", box=(300, 40, 120, 80)),
              width=480, height=480)  # fmt: skip
    record = positive_row(node("ball", oid="b"), "the ball")
    f = build("detector", {"model": str(red_detector)}, batch_size=2)
    items = [Item(1, "positive", record, "the ball", _scene(twin=True), graph=g),
             Item(2, "positive", record, "the ball", _scene(twin=False), graph=g)]  # fmt: skip
    twin, alone = f.score(items)
    assert twin["detector_twin"] > 0.9 and alone["detector_twin"] < 0.1
    assert twin["detector_target"] > 0.9 and alone["detector_target"] > 0.9
    rule = Rule(filter_class("detector"), thresholds("detector", {}))
    assert first_failure({f.version: twin}, [rule], "positive")[1].startswith("filter: an unannotated object")
    assert first_failure({f.version: alone}, [rule], "positive") == (["detector"], None)
    # a replace_object negative "the car next to the ball" -> the ball IS visible: the negative is dropped
    neg = text_negative_row(node("ball"), "replace_object", {"nodes": [0], "from": "car", "to": "ball"})
    [scores] = f.score([Item(3, "text_negative", neg, "x", _scene(twin=False), negative_text="y", graph=g)])
    assert scores["detector_replacement"] > 0.9
    assert not decide_text({f.version: scores}, [rule]).keep


def test_the_detector_runs_end_to_end_and_the_demo_without_it_says_so(red_detector: Path, tmp_path: Path):
    from hardneg.flows.pipeline import run_local
    from tests.runs import small_run

    small = {"demo": {"n_scenes": 6}, "images": {"candidates": 1}}
    scorers = {"seam": {}, "detector": {"model": str(red_detector)}}
    cfg = load_config(None, {**small, "filters": {"scorers": scorers, "batch_size": 4}})
    run_local(cfg, tmp_path / "with")
    stats = orjson.loads((tmp_path / "with" / "stats.json").read_bytes())
    assert stats["filters"]["detector:positive"]["seen"] > 0
    positives = orjson.loads((tmp_path / "with" / "splits" / "train" / "positive.json").read_bytes())
    assert all("detector_twin" in p["scores"] for p in positives)
    md = (small_run() / "stats.md").read_text()  # a run without the detector (the shared small demo run)
    assert "detector" in md and "not configured" in md


def test_the_english_check_trusts_the_word_tables_over_a_tagger_slip():
    """The small tagger splits "fire hydrant" into a noun and an adverb and reads "mitt" as a plural: the
    check took "a fire hydrant" for "a" before the mass noun "fire" and "the mitt that is ..." for a
    disagreement, dropping every such sample. The tables know these names; the head of "a cream colored jar"
    is the jar. Wrong English is still refused."""
    check = EnglishCheck(Words.load())
    good = ["the man to the left of a fire hydrant", "the colorful mitt that is on the windows",
            "the jar to the right of a cream colored jar", "the roof of a snow covered house",
            "the man holding a metal chair", "a man holding umbrellas", "the sheep that are white"]  # fmt: skip
    bad = ["a fire hydrants", "the mitts that is red", "a cream colored jars", "the man near a snow",
           "the man holding a metal chairs", "the bananas that is yellow", "an fire hydrant"]  # fmt: skip
    assert {t: check.check(t) for t in good} == dict.fromkeys(good)
    assert all(check.check(t) is not None for t in bad), {t: check.check(t) for t in bad}


def test_the_english_check_reads_a_token_without_letters_as_no_word():
    """The tagger may call "_" a noun; the word tables refuse an empty name, so an LLM answer holding one
    crashed the check (and the language unit). It is no noun now, and what is around it is still checked."""
    check = EnglishCheck(Words.load())
    assert check.check("the _ that is red") is None and check.check("a _") is None
    assert check.check("an _ apple") is None
    assert check.check("the dogs _ that is red") is not None


def test_a_rewritten_negative_is_checked_like_a_rewritten_positive():
    """The language stage checks negatives after their (optional) rewrite: a rewrite that breaks the English
    falls back to the template and leaves `rewrites`; only a negative whose template fails too is dropped."""
    from hardneg.generators.text.english import check_negatives

    bananas = PathNode("bananas", ("yellow",))
    ok = text_negative_row(bananas, "replace_object", {"nodes": [0]}, id=1, template_expression="the yellow bananas",
                           expression="the bananas that is yellow", expression_source="rewrite#1",
                           rewrites=["the bananas that is yellow", "the bananas that are yellow"])  # fmt: skip
    bad = text_negative_row(bananas, "replace_object", {"nodes": [0]}, id=2, template_expression="a bananas",
                            expression="a bananas", rewrites=[])  # fmt: skip
    kept, rejects = check_negatives([ok, bad], EnglishCheck(Words.load()))
    assert [r.id for r in kept] == [1] and [r.sample_id for r in rejects] == [2]
    assert kept[0].expression == "the yellow bananas" and kept[0].expression_source == "template"
    assert kept[0].rewrites == ["the bananas that are yellow"]
    assert rejects[0].detail["negative_type"] == "replace_object"


def test_of_the_paths_of_a_target_one_that_allows_rarer_negatives_is_kept():
    """A white cup on a brown table, beside a chair, in front of a wall: of its 1-hop paths, the one that
    describes the cup and the table (a swap of colours) or else one that relates no crowd name is kept; the
    first in the keyed order is kept only with `negatives_lookahead: 0`."""
    rels = (("on", "2"), ("near", "3"), ("in front of", "4"))
    g = graph(obj("1", "cup", ("white",), rels=rels, box=(100, 100, 40, 40)),
              obj("2", "table", ("brown",), box=(50, 130, 300, 100)), obj("3", "chair", box=(360, 100, 80, 120)),
              obj("4", "wall", box=(0, 0, 500, 200)))  # fmt: skip
    kept, first = [], []
    for seed in range(8):
        for look, out in ((64, kept), (0, first)):
            cfg = load_config(None, {"seed": seed, "paths": {"max_per_image": 100, "negatives_lookahead": look,
                                                             "types": ["1_hop"]}})  # fmt: skip
            positives, _, _ = generate_positives(g, cfg, PathResources.load(cfg))
            out += [p.node() for p in positives if p.node().name == "cup"]
    assert len(kept) == len(first) == 8
    assert all(attributes_swappable([set(n.attributes) for n in p.nodes()], RES.table) for p in kept)
    assert not all(attributes_swappable([set(n.attributes) for n in p.nodes()], RES.table) for p in first)


def test_an_object_named_after_a_property_is_neither_target_nor_anchor():
    """Visual Genome annotates "color" as an object: "the padding sharing the same color as a color"."""
    g = graph(
        obj("p", "padding", ("blue",), box=(10, 10, 100, 60)),
        obj("c", "color", ("blue",), box=(20, 20, 50, 30)),
        obj("t", "table", ("brown",), box=(200, 200, 150, 100)),
    )
    texts = [p.expression for p in _positives(g)[0]]
    assert texts and not [t for t in texts if "color" in t.replace("same color", "")], texts


def test_attributes_english_says_only_after_is_follow_the_noun():
    """ "the on walk sign" does not read: an adverb particle or a-word attribute (on, off, asleep) is said after
    the name, in number with it; adjectives stay before it."""
    from hardneg.core.executor import GraphIndex

    g = graph(obj("1", "walk sign", ("on",)), obj("2", "light", ("off", "red")), obj("3", "light", ("red",)))
    index = GraphIndex(g, RES.table)
    assert RES.renderer.noun_phrase(node("walk sign", "on"), index, root=True) == "the walk sign that is on"
    assert RES.renderer.noun_phrase(node("light", "red", "off"), index, root=False) == "the red light that is off"
    assert RES.renderer.noun_phrase(node("lights", "on"), None, root=True) == "the lights that are on"
    assert RES.renderer.noun_phrase(node("sign", "open"), None, root=True) == "the open sign"  # an adjective
    path = node("walk sign", "on", rel=[("to the left of", node("light", "red", "off"))])
    text = RES.renderer.render_with(path, "1_hop", f"1_hop@{RES.renderer.templates.version}#0", index)
    assert text == "the walk sign that is on, to the left of the red light that is off"
