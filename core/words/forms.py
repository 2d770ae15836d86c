"""English forms of object names: singular lemma, plural, number, mass nouns and "a"/"an".

They come from inflect, corrected by the noun table's exception lists where it is wrong for GQA's words
("glasses", "bus", "sheep"). `NounForms` is read from the first sections of `nouns.v1.yaml` (readers.py);
the noun and relation semantics use it for every lemma they compare.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import ModuleType

from hardneg.core.words.common import norm


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


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: loaded once, with Words
class NounForms:
    """Number and article of object names. A name the noun table lists (`known`) is its own lemma; other
    words go through inflect, unless an exception list says otherwise. Answers are memoised."""

    spellings: dict[str, str]  # spellings and VG lemmatizer artifacts -> the name GQA writes ("pant" -> "pants")
    pluralia: frozenset[str]  # plural names of one object ("jeans")
    invariant: frozenset[str]  # plural is the same word, read as singular ("sheep")
    irregular: dict[str, str]  # plural -> singular
    irregular_plural: dict[str, str]  # singular -> plural
    singular_s: frozenset[str]  # singular names ending in "s" ("bus")
    article_an: frozenset[str]  # first words that take "an" against inflect ("suv")
    article_a: frozenset[str]  # first words that take "a" against inflect ("uniform")
    mass: frozenset[str]  # mass nouns: no "a"
    known: frozenset[str]  # every name the noun table lists
    ie: inflect.engine = field(default_factory=inflect.engine, init=False)
    _cache: dict[str, str] = field(default_factory=dict, init=False)

    def _lemma_word(self, w: str) -> str:
        w = self.spellings.get(w, w)
        if w in self.pluralia or w in self.invariant or w in self.singular_s:
            return w
        if w in self.irregular:
            return self.irregular[w]
        if w in self.known:
            return w
        s = self.ie.singular_noun(w)
        if not s:
            return w
        s = self.spellings.get(s, s)
        if s in self.known:
            return s
        if w.endswith(("ss", "us", "is", "os")):  # inflect strips the s of "lens", "cactus", "tennis"
            return w
        return s

    def lemma(self, name: str) -> str:
        """The singular lemma: men -> man, leaves -> leaf, "tennis rackets" -> "tennis racket"; a
        plural-only name (glasses, jeans) stays; VG lemmatizer artifacts (pant, jean) get their name."""
        n = norm(name)
        if not n:
            raise ValueError("a name must not be empty")
        got = self._cache.get(n)
        if got is not None:
            return got
        out = self.spellings.get(n, n)
        if out not in self.known:
            words = out.split()
            head = self._lemma_word(words[-1])
            cand = " ".join([*words[:-1], head])
            out = self.spellings.get(cand, cand)
        self._cache[n] = out
        return out

    def is_plural(self, name: str) -> bool:
        """Grammatically plural: "the bananas are", "the jeans are"; "sheep" and "fish" read singular."""
        n = norm(name)
        if not n:
            raise ValueError("a name must not be empty")
        head = n.split()[-1]
        if head in self.pluralia or n in self.pluralia:
            return True
        if head in self.invariant or head in self.spellings or n in self.spellings or n in self.known:
            return False
        return self._lemma_word(head) != head

    def plural(self, name: str) -> str:
        n = norm(name)
        if self.is_plural(n):
            return n
        words = n.split()
        head = words[-1]
        if head in self.invariant:
            pl = head
        elif head in self.irregular_plural:
            pl = self.irregular_plural[head]
        else:
            pl = self.ie.plural_noun(head)
        return " ".join([*words[:-1], pl])

    def is_mass(self, name: str) -> bool:
        """A mass noun takes no "a": "snow", "food", "rice"."""
        lem = self.lemma(name)
        return lem in self.mass or lem.split()[-1] in self.mass

    def indefinite_article(self, phrase: str) -> str:
        """ "a" or "an" for a singular count head noun, "" for a mass or plural head ("snow", "bananas")."""
        n = norm(phrase)
        if not n:
            raise ValueError("indefinite_article needs a phrase")
        words = n.split()
        if self.is_plural(words[-1]) or self.is_mass(words[-1]) or self.is_mass(n):
            return ""
        first = words[0]
        if first in self.article_an:
            return "an"
        if first in self.article_a:
            return "a"
        return self.ie.a(first).split()[0]

    def be_verb(self, name: str) -> str:
        """ "is" or "are", for number agreement ("the bananas that are yellow")."""
        return "are" if self.is_plural(name) else "is"
