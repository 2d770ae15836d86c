"""The rewrite validator's fast path (`generators/text/lexical.py`, `RewriteValidator.prove`) never disagrees
with the tagged check, on every lexicon rewrite of the demo and of a GQA-like corpus; the lexicon's
variants are those of the plain algorithm; spaCy loads without torch."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest

from benchmarks.synthetic_gqa import write_synthetic_gqa
from hardneg.backends.lexicon import LexiconBackend
from hardneg.core.config import load_config
from hardneg.core.gqa.loader import load_graphs
from hardneg.core.records import PathNode
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.paths.stage import PathResources, generate_positives
from hardneg.generators.text.rewrite import UNSURE, RewriteValidator, lexical
from tests.helpers import node
from tests.runs import small_run

LEXICON = Lexicon.load(Path("templates/lexicon.v1.yaml"))


def _demo_cases() -> list[tuple[PathNode, str]]:
    rows = [orjson.loads(line) for f in sorted((small_run() / "work" / "language").glob("positives-*.jsonl"))
            for line in f.read_bytes().splitlines()]  # fmt: skip
    return [(PathNode.from_json(r["path"]), r.get("template_expression") or r["expression"]) for r in rows]


@pytest.fixture(scope="module")
def gqa_like(tmp_path_factory) -> tuple[list[tuple[PathNode, str]], frozenset[str]]:
    """Positives of a small synthetic GQA-like corpus (its long tail of names, GQA's relations), with the
    corpus's object names."""
    f = write_synthetic_gqa(tmp_path_factory.mktemp("gqa") / "g.json", n_images=40, seed=3)
    cfg = load_config(None, {"inputs": {"scene_graphs": str(f)}})
    res = PathResources.load(cfg)
    cases, names = [], set()
    for check in load_graphs(f):
        if check.graph is None:
            continue
        names.update(o.name for o in check.graph.objects.values())
        for p in generate_positives(check.graph, cfg, res)[0]:
            cases.append((p.node(), p.expression))
    return cases[:160], frozenset(names)


def _agree(cases: list[tuple[PathNode, str]], names: frozenset[str]) -> Counter:
    """Every variant the lexicon makes of every case: where `prove` decides, the tagged check agrees, and
    the pipeline's words and lemmas are what `lexical()` says they can be."""
    v = RewriteValidator(AttributeTable.load(), LEXICON, names)
    backend = LexiconBackend(LEXICON)
    lex = lexical()
    got: Counter = Counter()
    for path, original in cases:
        for text in (original, *backend.variants(original)):
            lemmas, words = v.analyse(text)
            assert lex.words(text) == words, text
            assert all(lem in lex.candidates(w) for lem, w in zip(lemmas, words, strict=True)), text
            proved = v.prove(path, original, text)
            if proved is UNSURE:
                got["unsure"] += 1
                continue
            assert proved == v.check_tagged(path, original, text), (original, text)
            got["rejected" if proved else "kept"] += 1
    return got


def test_the_fast_path_agrees_with_the_tagged_check_on_the_demo():
    got = _agree(_demo_cases(), frozenset({"ball", "box", "cup", "plate", "chair", "table", "picture"}))
    assert got["kept"] > 100 and got["rejected"] > 10
    assert got["unsure"] <= 0.02 * sum(got.values()), got  # the tagger is the exception


def test_the_fast_path_agrees_with_the_tagged_check_on_a_gqa_like_corpus(gqa_like):
    cases, names = gqa_like
    got = _agree(cases, names)
    assert got["kept"] > 300 and got["rejected"] > 50, got
    assert got["unsure"] <= 0.02 * sum(got.values()), got


PATH = node("plate", "white", rel=[("to the left of", node("cup"))])
ORIGINAL = "the white plate to the left of the cup"


@pytest.mark.parametrize(
    ("path", "original", "text", "why"),
    [
        (PATH, ORIGINAL, "the white plate which is to the left of the cup", None),  # function words only
        (PATH, ORIGINAL, "the white plate on the left of the cup", None),  # a listed synonym
        (PATH, ORIGINAL, "the white plate to the left of the cup in the picture", "invents object 'picture'"),
        (PATH, ORIGINAL, "the white dish to the left of the cup", "drops object 'plate'"),
        (node("hot dog"), "the hot dog", "the dog that is hot", "drops object 'hot dog'"),  # rule 9 splits it
    ],
)
def test_what_the_fast_path_proves_alone(path, original, text, why):
    v = RewriteValidator(AttributeTable.load(), LEXICON, frozenset({"plate", "cup", "picture", "hot dog"}))
    assert v.prove(path, original, text) == why == v.check_tagged(path, original, text)


def test_texts_with_odd_spacing_go_to_the_tagger():
    v = RewriteValidator(AttributeTable.load(), LEXICON, frozenset({"plate", "cup"}))
    for text in ("the white  plate to the left of the cup", " the white plate to the left of the cup", "a\tb"):
        assert lexical().words(text) is None
        assert v.prove(PATH, ORIGINAL, text) is UNSURE
    assert v.check(PATH, ORIGINAL, "the white  plate to the left of the cup") is None
    assert v.stats["tagged"] == 1


def _plain_variants(backend: LexiconBackend, text: str) -> list[str]:
    """The lexicon's variants by the plain algorithm: every rule, every synonym, every pair of rules."""
    rules = backend._rules
    out = {rx.sub(repl, text, count=1) for rx, repl in rules}
    for word, syns in backend._synonyms.items():
        pat = re.compile(rf"\b{re.escape(word)}\b")
        if pat.search(text):
            out.update(pat.sub(s, text, count=1) for s in syns)
    for (ra, a), (rb, b) in itertools.combinations(rules, 2):
        if ra.pattern != rb.pattern:
            out.add(rb.sub(b, ra.sub(a, text, count=1), count=1))
    out.discard(text)
    return sorted(" ".join(v.split()) for v in out)


def test_lexicon_variants_are_the_plain_algorithms(gqa_like):
    backend = LexiconBackend(LEXICON)
    texts = [t for _, t in gqa_like[0]] + [t for _, t in _demo_cases()]
    texts += ["", "the cup", "the hot dog", "the cup that has the same color as the plate", "the man on the on"]
    for t in texts:
        assert backend.variants(t) == _plain_variants(backend, t), t


def test_spacy_loads_without_importing_torch():
    code = (
        "import sys; from hardneg.generators.text.rewrite import load_nlp; nlp = load_nlp(); "
        "print('torch' in sys.modules, nlp.pipe_names)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("False") and "parser" not in out and "lemmatizer" in out


def test_primed_analyses_are_the_ones_asked_one_at_a_time():
    """`prime` parses every phrase of a batch of paths in one `nlp.pipe`: each analysis is what parsing the
    phrase alone gives, and the checks after it parse nothing more."""
    from hardneg.generators.text.negatives import iter_keep_words

    paths = [path for path, _ in _demo_cases()][:300]
    phrases = {p for path in paths for _, p in iter_keep_words(path)}
    assert len(phrases) > 20
    one = RewriteValidator(AttributeTable.load(), LEXICON, frozenset())
    batch = RewriteValidator(AttributeTable.load(), LEXICON, frozenset())
    batch.prime(paths)
    primed = dict(batch._cache)
    assert phrases <= set(primed)
    assert {t: one.analyse(t) for t in primed} == primed
    for path in paths:
        batch._parts(path)
    assert batch._cache == primed  # nothing left to parse
