"""Attribute semantics for the word tables (core/words/table.py): attribute categories (the GQA table plus the
additions), synonyms, exclusive scales, antonyms and the person-describing attributes a swap must never move
onto a person noun. `_AttributeSemantics` is a mixin of `Words`, whose fields it reads.
"""

from __future__ import annotations

from hardneg.core.words.common import _norm


class _AttributeSemantics:
    """Attribute semantics, a mixin of `Words`: reads `_attr_table`, `_attr_added`, `_attr_synonyms`,
    `_scales`, `_antonyms`, `_person_attr` and `_attr_free`."""

    __slots__ = ()

    def _a(self, attribute: str) -> str:
        n = _norm(attribute)
        return self._attr_synonyms.get(n, n)

    def attribute_category(self, attribute: str) -> str | None:
        n = _norm(attribute)
        for x in (n, self._a(n)):
            cat = self._attr_table.category(x) or self._attr_added.get(x)
            if cat is not None:
                return cat
        return None

    def attributes_contradict(self, a: str, b: str) -> tuple[bool, str]:
        """True only when one object cannot carry both attributes (red/blue, open/closed, big/small)."""
        na, nb = _norm(a), _norm(b)
        if na == nb:
            return False, f"'{a}' and '{b}' are the same attribute"
        ca, cb = self._a(na), self._a(nb)
        if ca == cb:
            return False, f"'{b}' is a synonym of '{a}'"
        shared: str | None = None
        for scale in self._scales:
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

    def fits_any(self, attribute: str, noun_category: str | None) -> bool:
        """Whether every word of the attribute's category fits every name of `noun_category` (the table's
        `free_on`: made things come in any colour), so the pair needs no corpus evidence."""
        cat = self.attribute_category(attribute)
        if cat is None or cat not in self._attr_free:
            return False
        kinds = self._attr_free[cat]
        return kinds is None or noun_category in kinds

    def antonym(self, attribute: str) -> str | None:
        n = _norm(attribute)
        return self._antonyms.get(n) or self._antonyms.get(self._a(n))

    def is_person_attribute(self, attribute: str) -> bool:
        """Colours, skin, ethnicity and body words: moved onto a person noun they describe the person."""
        return self.person_attribute_reason(attribute) is not None

    def person_attribute_reason(self, attribute: str) -> str | None:
        n = _norm(attribute)
        for x in (n, self._a(n)):
            if x in self._person_attr:
                return self._person_attr[x]
        if self.attribute_category(n) == "color":
            return "color: a colour moved onto a person noun reads as skin"
        return None
