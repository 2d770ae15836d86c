"""The phrases stage's noun phrases: a positive that reads as its template rendered it takes the template's
noun phrases and the nodes they name, with no parser; a text a rewrite changed is parsed."""

from __future__ import annotations

from collections import Counter

import pytest

from hardneg.core.config import load_config
from hardneg.core.records import PathEdge, PathNode, SameEdge
from hardneg.core.rows import PositiveRow
from hardneg.core.words.table import Words
from hardneg.exports import phrases as phrases_mod
from hardneg.exports.phrases import phrases_of, template_chunks
from hardneg.exports.rows import PhrasesRow
from hardneg.generators.paths.stage import PathResources
from tests.helpers import positive_row

CFG = load_config(None)
RES = PathResources.load(CFG)
WORDS = Words.load()


def _paths() -> dict[str, PathNode]:
    floor = PathNode("floor", id="f")
    can = PathNode("trash can", ("black", "metal"), (PathEdge("on", floor),), id="c")
    table = PathNode("table", ("wooden",), id="t")
    return {
        "0_hop": PathNode("trash can", ("small",), id="c"),
        "1_hop": PathNode("lid", ("white",), (PathEdge("on", can),), id="l"),
        "and": PathNode("cup", (), (PathEdge("on", table), PathEdge("near", PathNode("trash can", id="c"))), id="u"),
        "2_hop": PathNode("toilet", (), (PathEdge("near", can),), id="o"),
        "same_attr": PathNode("chair", (), same=(SameEdge("color", table),), id="h"),
        "same_attr_2hop": PathNode("chair", (), same=(SameEdge("color", can),), id="h"),
    }


def _positive(path: PathNode, ptype: str, i: int, expression: str | None = None, **fields) -> PositiveRow:
    template_id = f"{ptype}@{RES.renderer.templates.version}#{i}"
    text = RES.renderer.render_with(path, ptype, template_id, None)
    return positive_row(path, expression or text, **{"id": i, "template_expression": text, "template": template_id,
                                                     "tuple_type": ptype, **fields})  # fmt: skip


CASES = [(ptype, i) for ptype, options in RES.renderer.templates.types.items() for i in range(len(options))]


@pytest.mark.parametrize(("ptype", "i"), CASES)
def test_every_template_names_each_node_by_its_whole_noun_phrase(ptype: str, i: int):
    path = _paths()[ptype]
    p = _positive(path, ptype, i)
    text = p.expression
    chunks = template_chunks(text, path, ptype, RES.renderer.templates.types[ptype][i])
    nodes = path.nodes()
    slots = {"0_hop": 1, "1_hop": 2, "same_attr": 2}.get(ptype, 3)
    assert len(chunks) == slots, text
    for phrase, start, end, node in chunks:
        assert text[start:end] == phrase
        n = nodes[node]
        assert phrase.startswith("the ") and phrase.endswith(n.name), (phrase, n)
        assert sorted(phrase.split()[1 : -len(n.name.split())]) == sorted(n.attributes), (phrase, n)
    assert [c[1] for c in chunks] == sorted(c[1] for c in chunks)  # text order


def test_a_template_text_is_not_parsed_and_a_rewritten_text_is(monkeypatch):
    """'the trash can' is a noun phrase the parser reads as a verb ('can'): the template knows it names the
    target. A rewrite the template cannot have rendered goes to the parser."""
    path = _paths()["0_hop"]
    template = _positive(path, "0_hop", 0)
    assert template.expression == "the small trash can"
    rewritten = _positive(path, "0_hop", 0, "a little trash can standing there", id=7)
    seen: list[list[str]] = []
    real = phrases_mod.load_parser

    class Spy:
        def __init__(self, nlp):
            self.nlp = nlp

        def pipe(self, texts, batch_size=256):
            seen.append(list(texts))
            return self.nlp.pipe(texts, batch_size=batch_size)

    monkeypatch.setattr(phrases_mod, "load_parser", lambda: None if real() is None else Spy(real()))
    stats: Counter = Counter()
    rows = phrases_of([template], WORDS, RES.renderer.templates, stats)
    assert rows == [PhrasesRow(id=0, phrases=[{"text": "the small trash can", "start": 0, "end": 19, "node": 0}],
                               chunks=1)]  # fmt: skip
    assert seen == [] and stats == Counter({"phrases_from_template": 1, "phrases_parsed": 0})
    rows = phrases_of([template, rewritten], WORDS, RES.renderer.templates, stats)
    assert rows[0].phrases[0]["text"] == "the small trash can"
    assert stats["phrases_parsed"] == 1
    if real() is not None:
        assert seen == [["a little trash can standing there"]]


def test_a_text_that_does_not_read_as_its_template_takes_no_template_phrases():
    path = _paths()["1_hop"]
    text = RES.renderer.templates.types["1_hop"][0]
    good = RES.renderer.render_with(path, "1_hop", f"1_hop@{RES.renderer.templates.version}#0", None)
    assert template_chunks(good, path, "1_hop", text)
    for changed in (good.replace("white ", ""), good.replace("lid", "cover"), good + " there", good.upper()):
        assert template_chunks(changed, path, "1_hop", text) == [], changed
    assert template_chunks(good.replace("white", "white white"), path, "1_hop", text) == []
