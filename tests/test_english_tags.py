"""The English check's tagger (`generators/text/english_tags.py`) gives every token the text, tag, part of speech,
morphology and lemma the full spaCy pipeline gives it, while applying the attribute ruler and the lemmatizer
by table."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hardneg.generators.text.english_tags import Tagger
from hardneg.generators.text.rewrite import load_nlp

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SHAPES = (
    "the {a} {o} that is {r} the {o2}", "a {o} {r} an {a} {o2}", "the {o}s which are {r} the {a} {o2}",
    "the {o} that has the same color as the {o2} in the image", "an {a} {o2} {r} a {o}",
    "the {a} {o} {r} the {o2} and {r2} a {o}", "{o} {r} {o2}", "The {A} {O} Is {R} The {O2}.",
)  # fmt: skip
ODD = [
    "I gonna see the dog", "she is gonna sit on it", "ain't that the cat", "Let's look at the man",
    "the dog which isnt brown", "Ima dog", "y'all near the car", "c'mon the cat", "the  man   near\tthe car",
    "  ", "", "something on the table", "there is nothing here", "the 2 dogs", "it's her hat", "they have been there",
    "the man, who is tall", "the dog (brown) near the car", "nothin' on the shelf", "the A-frame house",
]  # fmt: skip


def _lines(name: str) -> list[str]:
    """Visual Genome's vocabularies when they are beside the checkout; else the bundled word tables' own
    nouns, attributes and relations (so the comparison runs on any clone)."""
    path = DATA / name
    if path.exists():
        return [w.strip().split(",")[0] for w in path.read_text().splitlines() if w.strip()]
    from hardneg.core.words.attribute_table import AttributeTable
    from hardneg.core.words.table import Words

    if name.startswith("vg_objects"):
        return sorted(Words.load().known_nouns)
    if name.startswith("vg_attributes"):
        return sorted({a for cat in AttributeTable.load().categories.values() for a in cat})
    return ["on", "in", "to the left of", "behind", "holding", "wearing", "near", "under", "next to", "above"]


def _texts(n: int, seed: int = 0) -> list[str]:
    objects, attrs, rels = (_lines(f) for f in ("vg_objects_1600.txt", "vg_attributes_400.txt",
                                                 "vg_relations_450_lemmatized.txt"))  # fmt: skip
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        o, o2, a = rng.choice(objects), rng.choice(objects), rng.choice(attrs)
        r, r2 = rng.choice(rels), rng.choice(rels)
        shape = rng.choice(SHAPES)
        out.append(shape.format(o=o, o2=o2, a=a, r=r, r2=r2, O=o.title(), O2=o2.title(), A=a.title(), R=r.title()))
    return out + ODD


def _full(nlp, texts):
    return [[(t.text, t.tag_, t.pos_, str(t.morph), t.lemma_) for t in doc] for doc in nlp.pipe(texts)]


def _fast(tagger, texts):
    return [[(w.text, w.tag_, w.pos_, w.morph, w.lemma_) for w in words] for words in tagger.words(texts)]


def test_the_table_tagger_equals_the_full_pipeline_on_every_token():
    nlp = load_nlp()
    if "tagger" not in nlp.pipe_names:
        pytest.skip("no English model installed: the check runs spaCy's own components")
    tagger = Tagger(nlp)
    assert tagger.emulated  # the installed pipeline's ruler patterns are all ones the table evaluates
    texts = _texts(2500)
    full, fast = _full(nlp, texts), _fast(tagger, texts)
    differ = [(t, a, b) for t, a, b in zip(texts, full, fast, strict=True) if a != b]
    assert not differ, differ[:3]
    assert len(tagger._attrs) > 500  # the table was used, not spaCy's components


def test_a_text_that_could_start_a_multi_token_pattern_goes_through_spacys_own_components(monkeypatch):
    nlp = load_nlp()
    if "tagger" not in nlp.pipe_names:
        pytest.skip("no English model installed")
    tagger = Tagger(nlp)
    texts = ["I gonna see the dog", "the dog near the car", "y'all near the car"]
    want = _full(nlp, texts)
    ran: list[str] = []
    ruler = nlp.get_pipe("attribute_ruler")
    real = type(ruler).__call__

    def counting(self, doc):
        ran.append(doc.text)
        return real(self, doc)

    monkeypatch.setattr(type(ruler), "__call__", counting)
    assert _fast(tagger, texts) == want
    assert "the dog near the car" not in ran and "I gonna see the dog" in ran


def test_a_ruler_pattern_the_table_cannot_evaluate_hands_everything_back_to_spacy():
    """A pattern on an attribute the table does not read (here ENT_TYPE) makes the tagger run the whole
    pipeline, with the same answers."""
    import spacy

    base = load_nlp()
    if "tagger" not in base.pipe_names:
        pytest.skip("no English model installed")
    from hardneg.generators.text.rewrite import SPACY_MODEL

    nlp = spacy.load(SPACY_MODEL, exclude=["parser", "ner"])
    nlp.get_pipe("attribute_ruler").add([[{"ENT_TYPE": "GPE"}]], {"POS": "PROPN"})
    tagger = Tagger(nlp)
    assert not tagger.emulated
    texts = _texts(50, seed=1)
    assert _fast(tagger, texts) == _full(nlp, texts)


def test_the_pipeline_on_numpys_blas_tags_every_token_as_spacys_default_blis():
    """`load_nlp` moves the networks' matrix products from blis to numpy's BLAS (2.2x faster here): every
    token keeps the tag, part of speech, morphology and lemma spaCy's default ops give it."""
    import spacy
    from thinc.api import NumpyOps

    from hardneg.generators.text.rewrite import SPACY_MODEL

    nlp = load_nlp()
    if "tagger" not in nlp.pipe_names:
        pytest.skip("no English model installed")
    for name in ("tok2vec", "tagger"):
        ops = {type(n.ops).__name__ + str(getattr(n.ops, "use_blis", "")) for n in nlp.get_pipe(name).model.walk()}
        assert ops == {"NumpyOpsFalse"}, (name, ops)
    default = spacy.load(SPACY_MODEL, exclude=["parser", "ner"])
    ops = next(default.get_pipe("tok2vec").model.walk()).ops
    assert isinstance(ops, NumpyOps) and ops.use_blis  # the comparison is with blis
    texts = _texts(2500, seed=2)
    assert _full(nlp, texts) == _full(default, texts)
