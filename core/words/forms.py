"""Noun forms for the word tables (core/words/table.py): singular lemma, plural, number, mass nouns and "a"/"an".
English forms come from inflect, corrected by the noun table's exception lists where it is wrong for GQA's
words ("glasses", "bus", "sheep"). `_NounForms` is a mixin of `Words`, whose fields it reads.
"""

from __future__ import annotations

import sys
from types import ModuleType

from hardneg.core.words.common import _norm


def _import_inflect() -> ModuleType:
    """inflect, imported without typeguard's @typechecked instrumentation: it re-parses inflect's whole
    module once per decorated method, which costs seconds per process (jaraco/inflect#212). The checks only
    guard inflect's own argument types, and the word modules pass it non-empty strings only."""
    if "inflect" in sys.modules:
        return sys.modules["inflect"]
    import typeguard

    original = typeguard.typechecked
    typeguard.typechecked = lambda target=None, **_: target  # type: ignore[assignment]
    try:
        import inflect
    finally:
        typeguard.typechecked = original
    return inflect


inflect = _import_inflect()


class _NounForms:
    """Noun forms, a mixin of `Words`: reads its noun-form fields (`_forms`, `_pluralia`, `_invariant`,
    `_irregular`, `_irregular_plural`, `_singular_s`, `_article_an`, `_article_a`, `_mass`, `_known_nouns`),
    its inflect engine `_ie` and its `_cache`."""

    __slots__ = ()

    def _lemma_word(self, w: str) -> str:
        w = self._forms.get(w, w)
        if w in self._pluralia or w in self._invariant or w in self._singular_s:
            return w
        if w in self._irregular:
            return self._irregular[w]
        if w in self._known_nouns:
            return w
        s = self._ie.singular_noun(w)
        if not s:
            return w
        s = self._forms.get(s, s)
        if s in self._known_nouns:
            return s
        if w.endswith(("ss", "us", "is", "os")):  # inflect strips the s of "lens", "cactus", "tennis"
            return w
        return s

    def lemma(self, name: str) -> str:
        """The singular lemma: men -> man, leaves -> leaf, "tennis rackets" -> "tennis racket"; a
        plural-only name (glasses, jeans) stays; VG lemmatizer artifacts (pant, jean) get their name."""
        n = _norm(name)
        if not n:
            raise ValueError("a name must not be empty")
        key = ("lemma", n)
        if key in self._cache:
            return self._cache[key]
        out = self._forms.get(n, n)
        if out not in self._known_nouns:
            words = out.split()
            head = self._lemma_word(words[-1])
            cand = " ".join([*words[:-1], head])
            out = self._forms.get(cand, cand)
        self._cache[key] = out
        return out

    def is_plural(self, name: str) -> bool:
        """Grammatically plural: "the bananas are", "the jeans are"; "sheep" and "fish" read singular."""
        n = _norm(name)
        if not n:
            raise ValueError("a name must not be empty")
        head = n.split()[-1]
        if head in self._pluralia or n in self._pluralia:
            return True
        if head in self._invariant or head in self._forms or n in self._forms or n in self._known_nouns:
            return False
        return self._lemma_word(head) != head

    def plural(self, name: str) -> str:
        n = _norm(name)
        if self.is_plural(n):
            return n
        words = n.split()
        head = words[-1]
        if head in self._invariant:
            pl = head
        elif head in self._irregular_plural:
            pl = self._irregular_plural[head]
        else:
            pl = self._ie.plural_noun(head)
        return " ".join([*words[:-1], pl])

    def is_mass(self, name: str) -> bool:
        """A mass noun takes no "a": "snow", "food", "rice"."""
        lem = self.lemma(name)
        return lem in self._mass or lem.split()[-1] in self._mass

    def indefinite_article(self, phrase: str) -> str:
        """ "a" or "an" for a singular count head noun, "" for a mass or plural head ("snow", "bananas")."""
        n = _norm(phrase)
        if not n:
            raise ValueError("indefinite_article needs a phrase")
        words = n.split()
        if self.is_plural(words[-1]) or self.is_mass(words[-1]) or self.is_mass(n):
            return ""
        first = words[0]
        if first in self._article_an:
            return "an"
        if first in self._article_a:
            return "a"
        return self._ie.a(first).split()[0]

    def be_verb(self, name: str) -> str:
        """ "is" or "are", for number agreement ("the bananas that are yellow")."""
        return "are" if self.is_plural(name) else "is"
