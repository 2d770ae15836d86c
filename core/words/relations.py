"""Relation semantics: the table's form of a GQA relation or VG lemma, synonyms and implications, symmetric
and converse relations, and the contradiction table (axes with opposite poles) that alone makes two relations
contradict. `Relations` is read from `relation_semantics.v1.yaml` (readers.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hardneg.core.words.common import Axis, norm
from hardneg.core.words.forms import NounForms

SUPPORT = frozenset({"on", "in"})  # relations (with their synonyms and what implies them) of holding up or in


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: loaded once, with Words
class Relations:
    """What relations mean relative to each other. Relations are compared in the table's form (`relation_form`);
    the English forms serve the participles of VG lemmas ("sit on" -> "sitting on") and the lemma of the
    object an axis makes an exception for."""

    forms: NounForms
    spellings: dict[str, str]  # a GQA spelling -> the table's form ("left of" -> "to the left of")
    lemmas: dict[str, str]  # a VG lemma -> the table's form
    synonyms: dict[str, frozenset[str]]  # relation -> its synonym set (itself included)
    implies: dict[str, frozenset[str]]
    compatible: dict[frozenset[str], str]  # two relations that can hold at once -> why
    axes: tuple[Axis, ...]
    plain: dict[str, str]  # known relations no table contradicts, with the reason
    symmetric: frozenset[str]
    converses: dict[str, str]  # both ways ("above" <-> "below")
    _cache: dict[str, str | None] = field(default_factory=dict, init=False)
    _verdicts: dict[tuple[str, str, str | None], tuple[bool, str]] = field(default_factory=dict, init=False)

    def relation_form(self, relation: str) -> str | None:
        """The table's form of a GQA relation or of a VG lemma ("sit on" -> "sitting on"), or None."""
        n = norm(relation)
        if n not in self._cache:
            self._cache[n] = self._relation_form(n)
        return self._cache[n]

    def _known_relation(self, r: str) -> bool:
        return r in self.synonyms or r in self.implies or r in self.plain or any(r in ax.poles for ax in self.axes)

    def _relation_form(self, n: str) -> str | None:
        cands = [n, self.spellings.get(n, n), self.lemmas.get(n, n)]
        for prefix in ("be ", "is ", "are "):
            if n.startswith(prefix):
                rest = n[len(prefix) :]
                cands += [rest, self.spellings.get(rest, rest), self.lemmas.get(rest, rest)]
        for c in list(cands):
            words = c.split()
            if words and words[0] in self.lemmas:
                cands.append(" ".join([self.lemmas[words[0]], *words[1:]]))
            if words and not words[0].endswith("ing"):
                part = self.forms.ie.present_participle(words[0])
                if part:
                    cands.append(" ".join([part, *words[1:]]))
        for c in cands:
            c = self.spellings.get(c, c)
            if self._known_relation(c):
                return c
        return None

    def is_symmetric(self, relation: str) -> bool:
        """ "A r B" means "B r A" (next to, near): swapping A and B across it changes nothing."""
        return (self.relation_form(relation) or norm(relation)) in self.symmetric

    def axes_of(self, relation: str) -> frozenset[str]:
        """The contradiction table's axes the relation sits on ("horizontal", "depth", ...)."""
        r = self.relation_form(relation) or norm(relation)
        return frozenset(ax.name for ax in self.axes if r in ax.poles)

    def is_positional(self, relation: str) -> bool:
        """Where one object is seen from another and nothing more (left/right, in front/behind, next to,
        near): true of any two objects that share a scene, given the right view."""
        return bool(self.axes_of(relation) & {"horizontal", "depth"}) or self.is_symmetric(relation)

    def is_support(self, relation: str) -> bool:
        """ "A r B" says B holds A up or in (on, in, atop, sitting on, parked in): a surface or a container,
        which may hold several things of A's kind."""
        r = self.relation_form(relation) or norm(relation)
        said = {r} | self.synonyms.get(r, frozenset()) | self.implies.get(r, frozenset())
        return not said.isdisjoint(SUPPORT)

    def converse(self, relation: str) -> str | None:
        """The relation stating the same fact from the other object ("above" -> "below"); a symmetric
        relation is its own converse; None when the tables do not say."""
        r = self.relation_form(relation) or norm(relation)
        if r in self.symmetric:
            return r
        return self.converses.get(r)

    def relation_synonyms(self, relation: str) -> tuple[str, ...]:
        """Relations that say the same thing (below/under/beneath), not counting `relation` itself."""
        r = self.relation_form(relation) or norm(relation)
        return tuple(sorted(self.synonyms.get(r, frozenset()) - {r}))

    def relations_contradict(self, r1: str, r2: str, obj: str | None = None) -> tuple[bool, str]:
        """True only when the contradiction table lists `r1` and `r2` on opposite poles of one axis.
        `obj`, the related object's name, lets an axis refuse where its rule does not hold ("the light
        on the ceiling" is also under it)."""
        key = (r1, r2, obj)  # the words as asked: the certificates ask the same few pairs millions of times
        got = self._verdicts.get(key)
        if got is None:
            got = self._verdicts[key] = self._contradict(r1, r2, obj)
        return got

    def _contradict(self, r1: str, r2: str, obj: str | None) -> tuple[bool, str]:
        f1, f2 = self.relation_form(r1), self.relation_form(r2)
        for f, orig in ((f1, r1), (f2, r2)):
            if f is None:
                return False, f"'{orig}' is not in the relation tables"
        assert f1 is not None and f2 is not None
        if f1 == f2:
            return False, f"'{r1}' and '{r2}' are the same relation"
        if f2 in self.synonyms.get(f1, ()):
            return False, f"'{r2}' is a synonym of '{r1}'"
        if f2 in self.implies.get(f1, ()):
            return False, f"'{r1}' implies '{r2}'"
        if f1 in self.implies.get(f2, ()):
            return False, f"'{r2}' implies '{r1}'"
        why = self.compatible.get(frozenset((f1, f2)))
        if why is not None:
            return False, f"'{r1}' and '{r2}' can hold at once: {why}"
        same_pole: str | None = None
        for ax in self.axes:
            p1, p2 = ax.poles.get(f1), ax.poles.get(f2)
            if not p1 or not p2:
                continue
            if p1 & p2:
                same_pole = same_pole or f"'{r1}' and '{r2}' point the same way ({ax.name}: {min(p1 & p2)})"
                continue
            if obj is not None and self.forms.lemma(obj) in ax.except_objects and {f1, f2} & ax.except_relations:
                return False, f"'{r1}' and '{r2}' do not contradict for '{obj}': {ax.except_reason}"
            return True, f"'{r1}' and '{r2}' are opposite ({ax.name}: {min(p1)} vs {min(p2)})"
        if same_pole:
            return False, same_pole
        return False, f"no contradiction is listed between '{r1}' and '{r2}'"

    def status(self, relation: str) -> str | None:
        """How the tables know a relation: "contradiction" (on an axis), "synonym" (listed as a synonym or by
        implication), "no_opposite", or None when they do not."""
        f = self.relation_form(relation)
        if f is None:
            return None
        if any(f in ax.poles for ax in self.axes):
            return "contradiction"
        if f in self.synonyms or f in self.implies:
            return "synonym"
        return "no_opposite"

    def check(self) -> list[str]:
        """Structural problems in the relation table (the tests require none)."""
        problems: list[str] = []
        for r, same in self.synonyms.items():
            for s in same:
                if s != r and self.relations_contradict(r, s)[0]:
                    problems.append(f"relation synonyms '{r}'/'{s}' contradict")
        for r in (*self.symmetric, *self.converses):
            if self.relation_form(r) is None:
                problems.append(f"relation '{r}' of symmetric/converse is in no table")
        for ax in self.axes:
            for r in ax.poles:
                if self.relation_form(r) != r:
                    problems.append(f"relation '{r}' of axis {ax.name!r} does not read as itself")
        return problems
