"""What spaCy would say about a text's words without running its tagger (the rewrite validator's fast path).

The rewrite validator (`generators/text/rewrite.py`) compares lemmas and words. spaCy's words come from its
tokenizer alone, which is rule-based and splits on single spaces first, so a text's words are the words
of its space-separated chunks, each tokenized once per process. Its lemmas need the tagger (a CNN, about
1 ms a text), but a word can only ever get one of a few lemmas: the word itself, what the rule lemmatizer
makes of it for some part of speech, or what an attribute-ruler pattern that can match it sets. That set,
`candidates(word)`, is computed once per word, and lets the validator *prove* most verdicts (a part whose
words are all there is kept, a word none of whose lemmas is a name, attribute or direction invents
nothing) without tagging; it tags only where the candidates leave the answer open.

Every candidate set is a superset of what the pipeline can assign, so a proof never disagrees with the
tagged check; `tests/test_rewrite_proof.py` checks this on every rewrite of the demo and of a GQA-like shard.
"""

from __future__ import annotations

import re
from typing import Any

# Components that never set a lemma or split a token; any other component turns the fast path off.
NEUTRAL_PIPES = frozenset({"tok2vec", "tagger", "morphologizer", "parser", "senter", "ner"})
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN", "PUNCT",
        "SCONJ", "SYM", "VERB", "X", "SPACE")  # fmt: skip
_WORD_KEYS = ("LOWER", "ORTH", "TEXT", "NORM")
_ODD_SPACE = re.compile(r"[^\S ]|  |^ | $")  # any whitespace but single spaces between words


class Lexical:
    """Per-process word analysis with the tokenizer and the lemmatizer's tables of a loaded pipeline."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self._chunks: dict[str, tuple[str, ...]] = {}
        self._cands: dict[str, frozenset[str]] = {}
        self._ruler: list[tuple[str, Any]] = []  # (kind, value) -> lemma, for attribute-ruler patterns
        self._ruler_any: set[str] = set()  # lemmas a pattern may set on any word
        names = set(nlp.pipe_names)
        self._lemmatizer = nlp.get_pipe("lemmatizer") if "lemmatizer" in names else None
        mode = getattr(self._lemmatizer, "mode", None)
        self.exact = names <= NEUTRAL_PIPES | {"lemmatizer", "attribute_ruler"} and mode in (None, "rule", "lookup")
        if "attribute_ruler" in names:
            self._read_ruler(nlp.get_pipe("attribute_ruler"))

    def _read_ruler(self, ruler: Any) -> None:
        for p in ruler.patterns:
            lemma = p["attrs"].get("LEMMA")
            if lemma is None:
                continue
            for pattern in p["patterns"]:
                tok = pattern[p.get("index", 0)]
                key = next((k for k in _WORD_KEYS if k in tok), None)
                value = tok.get(key) if key else None
                if isinstance(value, str):
                    self._ruler.append(("eq", value.lower(), str(lemma).lower()))
                elif isinstance(value, dict) and set(value) == {"IN"}:
                    self._ruler.append(("in", frozenset(v.lower() for v in value["IN"]), str(lemma).lower()))
                elif isinstance(value, dict) and set(value) == {"REGEX"}:
                    self._ruler.append(("re", re.compile(value["REGEX"], re.IGNORECASE), str(lemma).lower()))
                else:  # a pattern not tied to given words: its lemma is possible for every word
                    self._ruler_any.add(str(lemma).lower())

    def words(self, text: str) -> tuple[str, ...] | None:
        """The lower-cased non-punctuation tokens of `text` exactly as the full pipeline makes them, or None
        for a text with other whitespace than single spaces (spaCy makes space tokens of those)."""
        low = text.lower()
        if _ODD_SPACE.search(low):
            return None
        out: list[str] = []
        for c in low.split(" ") if low else ():
            got = self._chunks.get(c)
            if got is None:
                got = tuple(t.text.lower() for t in self.nlp.tokenizer(c) if not t.is_punct)
                self._chunks[c] = got
            out.extend(got)
        return tuple(out)

    def candidates(self, word: str) -> frozenset[str]:
        """Every lemma the pipeline could give the (lower-cased) token `word`, in any context."""
        got = self._cands.get(word)
        if got is None:
            got = frozenset(self._candidates(word))
            self._cands[word] = got
        return got

    def _candidates(self, word: str) -> set[str]:
        from spacy.tokens import Doc

        out = {word} | self._ruler_any
        for kind, value, lemma in self._ruler:
            if value == word if kind == "eq" else word in value if kind == "in" else value.search(word):
                out.add(lemma)
        lem = self._lemmatizer
        if lem is None:
            return out
        doc = Doc(self.nlp.vocab, words=[word])
        tok = doc[0]
        if lem.mode == "lookup":
            out.update(x.lower() for x in lem.lookup_lemmatize(tok))
            return out
        for pos in UPOS:
            tok.pos_ = pos
            out.update(x.lower() for x in lem.rule_lemmatize(tok)[:1])
        return out
