"""Attribute semantics: attribute categories (the GQA table plus the additions), synonyms, exclusive scales,
antonyms and the person-describing attributes a swap must never move onto a person noun. `Attributes` is read
from `attributes.v1.yaml` and `attribute_categories.json` (readers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.common import Scale, norm

PATTERNED = "patterned"  # the pattern scale's class of several colours (striped, checkered, floral)


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: loaded once, with Words
class Attributes:
    """What attribute words mean relative to each other: two contradict only when an exclusive scale gives
    them no shared class."""

    table: AttributeTable  # GQA's attribute -> category table
    added: dict[str, str]  # attribute -> category, for words the GQA table lacks
    synonyms: dict[str, str]  # spelling -> canonical
    scales: tuple[Scale, ...]
    antonyms: dict[str, str]  # both ways
    person: dict[str, str]  # attribute that describes a person -> "<group>: <reason>"
    _verdicts: dict[tuple[str, str], tuple[bool, str]] = field(default_factory=dict, init=False)
    _several: dict[tuple[str, tuple[str, ...]], bool] = field(default_factory=dict, init=False)
    free_on: dict[str, frozenset[str] | None]  # attribute category -> noun categories it fits (None: all)
    # (names, (one part's material classes, the other's), why): things built of two parts in different materials
    built_of: tuple[tuple[frozenset[str], tuple[frozenset[str], frozenset[str]], str], ...] = ()
    # name -> the hue classes a natural kind comes in (None: any), read with its hyponyms by `Words.comes_in`
    comes_in: dict[str, frozenset[str] | None] = field(default_factory=dict)

    def hues(self, attribute: str) -> frozenset[str]:
        """The hue classes a colour word names (`dark brown` -> brown, black), empty for any other word."""
        return self._classes("hue", self._a(attribute))

    def materials(self, attribute: str) -> frozenset[str]:
        """The material classes of an attribute (`wooden` -> wood), empty for any other word."""
        return self._classes("material", self._a(attribute))

    def _scale(self, name: str) -> Scale | None:
        return next((s for s in self.scales if s.name == name), None)

    def _classes(self, scale_name: str, word: str) -> frozenset[str]:
        """The classes a (canonical) word has on the scale so named, empty for a word it does not hold."""
        scale = self._scale(scale_name)
        return frozenset() if scale is None else scale.classes.get(word, frozenset())

    def _a(self, attribute: str) -> str:
        n = norm(attribute)
        return self.synonyms.get(n, n)

    def attribute_category(self, attribute: str) -> str | None:
        n = norm(attribute)
        for x in (n, self._a(n)):
            cat = self.table.category(x) or self.added.get(x)
            if cat is not None:
                return cat
        return None

    def attributes_contradict(self, a: str, b: str) -> tuple[bool, str]:
        """True only when one object cannot carry both attributes (red/blue, open/closed, big/small)."""
        got = self._verdicts.get((a, b))  # the words as asked: millions of asks of a few thousand pairs
        if got is None:
            got = self._verdicts[(a, b)] = self._contradict(a, b)
        return got

    def _contradict(self, a: str, b: str) -> tuple[bool, str]:
        na, nb = norm(a), norm(b)
        if na == nb:
            return False, f"'{a}' and '{b}' are the same attribute"
        ca, cb = self._a(na), self._a(nb)
        if ca == cb:
            return False, f"'{b}' is a synonym of '{a}'"
        shared: str | None = None
        for scale in self.scales:
            ok = scale.compatible(ca, cb)
            if ok is False:
                return True, f"'{a}' and '{b}' exclude each other ({scale.name})"
            if ok and shared is None:
                shared = scale.name
        if shared is not None:
            return False, f"'{a}' and '{b}' can hold at once ({shared})"
        cat_a, cat_b = self.attribute_category(ca), self.attribute_category(cb)
        for x, cat in ((a, cat_a), (b, cat_b)):
            if cat is None:
                return False, f"'{x}' is not in the attribute tables"
        if cat_a != cat_b:
            return False, f"'{a}' ({cat_a}) and '{b}' ({cat_b}) are of different categories"
        return False, f"no scale makes '{a}' and '{b}' exclusive"

    def several(self, attribute: str, others: tuple[str, ...]) -> bool:
        """Whether one object's attributes `others` say it holds several values of a scale that holds
        `attribute` (a word of the scale's `any`: "colorful"; for colours, a pattern too: "striped"), so that
        its other words of that scale do not rule `attribute` out: a snowboard annotated "gold" and
        "colorful" may well be blue, and white striped pants black."""
        got = self._several.get((attribute, others))  # asked per object and claim: memoised as verdicts are
        if got is None:
            a, own = self._a(attribute), [self._a(b) for b in others]
            got = self._several[(attribute, others)] = any(
                any(b in scale.any for b in own)
                or (scale.name == "hue" and any(PATTERNED in self._classes("pattern", b) for b in own))
                for scale in self.scales
                if a in scale.classes or a in scale.any
            )
        return got

    def fits_any(self, attribute: str, noun_category: str | None) -> bool:
        """Whether every word of the attribute's category fits every name of `noun_category` (the table's
        `free_on`: made things come in any colour), so the pair needs no corpus evidence."""
        cat = self.attribute_category(attribute)
        if cat is None or cat not in self.free_on:
            return False
        kinds = self.free_on[cat]
        return kinds is None or noun_category in kinds

    def antonym(self, attribute: str) -> str | None:
        n = norm(attribute)
        return self.antonyms.get(n) or self.antonyms.get(self._a(n))

    def is_person_attribute(self, attribute: str) -> bool:
        """Colours, skin, ethnicity and body words: moved onto a person noun they describe the person."""
        return self.person_attribute_reason(attribute) is not None

    def person_attribute_reason(self, attribute: str) -> str | None:
        n = norm(attribute)
        for x in (n, self._a(n)):
            if x in self.person:
                return self.person[x]
        if self.attribute_category(n) == "color":
            return "color: a colour moved onto a person noun reads as skin"
        return None

    def check(self, noun_categories: frozenset[str]) -> list[str]:
        """Structural problems in the attribute tables (the tests require none); `free_on` must name
        categories of the noun table (`noun_categories`)."""
        problems: list[str] = []
        for a, b in self.antonyms.items():
            if not self.attributes_contradict(a, b)[0]:
                problems.append(f"antonyms '{a}'/'{b}' do not contradict: {self.attributes_contradict(a, b)[1]}")
        for spelling, canon in self.synonyms.items():
            if self.attribute_category(canon) is None:
                problems.append(f"attribute synonym '{spelling}' -> '{canon}' has no category")
        for cat, kinds in self.free_on.items():
            for k in sorted((kinds or frozenset()) - noun_categories):
                problems.append(f"free_on.{cat} names the noun category '{k}', which does not exist")
        hue = self._scale("hue")
        regions = frozenset(c for cs in (hue.classes.values() if hue else ()) for c in cs)
        for name, hues in self.comes_in.items():
            for h in sorted((hues or frozenset()) - regions):
                problems.append(f"comes_in.{name} names '{h}', which is no class of the hue scale")
        for scale in self.scales:
            for word in (*scale.classes, *scale.any):
                if self.attribute_category(word) is None:
                    problems.append(f"attribute '{word}' of scale {scale.name!r} has no category")
        for word in self.added:
            if self.table.category(word) is not None:
                problems.append(f"attribute '{word}' is added but the category table has it")
        return problems
