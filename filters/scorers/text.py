"""Text-only scorers for SugarCREPE's adversarial refinement (`filters.refine`).

SugarCREPE scores each positive and negative text with two blind (image-free) models, a plausibility
model and a grammar-acceptability classifier, and balances the benchmark so neither can tell the
positive from the negative. This module puts those roles behind one protocol, `TextScorer`:

- `NGramScorer` (offline): a word-trigram language model with interpolated Kneser-Ney smoothing, fit on
  the run's positive expressions; the plausibility-model stand-in.
- `GrammarRuleScorer` (offline): documented acceptability rules scored in [0, 1]; the
  grammar-classifier stand-in.
- `TransformersClassifierScorer`: any `transformers` sequence classifier by hub id or local directory,
  which is how the original scorers (e.g. a CoLA acceptability model) are plugged in.

`filters/registry.py` builds them from config (`{kind: ngram}`); higher always means more plausible.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from hardneg.backends.models import MODELS_HINT, loading, shared, transformers_model
from hardneg.backends.requirements import Requirement
from hardneg.core.errors import MissingDependency
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Item, Scores, Settings
from hardneg.filters.scorers.grammar import PENALTY, GrammarRuleScorer, _words

# The grammar rules live in filters/scorers/grammar.py; this module stays the public home of their names.
__all__ = [
    "BOS",
    "EOS",
    "PENALTY",
    "UNK",
    "GrammarFilter",
    "GrammarRuleScorer",
    "NGramFilter",
    "NGramScorer",
    "TextFilter",
    "TextScorer",
    "TransformersClassifierScorer",
    "TransformersOptions",
    "TransformersTextFilter",
]

logger = logging.getLogger(__name__)


class TextScorer(Protocol):
    version: str  # recorded in provenance next to the scores

    def score(self, texts: Sequence[str]) -> list[float]:
        """One score per text, aligned; higher = more plausible / grammatical."""
        ...


# --------------------------------------------------------------------------------------------------
# N-gram plausibility


BOS, EOS, UNK = "<s>", "</s>", "<unk>"


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
    every score is finite; a word of `vocabulary` (the corpus's names, attributes and relations) that the
    texts do not hold is known at the unigram level as if seen in one context, so a negative is not scored
    down for a real word a few hundred positives happen not to use. Deterministic: counts only, no sampling.
    """

    version = "ngram-kn3@v2"  # v2: the corpus vocabulary known at the unigram level

    def __init__(self) -> None:
        self._fitted = False

    def fit(self, texts: Sequence[str], vocabulary: Iterable[str] = ()) -> NGramScorer:
        """Count trigrams of `texts` (replacing any earlier fit), knowing the words of `vocabulary`;
        returns self."""
        if not texts:
            raise ValueError("NGramScorer.fit needs at least one text")
        tri: Counter[tuple[str, ...]] = Counter()
        for text in texts:
            toks = [BOS, BOS, *_words(text), EOS]
            tri.update(zip(toks, toks[1:], toks[2:], strict=False))
        # Lower orders use continuation counts: in how many distinct contexts a (shorter) n-gram appears.
        bi_cont: Counter[tuple[str, ...]] = Counter((v, w) for (_, v, w) in tri)
        uni_cont: Counter[tuple[str, ...]] = Counter((w,) for (_, w) in bi_cont)
        for phrase in vocabulary:
            for w in _words(phrase):
                if (w,) not in uni_cont:
                    uni_cont[(w,)] = 1
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
        with loading(self.model_id):
            try:
                import torch
                from transformers import AutoModelForSequenceClassification, AutoTokenizer
            except ImportError as e:
                raise MissingDependency(
                    f"TransformersClassifierScorer needs torch and transformers: {MODELS_HINT}"
                ) from e
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
# As filters: SugarCREPE decides over all pairs at once (`filters/refine.py`), so `keep` never drops


class TextFilter(Filter):
    """A blind text scorer under the Filter contract: `score` gives `{"score": s}` per text item, higher
    = more plausible or grammatical. The keep/drop decision is SugarCREPE's joint balancing
    (`filters.refine.refine`), not a per-sample threshold."""

    targets = frozenset({"text"})
    needs_images = False

    def scorer(self) -> TextScorer:
        raise NotImplementedError

    def score(self, items: Sequence[Item]) -> list[Scores]:
        return [{"score": v} for v in self.scorer().score([it.text for it in items])]


@FILTERS.add("ngram", order=90)
class NGramFilter(TextFilter):
    """Plausibility by a trigram LM; `fitted(texts)` trains one (refinement cross-fits it)."""

    version = NGramScorer.version

    def __init__(self, options: Settings | None = None, batch_size: int = 16) -> None:
        super().__init__(options, batch_size)
        self._model: NGramScorer | None = None

    def fitted(self, texts: Sequence[str], vocabulary: Iterable[str] = ()) -> NGramFilter:
        out = NGramFilter(self.options, self.batch_size)
        out._model = NGramScorer().fit(texts, vocabulary)
        return out

    def scorer(self) -> TextScorer:
        if self._model is None:
            raise ValueError("the ngram scorer must be fit first (NGramFilter.fitted)")
        return self._model


@FILTERS.add("grammar", order=100)
class GrammarFilter(TextFilter):
    version = GrammarRuleScorer.version

    def scorer(self) -> TextScorer:
        return GrammarRuleScorer()


class TransformersOptions(Settings):
    model: str  # hub id or local directory: a sequence classifier and its tokenizer
    label: int = -1
    batch_size: int = 32
    max_length: int = 128
    device: str | None = None


@FILTERS.add("transformers", order=120)
class TransformersTextFilter(TextFilter):
    version = "transformers-cls@v1"
    Options = TransformersOptions

    def requirements(self, role: str) -> list[Requirement]:
        return [transformers_model(role, self.options.model)]  # type: ignore[attr-defined]

    @property
    def identity(self) -> str:
        return self.scorer().version

    def scorer(self) -> TextScorer:
        o: TransformersOptions = self.options  # type: ignore[assignment]
        key = ("text-classifier", o.model, o.label, o.batch_size, o.max_length, o.device)
        return shared(key, lambda: self.configured(TransformersClassifierScorer, **o.model_dump()))
