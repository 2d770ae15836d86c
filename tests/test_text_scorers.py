"""Text scorers for adversarial refinement: n-gram plausibility, grammar rules, a tiny real classifier."""

from __future__ import annotations

import math
import sys

import pytest

from hardneg.core.errors import ConfigError, HardnegError, MissingDependency
from hardneg.filters.scorers.text import (
    EOS,
    PENALTY,
    UNK,
    GrammarRuleScorer,
    NGramScorer,
    TransformersClassifierScorer,
)

CORPUS = [
    "the red ball to the left of the man",
    "the blue cup on the table",
    "the white plate next to the cup",
    "the man to the left of the red car",
    "the woman holding the blue cup",
    "the cup on the white plate",
    "the red car to the right of the woman",
    "the small dog next to the man",
]


@pytest.fixture(scope="module")
def ngram() -> NGramScorer:
    return NGramScorer().fit(CORPUS)


# ------------------------------------------------------------------------------------------ n-gram


def test_ngram_prefers_corpus_like_text_over_shuffled_and_reordered(ngram):
    natural = "the blue cup to the left of the man"  # unseen sentence, seen word order
    shuffled = "left the of blue the man cup to"  # same words
    reordered = "the cup blue to the of left man the"  # same words, attribute after noun, "of left"
    s_nat, s_shuf, s_re = ngram.score([natural, shuffled, reordered])
    assert s_nat > s_shuf + 1.0
    assert s_nat > s_re + 1.0


def test_ngram_smoothing_gives_finite_scores_for_unseen_words(ngram):
    scores = ngram.score(["the zebra on the table", "zebra giraffe okapi", "", "THE Blue CUP!"])
    assert all(math.isfinite(s) and s < 0 for s in scores)
    # an unseen noun in a seen frame beats unseen words throughout
    assert scores[0] > scores[1]
    # lower-cased and punctuation-free: same as the plain corpus spelling
    assert scores[3] == ngram.score(["the blue cup"])[0]


@pytest.mark.parametrize("context", [("<s>", "<s>"), ("the", "red"), ("to", "the"), ("zebra", "the"), ("a", "b")])
def test_ngram_probabilities_sum_to_one(ngram, context):
    total = sum(ngram.prob(w, context) for w in ngram.vocabulary)
    assert total == pytest.approx(1.0, abs=1e-9)
    assert UNK in ngram.vocabulary and EOS in ngram.vocabulary


def test_ngram_score_is_mean_log_probability_per_token(ngram):
    text = "the red car"
    toks = ["<s>", "<s>", "the", "red", "car", EOS]
    lps = [math.log(ngram.prob(w, (u, v))) for u, v, w in zip(toks, toks[1:], toks[2:], strict=False)]
    assert ngram.score([text]) == [pytest.approx(sum(lps) / 4)]
    # a frequent corpus sentence repeated is not penalised for its length the way a sum would be
    once = ngram.score(["the cup on the table"])[0]
    twice = ngram.score(["the cup on the table the cup on the table"])[0]
    assert twice > 2 * once


def test_ngram_is_deterministic_and_refit_replaces(ngram):
    texts = ["the red cup", "a dog near the car"]
    assert NGramScorer().fit(CORPUS).score(texts) == ngram.score(texts)
    other = NGramScorer().fit(["a dog near the car"] * 3)
    assert other.score(texts)[1] > ngram.score(texts)[1]
    with pytest.raises(RuntimeError, match="before fit"):
        NGramScorer().score(["the cup"])
    with pytest.raises(ValueError, match="at least one text"):
        NGramScorer().fit([])


# ------------------------------------------------------------------------------------------ grammar

MINIMAL_PAIRS = [
    ("article", "an apple on the table", "a apple on the table"),
    ("article", "a ball near the man", "an ball near the man"),
    ("agreement", "the plates that are white", "the plates that is white"),
    ("agreement", "the plate that is white", "the plate that are white"),
    ("repeated_word", "the cup on the table", "the cup on the the table"),
    ("contradictory_attributes", "the red ball", "the red blue ball"),
    ("contradictory_attributes", "the big cup", "the big small cup"),
    ("dangling_relation", "the cup to the left of the plate", "the cup to the left of"),
    ("too_short", "the cup", "cup"),
    ("empty", "the cup", "   "),
]


@pytest.mark.parametrize(("rule", "good", "bad"), MINIMAL_PAIRS, ids=[f"{r}:{b}" for r, _, b in MINIMAL_PAIRS])
def test_grammar_rule_penalises_its_violation(rule, good, bad):
    g = GrammarRuleScorer()
    assert g.violations(good) == []
    assert [r for r, _ in g.violations(bad)] == [rule]
    assert g.score([good, bad]) == [1.0, pytest.approx(max(0.0, 1.0 - PENALTY[rule]))]


@pytest.mark.parametrize(
    "text",
    [
        "an hour glass on the table",  # vowel sound after a consonant letter
        "a unicorn toy",  # consonant sound after a vowel letter
        "a one way sign",
        "the black and white dog",  # two colours joined by "and" are compatible
        "the dark blue car",  # shade modifiers are not colours
        "the big large truck",  # same-side sizes
        "the cup on the plates that is white",  # clause may attach to "cup"
        "the glass that is full",  # singular in -ss
        "the sheep that are grazing",  # either number: no judgement
        "the people who are sitting",
        "the lamp that is on",  # particle, not a dangling relation
    ],
)
def test_grammar_rules_respect_their_exceptions(text):
    assert GrammarRuleScorer().violations(text) == []


def test_grammar_irregular_plural_and_floor():
    g = GrammarRuleScorer()
    assert [r for r, _ in g.violations("the women that is standing")] == ["agreement"]
    worst = "a apple the the red blue ball that are to the left of"
    assert len(g.violations(worst)) >= 4
    assert g.score([worst]) == [0.0]  # 1 - sum floored at 0


def test_registry_builds_each_text_kind_and_rejects_bad_specs():
    from hardneg.filters.refine_stage import text_filter
    from hardneg.filters.scorers.text import GrammarFilter, NGramFilter, TransformersTextFilter

    assert isinstance(text_filter({"kind": "ngram"}, 0), NGramFilter)
    assert isinstance(text_filter({"kind": "grammar"}, 1), GrammarFilter)
    t = text_filter({"kind": "transformers", "model": "/nowhere", "label": 1, "batch_size": 4}, 0)
    assert isinstance(t, TransformersTextFilter)
    assert isinstance(t.scorer(), TransformersClassifierScorer) and t.scorer().batch_size == 4
    assert t.identity == "transformers-cls@v1:/nowhere:label=1"
    with pytest.raises(ConfigError, match="'clip' does not score text alone"):
        text_filter({"kind": "clip", "model": "x"}, 0)
    with pytest.raises(ConfigError, match="unknown filter 'ngrm' \\(did you mean 'ngram'\\?\\)"):
        text_filter({"kind": "ngrm"}, 0)
    with pytest.raises(ConfigError, match=r"refine.scorers\[1\].bins: unknown key"):
        text_filter({"kind": "grammar", "bins": 3}, 1)
    with pytest.raises(ConfigError, match="batch_size"):
        text_filter({"kind": "transformers", "model": "x", "batch_size": 0}, 0).scorer()


# ------------------------------------------------------------------------------------------ transformers

WORDS = [
    "the", "a", "an", "red", "blue", "white", "ball", "cup", "plate", "man", "woman", "to", "left", "right",
    "of", "on", "near", "table", "that", "is", "are",
]  # fmt: skip


def _tiny_classifier(path, num_labels: int) -> None:
    """A tiny random BERT classifier and a real WordPiece tokenizer, saved like a hub checkpoint."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    transformers = pytest.importorskip("transformers", reason="transformers not installed")
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tokenizer = transformers.BertTokenizer(vocab=vocab)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
        num_labels=num_labels,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(path)
    tokenizer.save_pretrained(path)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-cola")
    _tiny_classifier(path, num_labels=2)
    return path


TEXTS = [
    "the red ball",
    "a man on the table that is white",
    "",
    "the blue cup to the left of the woman near the plate",
    "zebra",
    "the the the",
    "an plate",
    "the woman that are near the cup",
    "red",
    "the cup on the table",
]


def test_transformers_scorer_matches_a_manual_forward_pass(tiny_dir):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    scorer = TransformersClassifierScorer(model=str(tiny_dir), batch_size=3)
    scores = scorer.score(TEXTS)
    assert len(scores) == len(TEXTS) and all(math.isfinite(s) and s <= 0 for s in scores)
    assert len(set(scores)) > 1  # the model does look at the text

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_dir).eval()
    with torch.no_grad():
        for text, got in zip(TEXTS, scores, strict=True):
            logits = model(**tok(text, return_tensors="pt")).logits[0]
            assert got == pytest.approx(torch.log_softmax(logits, -1)[-1].item(), abs=1e-5)


def test_transformers_scorer_is_deterministic_and_batch_size_independent(tiny_dir):
    one = TransformersClassifierScorer(model=str(tiny_dir), batch_size=1).score(TEXTS)
    eight = TransformersClassifierScorer(model=str(tiny_dir), batch_size=8)
    first = eight.score(TEXTS)
    assert eight.score(TEXTS) == first  # same scorer, model loaded once, same answer
    assert first == pytest.approx(one, abs=1e-5)
    assert eight.score([]) == []


def test_transformers_scorer_label_choice_and_range(tiny_dir):
    last = TransformersClassifierScorer(model=str(tiny_dir)).score(TEXTS)
    first = TransformersClassifierScorer(model=str(tiny_dir), label=0).score(TEXTS)
    for a, b in zip(first, last, strict=True):
        assert math.exp(a) + math.exp(b) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(HardnegError, match="does not load: label 2 out of range"):
        TransformersClassifierScorer(model=str(tiny_dir), label=2).score(["the cup"])


def test_transformers_one_logit_model_scores_its_raw_logit(tmp_path):
    _tiny_classifier(tmp_path, num_labels=1)
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    got = TransformersClassifierScorer(model=str(tmp_path)).score(["the red ball", "an plate"])
    tok = AutoTokenizer.from_pretrained(tmp_path)
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        want = [model(**tok(t, return_tensors="pt")).logits[0, 0].item() for t in ["the red ball", "an plate"]]
    assert got == pytest.approx(want, abs=1e-5)


def test_transformers_scorer_loads_lazily_and_hints_missing_dependencies(tmp_path, monkeypatch):
    lazy = TransformersClassifierScorer(model=str(tmp_path / "missing"))  # nothing loaded yet: no error
    assert lazy.version.endswith("label=-1")
    monkeypatch.setitem(sys.modules, "transformers", None)  # import now raises ImportError
    with pytest.raises(MissingDependency, match=r"pip install 'torch==2\.13\.0' 'transformers>=5,<6'"):
        lazy.score(["the cup"])


def test_the_ngram_lm_knows_the_corpus_words_its_texts_do_not_use():
    """A negative that puts a real word the positives happen not to use is not scored as an unknown word:
    the corpus vocabulary is known at the unigram level, and still below a word the texts do use."""
    from hardneg.filters.scorers.text import NGramScorer

    texts = ["the brown cup on the table", "the red cup near the plate", "the white plate on the table"]
    plain = NGramScorer().fit(texts)
    known = NGramScorer().fit(texts, vocabulary=["knife", "soda bottle", "cup"])
    assert "knife" not in plain.vocabulary and {"knife", "soda", "bottle"} <= known.vocabulary
    assert known.logprob("the brown knife on the table") > plain.logprob("the brown knife on the table")
    assert known.logprob("the brown cup on the table") > known.logprob("the brown knife on the table")
