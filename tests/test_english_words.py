"""The English check reads template expressions and offline rewrites from the word tables
(`generators/text/english_words.py`) with the verdict spaCy's tags give: on every rendered positive of the
demo and of a GQA-like corpus, every lexicon rewrite of them and every text negative of the demo; spaCy
still tags what the tables cannot read."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import orjson
import pytest

from benchmarks.synthetic_gqa import write_synthetic_gqa
from hardneg.backends.lexicon import LexiconBackend
from hardneg.core.config import load_config
from hardneg.core.gqa.loader import load_graphs
from hardneg.core.records import PathNode
from hardneg.core.rows import PositiveRow
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.paths.expressions import Templates
from hardneg.generators.paths.stage import PathResources, generate_positives
from hardneg.generators.text.english import EnglishCheck, check_positives, tagger
from hardneg.generators.text.english_words import FUNCTION_WORDS, TableReader
from tests.helpers import node, positive_row
from tests.runs import small_run

LEXICON = Lexicon.load(Path("templates/lexicon.v1.yaml"))


@pytest.fixture(scope="module")
def res() -> PathResources:
    return PathResources.load(load_config(None, {}))


def _reader(res: PathResources) -> TableReader:
    return TableReader(res.words, res.table, res.renderer.relations, LEXICON)


def _rows(run: Path, stage: str, kind: str) -> list[dict]:
    files = sorted((run / "work" / stage).glob(f"{kind}-*.jsonl"))
    return [orjson.loads(line) for f in files for line in f.read_bytes().splitlines()]


def _with_rewrites(cases: list[tuple[str, PathNode]]) -> list[tuple[str, PathNode]]:
    backend = LexiconBackend(LEXICON)
    return [(t, path) for text, path in cases for t in (text, *backend.variants(text))]


def _compare(res: PathResources, cases: list[tuple[str, PathNode]]) -> Counter:
    """Both routes on every (text, path): where the tables read a text, its verdict is the tagged one."""
    reader, check = _reader(res), EnglishCheck(res.words)
    texts = sorted({t for t, _ in cases})
    tagged = dict(zip(texts, tagger().words(texts), strict=True))
    got: Counter = Counter()
    for text, path in cases:
        words = reader.words(text, reader.parts(path))
        if words is None:
            got["tagged"] += 1
            continue
        verdict = check.check_doc(words)
        assert verdict == check.check_doc(tagged[text]), (text, path)
        got["read"] += 1
        got["refused" if verdict else "kept"] += 1
    return got


def test_the_tables_and_the_tagger_agree_on_the_demo(res):
    run = small_run()
    cases = _with_rewrites([(r["expression"], PathNode.from_json(r["path"])) for r in _rows(run, "paths", "positives")])
    for r in _rows(run, "language", "negatives"):
        cases += [(t, PathNode.from_json(r["path"])) for t in {r["expression"], r["template_expression"]}]
    got = _compare(res, cases)
    assert got["read"] == len(cases) > 2000, got  # the demo's words are all in the tables


def test_the_tables_and_the_tagger_agree_on_a_gqa_like_corpus(res, tmp_path):
    f = write_synthetic_gqa(tmp_path / "g.json", n_images=40, seed=3)
    cfg = load_config(None, {"inputs": {"scene_graphs": str(f)}})
    cases = []
    for check in load_graphs(f):
        if check.graph is not None:
            cases += [(p.expression, p.node()) for p in generate_positives(check.graph, cfg, res)[0]]
    # a plural the corpus may or may not hold a positive of (the path rules decide): its rewrite reads badly
    cases.append(("the yellow bananas", node("bananas", "yellow")))
    got = _compare(res, _with_rewrites(cases))
    assert got["refused"] > 0, got  # "the yellow bananas" -> "the bananas that is yellow"
    assert got["tagged"] <= 0.1 * sum(got.values()), got


def test_the_demo_run_reads_its_texts_from_the_tables():
    done = [orjson.loads(f.read_bytes()) for f in (small_run() / "work" / "language" / "_done").glob("*.json")]
    stats = Counter()
    for d in done:
        stats.update({k: v for k, v in d["stats"].items() if k.startswith("english:")})
    assert stats["english:read"] > 1000 and stats["english:tagged"] == 0, stats


def test_function_words_cover_the_templates_and_the_paraphrases():
    literal = [re.sub(r"\{\w+\}", " ", t) for ts in Templates.load(Path("templates/expressions.v1.yaml")).types.values()
               for t in ts]  # fmt: skip
    literal += [re.sub(r"\\\d", " ", b) for _, b in LEXICON.paraphrases]
    words = {w for text in literal for w in text.split()} | {"a", "an", "is", "are", "has", "have"}  # the slots'
    assert words == set(FUNCTION_WORDS), words ^ set(FUNCTION_WORDS)


PLATES = node("plates", "white", rel=[("to the left of", node("cup"))])


@pytest.mark.parametrize(
    ("path", "text", "read"),
    [
        (PLATES, "the white plates to the left of a cup", True),
        (PLATES, "the plates which are on the left side of a cup in the image", True),  # lexicon words
        (PLATES, "the white plates beside the cup", False),  # a synonym of another relation
        (PLATES, "the white dishes to the left of a cup", False),  # not the path's name
        (PLATES, "the white plates to the left of a mug", False),
        (node("hot dog"), "the dog that is hot", False),  # a rewrite split the name
        (node("orange", rel=[("on", node("table", "orange"))]), "the orange on the orange table", False),  # 2 ways
        (node("cup", rel=[("on a", node("table"))]), "the cup on a table", False),  # an article in a relation
        (node("zorblat"), "the zorblat", False),  # a name the tables do not know
        (node("cup", "zorbish"), "the zorbish cup", False),  # an attribute they do not know
    ],
)
def test_what_the_tables_read(res, path, text, read):
    reader = _reader(res)
    assert (reader.words(text, reader.parts(path)) is not None) is read


def test_the_tables_refuse_what_the_tagger_refuses(res):
    reader, check = _reader(res), EnglishCheck(res.words)
    bananas = node("bananas", "yellow")
    for text, why in [
        ("the bananas that is yellow", "'bananas ... is': the verb does not agree with its noun"),
        ("a yellow bananas", "'a' before the plural noun 'bananas'"),
        ("an bananas", "'an' before the plural noun 'bananas'"),
        ("the bananas that are yellow", None),
    ]:
        assert check.check_doc(reader.words(text, reader.parts(bananas))) == why == check.check(text)
    apple = node("apple", "red")
    assert check.check_doc(reader.words("a apple", reader.parts(apple))) == "'a apple' should read 'an apple'"


def _positive(text: str, template: str, path: PathNode) -> PositiveRow:
    return positive_row(path, text, template_expression=template, rewrites=[text], expression_source="rewrite#1")


@pytest.mark.parametrize(("rewrites_read", "read", "tagged"), [(True, 2, 0), (False, 1, 1)])
def test_only_the_offline_lexicons_rewrites_are_read(res, rewrites_read, read, tagged):
    """An LLM's rewrite is tagged even when its words are the path's ("the bananas that is yellow" is
    still refused, and the template text kept)."""
    check = EnglishCheck(res.words, _reader(res), rewrites_read=rewrites_read)
    r = _positive("the bananas that is yellow", "the yellow bananas", node("bananas", "yellow"))
    kept, rejects = check_positives([r], check)
    assert kept == [r] and not rejects
    assert r.expression == "the yellow bananas" and r.rewrites == [] and r.expression_source == "template"
    assert (check.stats["read"], check.stats["tagged"]) == (read, tagged)
