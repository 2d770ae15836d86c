"""Words with the tags, parts of speech and lemmas of the English pipeline, for many texts at once.

The English check (`generators/text/english.py`) reads four things per token: text, fine tag, part of speech and
lemma. In the pipeline it loads (tok2vec -> tagger -> attribute_ruler -> lemmatizer) only the tagger is
statistical; the attribute ruler maps (word, tag) to a part of speech with its patterns, and the rule
lemmatizer maps (word, part of speech, morphology) to a lemma. Run per token through spaCy's Matcher they cost
about as much as the network itself. `Tagger` runs the network (tok2vec + tagger, batched), and applies the
ruler and the lemmatizer once per distinct (word, tag), by evaluating the ruler's own patterns in its own order
and calling the lemmatizer's own `rule_lemmatize`. The result equals the full pipeline's: a pattern this
evaluation does not support sends the whole pipeline back to spaCy's components, a text that could start one
of the ruler's multi-token patterns goes through them, and `tests/test_english_tags.py` compares every token
of a synthetic run with the full pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# The token attributes a single-token ruler pattern may test here, and what they read. Without a parser
# every token's DEP is "" (the ruler matches with `allow_missing=True`), so patterns about it are evaluated
# against "" as the Matcher does.
_KEYS = {
    "ORTH": lambda w: w.text,
    "TEXT": lambda w: w.text,
    "LOWER": lambda w: w.lower_,
    "TAG": lambda w: w.tag_,
    "IS_SPACE": lambda w: w.is_space,
    "DEP": lambda w: "",
}
_PREDICATES = ("IN", "NOT_IN", "REGEX")
RULER, LEMMATIZER = "attribute_ruler", "lemmatizer"
# What a single-token pattern may set. DEP is nobody's business here (the check reads no DEP, and every
# pattern's condition sees the token as the tagger left it: spaCy matches all patterns before setting any).
SETS = frozenset({"POS", "TAG", "MORPH", "LEMMA", "DEP"})


@dataclass(slots=True)
class Word:
    """A token as the English check reads it (spaCy's attribute names)."""

    text: str
    lower_: str
    tag_: str
    is_space: bool
    pos_: str = ""
    lemma_: str = ""
    morph: str = ""


def _supported(spec: dict[str, Any]) -> bool:
    for key, value in spec.items():
        if key not in _KEYS:
            return False
        if isinstance(value, dict) and (len(value) != 1 or next(iter(value)) not in _PREDICATES):
            return False
    return True


def _holds(spec: dict[str, Any], word: Word) -> bool:
    for key, want in spec.items():
        got = _KEYS[key](word)
        if isinstance(want, dict):
            ((op, arg),) = want.items()
            if op == "IN" and got not in arg:
                return False
            if op == "NOT_IN" and got in arg:
                return False
            if op == "REGEX" and not re.search(arg, str(got)):
                return False
        elif got != want:
            return False
    return True


class Tagger:
    """`words(texts)`: per text, its tokens as `Word`s, as the full pipeline would tag them."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self.single: list[tuple[dict[str, Any], dict[str, str]]] = []  # (pattern, what it sets), in order
        self.multi_first: list[dict[str, Any]] = []  # the first token of each multi-token pattern
        self.emulated = self._plan(nlp)
        self._attrs: dict[tuple[str, str, bool], tuple[dict[str, str], bool]] = {}
        self._lemmas: dict[tuple[str, str, str], str] = {}

    def _plan(self, nlp: Any) -> bool:
        """Whether the ruler and the lemmatizer can be applied by table (else spaCy runs them)."""
        if list(nlp.pipe_names[-2:]) != [RULER, LEMMATIZER] or "tagger" not in nlp.pipe_names:
            return False
        ruler, lemmatizer = nlp.get_pipe(RULER), nlp.get_pipe(LEMMATIZER)
        if getattr(lemmatizer, "mode", None) != "rule":
            return False
        for entry in ruler.patterns:  # in the ruler's own order: a later pattern's attributes win
            for pattern in entry["patterns"]:
                if not isinstance(pattern, list) or not all(_supported(t) for t in pattern):
                    return False
                if len(pattern) == 1:
                    if entry.get("index", 0) not in (0, -1) or not set(entry["attrs"]) <= SETS:
                        return False
                    self.single.append((pattern[0], entry["attrs"]))
                else:
                    self.multi_first.append(pattern[0])
        self.lemmatizer, self.overwrite = lemmatizer, bool(lemmatizer.overwrite)
        return True

    def _rules(self, w: Word) -> tuple[dict[str, str], bool]:
        """What the ruler's single-token patterns set on this (word, tag), and whether the word could start
        one of its multi-token patterns."""
        key = (w.text, w.tag_, w.is_space)
        got = self._attrs.get(key)
        if got is None:
            attrs: dict[str, str] = {}
            for spec, set_ in self.single:
                if _holds(spec, w):
                    attrs.update(set_)
            got = self._attrs[key] = (attrs, any(_holds(spec, w) for spec in self.multi_first))
        return got

    def _annotate(self, w: Word, attrs: dict[str, str]) -> None:
        w.tag_ = attrs.get("TAG", w.tag_)
        morph = attrs.get("MORPH", "")
        w.pos_, w.morph = attrs.get("POS", ""), "" if morph == "_" else morph  # "_": no features
        ruled = attrs.get("LEMMA")
        w.lemma_ = ruled if ruled is not None and not self.overwrite else self._lemma(w)

    def _lemma(self, w: Word) -> str:
        key = (w.text, w.pos_, w.morph)
        got = self._lemmas.get(key)
        if got is None:
            if not w.pos_:
                got = w.text.lower()  # what `rule_lemmatize` answers for a token without one
            else:
                from spacy.tokens import Doc

                kw = {"morphs": [w.morph]} if w.morph else {}
                one = Doc(self.nlp.vocab, words=[w.text], spaces=[False], tags=[w.tag_], pos=[w.pos_], **kw)
                got = self.lemmatizer.rule_lemmatize(one[0])[0]
            self._lemmas[key] = got
        return got

    def words(self, texts: Sequence[str], docs: Iterable[Any] | None = None) -> list[list[Word]]:
        """The tagged tokens of each text (`docs`: the texts' `make_doc`s, when the caller has them)."""
        docs = list(docs) if docs is not None else [self.nlp.make_doc(t) for t in texts]
        if not self.emulated:
            return [[_word(t, full=True) for t in doc] for doc in self.nlp.pipe(docs, batch_size=256)]
        out = []
        for doc in self.nlp.pipe(docs, batch_size=256, disable=[RULER, LEMMATIZER]):
            words = [_word(t) for t in doc]
            rules = [self._rules(w) for w in words]
            if any(multi for _, multi in rules):
                doc = self.nlp.get_pipe(LEMMATIZER)(self.nlp.get_pipe(RULER)(doc))
                words = [_word(t, full=True) for t in doc]
            else:
                for w, (attrs, _) in zip(words, rules, strict=True):
                    self._annotate(w, attrs)
            out.append(words)
        return out


def _word(tok: Any, full: bool = False) -> Word:
    w = Word(tok.text, tok.lower_, tok.tag_, tok.is_space)
    if full:
        w.pos_, w.lemma_, w.morph = tok.pos_, tok.lemma_, str(tok.morph)
    return w
