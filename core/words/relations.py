"""Relation semantics for the word tables (core/words/table.py): the table's form of a GQA relation or VG lemma,
synonyms and implications, symmetric and converse relations, and the contradiction table (axes with opposite
poles) that alone makes two relations contradict. `_RelationSemantics` is a mixin of `Words`, whose fields it
reads.
"""

from __future__ import annotations

from hardneg.core.words.common import _norm
from hardneg.core.words.forms import _NounForms


class _RelationSemantics(_NounForms):
    """Relation semantics, a mixin of `Words`: reads its relation fields (`_rel_forms`, `_rel_lemmas`,
    `_rel_synonyms`, `_rel_implies`, `_rel_compatible`, `_axes`, `_rel_plain`, `_rel_symmetric`,
    `_rel_converse`), its inflect engine `_ie` and its `_cache`; an axis's object exceptions use `lemma`."""

    __slots__ = ()

    def relation_form(self, relation: str) -> str | None:
        """The table's form of a GQA relation or of a VG lemma ("sit on" -> "sitting on"), or None."""
        n = _norm(relation)
        key = ("rel", n)
        if key in self._cache:
            return self._cache[key]
        out = self._relation_form(n)
        self._cache[key] = out
        return out

    def _known_relation(self, r: str) -> bool:
        return (
            r in self._rel_synonyms
            or r in self._rel_implies
            or r in self._rel_plain
            or any(r in ax.poles for ax in self._axes)
        )

    def _relation_form(self, n: str) -> str | None:
        cands = [n, self._rel_forms.get(n, n), self._rel_lemmas.get(n, n)]
        for prefix in ("be ", "is ", "are "):
            if n.startswith(prefix):
                rest = n[len(prefix) :]
                cands += [rest, self._rel_forms.get(rest, rest), self._rel_lemmas.get(rest, rest)]
        for c in list(cands):
            words = c.split()
            if words and words[0] in self._rel_lemmas:
                cands.append(" ".join([self._rel_lemmas[words[0]], *words[1:]]))
            if words and not words[0].endswith("ing"):
                part = self._ie.present_participle(words[0])
                if part:
                    cands.append(" ".join([part, *words[1:]]))
        for c in cands:
            c = self._rel_forms.get(c, c)
            if self._known_relation(c):
                return c
        return None

    def is_symmetric(self, relation: str) -> bool:
        """ "A r B" means "B r A" (next to, near): swapping A and B across it changes nothing."""
        return (self.relation_form(relation) or _norm(relation)) in self._rel_symmetric

    def axes_of(self, relation: str) -> frozenset[str]:
        """The contradiction table's axes the relation sits on ("horizontal", "depth", ...)."""
        r = self.relation_form(relation) or _norm(relation)
        return frozenset(ax.name for ax in self._axes if r in ax.poles)

    def is_positional(self, relation: str) -> bool:
        """Where one object is seen from another and nothing more (left/right, in front/behind, next to,
        near): true of any two objects that share a scene, given the right view."""
        return bool(self.axes_of(relation) & {"horizontal", "depth"}) or self.is_symmetric(relation)

    def converse(self, relation: str) -> str | None:
        """The relation stating the same fact from the other object ("above" -> "below"); a symmetric
        relation is its own converse; None when the tables do not say."""
        r = self.relation_form(relation) or _norm(relation)
        if r in self._rel_symmetric:
            return r
        return self._rel_converse.get(r)

    def relation_synonyms(self, relation: str) -> tuple[str, ...]:
        """Relations that say the same thing (below/under/beneath), not counting `relation` itself."""
        r = self.relation_form(relation) or _norm(relation)
        return tuple(sorted(self._rel_synonyms.get(r, frozenset()) - {r}))

    def relations_contradict(self, r1: str, r2: str, obj: str | None = None) -> tuple[bool, str]:
        """True only when the contradiction table lists `r1` and `r2` on opposite poles of one axis.
        `obj`, the related object's name, lets an axis refuse where its rule does not hold ("the light
        on the ceiling" is also under it)."""
        f1, f2 = self.relation_form(r1), self.relation_form(r2)
        for f, orig in ((f1, r1), (f2, r2)):
            if f is None:
                return False, f"'{orig}' is not in the relation tables"
        assert f1 is not None and f2 is not None
        if f1 == f2:
            return False, f"'{r1}' and '{r2}' are the same relation"
        if f2 in self._rel_synonyms.get(f1, ()):
            return False, f"'{r2}' is a synonym of '{r1}'"
        if f2 in self._rel_implies.get(f1, ()):
            return False, f"'{r1}' implies '{r2}'"
        if f1 in self._rel_implies.get(f2, ()):
            return False, f"'{r2}' implies '{r1}'"
        why = self._rel_compatible.get(frozenset((f1, f2)))
        if why is not None:
            return False, f"'{r1}' and '{r2}' can hold at once: {why}"
        same_pole: str | None = None
        for ax in self._axes:
            p1, p2 = ax.poles.get(f1), ax.poles.get(f2)
            if not p1 or not p2:
                continue
            if p1 & p2:
                same_pole = same_pole or f"'{r1}' and '{r2}' point the same way ({ax.name}: {min(p1 & p2)})"
                continue
            if obj is not None and self.lemma(obj) in ax.except_objects and {f1, f2} & ax.except_relations:
                return False, f"'{r1}' and '{r2}' do not contradict for '{obj}': {ax.except_reason}"
            return True, f"'{r1}' and '{r2}' are opposite ({ax.name}: {min(p1)} vs {min(p2)})"
        if same_pole:
            return False, same_pole
        return False, f"no contradiction is listed between '{r1}' and '{r2}'"
