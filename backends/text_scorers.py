"""Text-only scorers for SugarCREPE's adversarial refinement (SPEC section 5, `filters.refine`).

SugarCREPE scores each positive and negative text with two blind (image-free) models, a plausibility
model and a grammar-acceptability classifier, and balances the benchmark so neither can tell the
positive from the negative. This module puts those roles behind one protocol, `TextScorer`:

- `NGramScorer` (offline): a word-trigram language model with interpolated Kneser-Ney smoothing, fit on
  the run's positive expressions; the plausibility-model stand-in.
- `GrammarRuleScorer` (offline): documented acceptability rules scored in [0, 1]; the
  grammar-classifier stand-in.
- `TransformersClassifierScorer`: any `transformers` sequence classifier by hub id or local directory,
  which is how the original scorers (e.g. a CoLA acceptability model) are plugged in.

`make_scorer` builds one from a config dict. Higher scores always mean more plausible / grammatical.
"""

from __future__ import annotations

import itertools
import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

logger = logging.getLogger(__name__)

MODELS_HINT = "pip install 'torch==2.13.0' 'transformers>=5,<6'  (or: pip install -e '.[models]')"


class TextScorer(Protocol):
    version: str  # recorded in provenance next to the scores

    def score(self, texts: Sequence[str]) -> list[float]:
        """One score per text, aligned; higher = more plausible / grammatical."""
        ...


# --------------------------------------------------------------------------------------------------
# N-gram plausibility


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _discount(counts: Counter[tuple[str, ...]]) -> float:
    # Ney's estimate D = n1 / (n1 + 2 n2) from the counts of count 1 and 2, kept in a sane range
    n1 = sum(1 for c in counts.values() if c == 1)
    n2 = sum(1 for c in counts.values() if c == 2)
    return 0.75 if n1 + n2 == 0 else min(0.9, max(0.1, n1 / (n1 + 2 * n2)))


class NGramScorer:
    """Word-trigram LM with interpolated Kneser-Ney smoothing (Chen & Goodman, 1998), fit on a corpus.

    Score = mean natural-log probability per predicted token (the words and the closing ``</s>``), so
    long texts are not penalised for length: "how typical this word sequence is of the run's positives".
    Text is lower-cased and split into words; each sentence is padded with ``<s> <s>`` and ``</s>``.
    Words unseen in the corpus map to ``<unk>``, which gets the uniform share of the unigram level, so
    every score is finite. Deterministic: counts only, no sampling.
    """

    version = "ngram-kn3@v1"

    def __init__(self) -> None:
        self._fitted = False

    def fit(self, texts: Sequence[str]) -> NGramScorer:
        """Count trigrams of `texts` (replacing any earlier fit); returns self."""
        if not texts:
            raise ValueError("NGramScorer.fit needs at least one text")
        tri: Counter[tuple[str, ...]] = Counter()
        for text in texts:
            toks = [BOS, BOS, *_words(text), EOS]
            tri.update(zip(toks, toks[1:], toks[2:], strict=False))
        # Lower orders use continuation counts: in how many distinct contexts a (shorter) n-gram appears.
        bi_cont: Counter[tuple[str, ...]] = Counter((v, w) for (_, v, w) in tri)
        uni_cont: Counter[tuple[str, ...]] = Counter((w,) for (_, w) in bi_cont)
        self._tri, self._bi, self._uni = tri, bi_cont, uni_cont
        self._d3, self._d2, self._d1 = _discount(tri), _discount(bi_cont), _discount(uni_cont)
        # Context totals and the number of distinct followers of each context (the back-off mass).
        self._ctx3: Counter[tuple[str, str]] = Counter()
        self._fol3: Counter[tuple[str, str]] = Counter()
        for (u, v, _), c in tri.items():
            self._ctx3[(u, v)] += c
            self._fol3[(u, v)] += 1
        self._ctx2: Counter[str] = Counter()
        self._fol2: Counter[str] = Counter()
        for (v, _), c in bi_cont.items():
            self._ctx2[v] += c
            self._fol2[v] += 1
        self._uni_total = sum(uni_cont.values())
        self._vocab = {w for (w,) in uni_cont}  # includes </s>, never <s>
        self._fitted = True
        logger.debug("NGramScorer: %d texts, %d trigram types, %d words", len(texts), len(tri), len(self._vocab))
        return self

    def _p1(self, w: str) -> float:
        # +1 for <unk>: the uniform share is spread over the vocabulary and the unknown word
        uniform = 1.0 / (len(self._vocab) + 1)
        lam = self._d1 * len(self._uni) / self._uni_total
        return max(self._uni.get((w,), 0) - self._d1, 0.0) / self._uni_total + lam * uniform

    def _p2(self, v: str, w: str) -> float:
        total = self._ctx2.get(v, 0)
        if total == 0:
            return self._p1(w)
        lam = self._d2 * self._fol2[v] / total
        return max(self._bi.get((v, w), 0) - self._d2, 0.0) / total + lam * self._p1(w)

    def _p3(self, u: str, v: str, w: str) -> float:
        total = self._ctx3.get((u, v), 0)
        if total == 0:
            return self._p2(v, w)
        lam = self._d3 * self._fol3[(u, v)] / total
        return max(self._tri.get((u, v, w), 0) - self._d3, 0.0) / total + lam * self._p2(v, w)

    @property
    def vocabulary(self) -> frozenset[str]:
        """The predictable tokens: corpus words, ``</s>`` and ``<unk>``."""
        self._require_fit()
        return frozenset(self._vocab | {UNK})

    def prob(self, word: str, context: tuple[str, str]) -> float:
        """P(word | context) with interpolated Kneser-Ney; unseen words (context included) are ``<unk>``."""
        self._require_fit()
        u, v = (t if t in self._vocab or t == BOS else UNK for t in context)
        return self._p3(u, v, word if word in self._vocab else UNK)

    def logprob(self, text: str) -> float:
        """Mean log-probability per predicted token of `text`."""
        self._require_fit()
        words = [w if w in self._vocab else UNK for w in _words(text)]
        toks = [BOS, BOS, *words, EOS]
        lps = [math.log(self._p3(u, v, w)) for u, v, w in zip(toks, toks[1:], toks[2:], strict=False)]
        return sum(lps) / len(lps)

    def score(self, texts: Sequence[str]) -> list[float]:
        return [self.logprob(t) for t in texts]

    def _require_fit(self) -> None:
        if not self._fitted:
            raise RuntimeError("NGramScorer used before fit(texts): fit it on the run's positive expressions")


# --------------------------------------------------------------------------------------------------
# Rule-based grammar acceptability

# Per-occurrence penalties; the score is 1 - sum, floored at 0.
PENALTY = {
    "empty": 1.0,  # no words at all
    "too_short": 0.3,  # a single word cannot refer to one object among many
    "article": 0.3,  # "a apple", "an ball"
    "agreement": 0.3,  # "the plates that is"
    "repeated_word": 0.3,  # "the the cup"
    "contradictory_attributes": 0.4,  # "the red blue ball"
    "dangling_relation": 0.5,  # "the cup to the left of"
}

# "an" words that start with a consonant letter, and "a" words that start with a vowel letter.
_VOWEL_SOUND_PREFIXES = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_PREFIXES = ("one", "once", "use", "usu", "uti", "eu", "ewe", "uku", "ubiq", "unicorn")
_CONSONANT_SOUND_WORDS = {
    "uniform", "uniforms", "unit", "units", "united", "universe", "universal", "university", "unique",
    "union", "unicycle", "unisex", "urinal", "urine", "utensil", "utensils", "ufo",
}  # fmt: skip

_SINGULAR_VERBS = {"is", "was", "has", "does"}
_PLURAL_VERBS = {"are", "were", "have", "do"}
_REL_PRONOUNS = {"that", "which", "who"}
# Nouns whose number the "-s" heuristic gets wrong, and ones that are both (no judgement).
_IRREGULAR_PLURALS = {"men", "women", "people", "children", "feet", "teeth", "mice", "geese", "oxen", "police"}
_SINGULAR_S = {
    "glass", "grass", "dress", "bus", "cactus", "octopus", "walrus", "asparagus", "hummus", "lens", "gas",
    "canvas", "tennis", "news", "mattress", "bonus", "circus", "iris", "atlas", "compass", "chess", "bass",
    "campus", "virus", "hippopotamus", "platypus", "lotus", "abacus", "bias", "this", "his", "its",
}  # fmt: skip
_EITHER_NUMBER = {"sheep", "deer", "fish", "series", "species", "aircraft", "moose", "bison", "salmon"}
# Words that start a relation phrase: a noun right before one is another candidate head of a relative clause.
_PREPOSITIONS = {
    "on", "in", "at", "near", "by", "with", "under", "above", "below", "behind", "beside", "between", "to",
    "of", "inside", "outside", "over", "next", "onto", "into", "from", "against", "along", "across",
    "around", "beneath", "underneath", "holding", "wearing", "carrying",
}  # fmt: skip
# A referring expression may not end on these: the relation (or determiner) lacks its object.
_NEEDS_OBJECT = {
    "the", "a", "an", "of", "to", "with", "from", "into", "onto", "at", "beside", "between", "beneath",
    "underneath", "toward", "towards", "among", "than", "and", "or", "that", "which", "who", "this",
}  # fmt: skip
# Mutually exclusive values per category; light/dark/pale stay out so "dark blue" is not a contradiction.
_EXCLUSIVE: dict[str, frozenset[str]] = {
    "color": frozenset({
        "red", "blue", "green", "yellow", "white", "black", "brown", "gray", "grey", "orange", "pink", "purple",
        "silver", "gold", "beige", "tan", "maroon", "turquoise",
    }),
    "size": frozenset({"big", "large", "small", "little", "tiny", "huge", "giant"}),
    "height": frozenset({"tall", "short"}),
    "length": frozenset({"long", "short"}),
    "state_open": frozenset({"open", "closed"}),
    "fill": frozenset({"empty", "full"}),
    "wetness": frozenset({"wet", "dry"}),
    "age": frozenset({"young", "old"}),
}  # fmt: skip
# Pairs inside a category that are compatible ("big" and "huge" are both large).
_COMPATIBLE = {frozenset(p) for p in (("big", "large"), ("small", "little"), ("small", "tiny"), ("little", "tiny"))}
_COMPATIBLE |= {frozenset(p) for p in (("huge", "giant"), ("big", "huge"), ("large", "huge"), ("gray", "grey"))}


def _vowel_sound(word: str) -> bool | None:
    """Whether `word` starts with a vowel sound; None when the heuristic should not judge (digits)."""
    if not word[0].isalpha():
        return None
    if word.startswith(_VOWEL_SOUND_PREFIXES):
        return True
    if word in _CONSONANT_SOUND_WORDS or word.startswith(_CONSONANT_SOUND_PREFIXES):
        return False
    return word[0] in "aeiou"


def _number(word: str) -> str | None:
    """Number of a would-be noun ("plural", "singular", None: cannot tell): "-s" heuristic plus lists."""
    if word in _EITHER_NUMBER or len(word) < 3 or not word.isalpha():
        return None
    if word in _IRREGULAR_PLURALS:
        return "plural"
    if word in _SINGULAR_S or word.endswith(("ss", "us", "is")):
        return "singular"
    return "plural" if word.endswith("s") else "singular"


class GrammarRuleScorer:
    """Rule-based acceptability in [0, 1]: SugarCREPE's grammar-classifier stand-in, offline.

    Score = max(0, 1 - sum of penalties), one penalty per violation (`PENALTY`):
    - empty (1.0): no words. too_short (0.3): one word.
    - article (0.3): "a" before a vowel sound or "an" before a consonant sound (first letter plus
      exception lists: "an hour", "a unicorn", "a one-way sign").
    - agreement (0.3): in "<noun> that|which|who <verb>", a singular verb (is/was/has/does) after a
      plural noun or the reverse ("the plates that is"). Number comes from an "-s" heuristic with lists of
      irregular plurals, singulars in "-s" and either-number nouns (no judgement). The clause may attach
      to an earlier noun ("the cup on the plates that is white"): if the word before any earlier
      preposition agrees with the verb, no penalty.
    - repeated_word (0.3): the same word twice in a row ("the the").
    - contradictory_attributes (0.4): two adjacent different values of one exclusive category on one
      noun ("the red blue ball", "the big small cup"); "black and white" is not adjacent, so allowed.
    - dangling_relation (0.5): the text ends on a word that needs an object ("to the left of", "the").
    """

    version = "grammar-rules@v1"

    def violations(self, text: str) -> list[tuple[str, str]]:
        """(rule, detail) per violation; the score is derived from this list."""
        words = _words(text)
        if not words:
            return [("empty", "no words")]
        out: list[tuple[str, str]] = []
        if len(words) == 1:
            out.append(("too_short", words[0]))
        for i, (w, nxt) in enumerate(itertools.pairwise(words)):
            if w == nxt:
                out.append(("repeated_word", f"{w} {nxt}"))
            if w in ("a", "an"):
                vowel = _vowel_sound(nxt)
                if vowel is not None and vowel != (w == "an"):
                    out.append(("article", f"{w} {nxt}"))
            if i + 2 < len(words) and nxt in _REL_PRONOUNS and words[i + 2] in _SINGULAR_VERBS | _PLURAL_VERBS:
                problem = self._disagrees(words, i, words[i + 2])
                if problem:
                    out.append(("agreement", problem))
            if w != nxt:
                for cat, values in _EXCLUSIVE.items():
                    if w in values and nxt in values and frozenset((w, nxt)) not in _COMPATIBLE:
                        out.append(("contradictory_attributes", f"{w} {nxt} ({cat})"))
        if words[-1] in _NEEDS_OBJECT:
            out.append(("dangling_relation", f"ends with {words[-1]!r}"))
        return out

    @staticmethod
    def _disagrees(words: list[str], noun_at: int, verb: str) -> str | None:
        want = "singular" if verb in _SINGULAR_VERBS else "plural"
        number = _number(words[noun_at])
        if number is None or number == want:
            return None
        # benefit of the doubt: an earlier head noun (the word before a preposition) that agrees
        for j in range(1, noun_at):
            if words[j] in _PREPOSITIONS and _number(words[j - 1]) == want:
                return None
        return f"{words[noun_at]} {words[noun_at + 1]} {verb}"

    def score(self, texts: Sequence[str]) -> list[float]:
        return [max(0.0, 1.0 - sum(PENALTY[rule] for rule, _ in self.violations(t))) for t in texts]


# --------------------------------------------------------------------------------------------------
# Any transformers sequence classifier


class TransformersClassifierScorer:
    """A `transformers` sequence classifier as a text scorer: the original SugarCREPE-style scorers.

    `model` is a hub id or a local directory holding both the model and its tokenizer
    (`AutoTokenizer` + `AutoModelForSequenceClassification`). Score = log-softmax of logit `label`
    (default -1, the last label: "acceptable" for a CoLA model); a one-logit model (a regression or
    reward head) scores its raw logit. Runs on CUDA in fp16 when available, else CPU fp32, in batches of
    `batch_size` under `torch.inference_mode()`; texts are batched by length (less padding) and the
    scores returned in input order. The model loads on the first `score` call, once.
    """

    def __init__(
        self, model: str, label: int = -1, batch_size: int = 32, max_length: int = 128, device: str | None = None
    ) -> None:
        if not model:
            raise ValueError("TransformersClassifierScorer needs a model (hub id or local directory)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {max_length}")
        self.model_id, self.label, self.batch_size, self.max_length = model, label, batch_size, max_length
        self.device = device  # None: cuda if available, else cpu
        self.version = f"transformers-cls@v1:{model}:label={label}"
        self._loaded: tuple[Any, Any, Any] | None = None  # (torch, tokenizer, model)

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is not None:
            return self._loaded
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as e:
            raise ImportError(f"TransformersClassifierScorer needs torch and transformers: {MODELS_HINT}") from e
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        # fp16 halves memory and time on GPU; CPU fp16 kernels are slow or missing, so fp32 there
        dtype = torch.float16 if device.startswith("cuda") else torch.float32
        tokenizer = AutoTokenizer.from_pretrained(self.model_id)
        model = AutoModelForSequenceClassification.from_pretrained(self.model_id, dtype=dtype)
        if tokenizer.pad_token is None:  # GPT-style classifiers: pad with EOS, and tell the model
            if tokenizer.eos_token is None:
                raise ValueError(f"tokenizer of {self.model_id} has neither a pad nor an eos token")
            tokenizer.pad_token = tokenizer.eos_token
            model.config.pad_token_id = tokenizer.pad_token_id
        n = model.config.num_labels
        if n > 1 and not -n <= self.label < n:
            raise ValueError(f"label {self.label} out of range for {self.model_id} with {n} labels")
        model.to(device).eval()
        logger.info("TransformersClassifierScorer: loaded %s (%d labels) on %s %s", self.model_id, n, device, dtype)
        self._loaded = (torch, tokenizer, model)
        return self._loaded

    def score(self, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        torch, tokenizer, model = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = [math.nan] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                enc = tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(model.device)
                logits = model(**enc).logits.float()  # fp16 logits: softmax in fp32
                # one logit: a regression/reward head, its raw value is the score
                values = logits[:, 0] if logits.shape[-1] == 1 else torch.log_softmax(logits, -1)[:, self.label]
                for i, v in zip(idx, values.cpu().tolist(), strict=True):
                    out[i] = v
        return out


# --------------------------------------------------------------------------------------------------
# Registry


def make_scorer(spec: dict[str, Any]) -> TextScorer:
    """Build a scorer from config: {"kind": "ngram"} (fit it before scoring), {"kind": "grammar"}, or
    {"kind": "transformers", "model": "<hub id or dir>", "label": -1, "batch_size": 32}."""
    if not isinstance(spec, dict) or "kind" not in spec:
        raise ValueError(f"scorer spec needs a 'kind': {spec!r}")
    kind, options = spec["kind"], {k: v for k, v in spec.items() if k != "kind"}
    builders: dict[str, tuple[type, set[str]]] = {
        "ngram": (NGramScorer, set()),
        "grammar": (GrammarRuleScorer, set()),
        "transformers": (TransformersClassifierScorer, {"model", "label", "batch_size", "max_length", "device"}),
    }
    if kind not in builders:
        raise ValueError(f"unknown scorer kind {kind!r}; expected one of {sorted(builders)}")
    cls, allowed = builders[kind]
    unknown = set(options) - allowed
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for scorer kind {kind!r}")
    return cls(**options)
