"""Word semantics: when a replacement word truly contradicts the original.

FineCops-Ref replaces a word of a referring expression with "a misleading word of the same category that
contradicts it". Same category is not enough: a synonym, a plural form, a hypernym or hyponym, a part or
whole, an attribute that can hold at once or a compatible relation leaves the expression true of the image.
This module reads three versioned tables under `templates/` and answers, with a reason, whether two words
contradict:

- `nouns.v1.yaml`: synonym sets, is-a (transitive), part-of and worn-by, names that overlap (one object
  can carry both), mass nouns, crowd and background names, and replacement categories. Two names
  contradict only when some category puts them in different classes and nothing relates them.
- `attributes.v1.yaml`: attribute categories the GQA table lacks, exclusive scales (two words contradict
  only when some scale gives them no shared class, after "near" classes), antonyms, and the
  person-describing attributes that a swap must never move onto a person noun.
- `relation_semantics.v1.yaml`: a contradiction table (axes with opposite poles), synonyms and
  implications, so a relation replacement is accepted only when it is listed as contradicting; also which
  relations are symmetric and which state the same fact from the other side (converse).

The rule everywhere is the careful annotator's: when in doubt (an unknown word, a pair both of which could
be true of one object) the answer is "does not contradict", and the reason says why. One general rule
extends the tables: a multiword name they do not list is a kind of its head noun ("glass window" is a
window). English forms (singular, plural, "a"/"an") come from inflect, corrected by the noun table's
exception lists where it is wrong for GQA's words ("glasses", "bus", "sheep").

The code is split by table section (each module says what it holds): `words_tables` (normalisation, the
strict YAML reader, the category/scale/axis records), `words_readers` (tables -> `Words` fields),
`words_forms` (noun forms, inflect), `words_nouns`, `words_attributes` and `words_relations` (the semantics,
as mixins of `Words`). This module keeps `Words` itself (its fields, loading, coverage and self-check).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from hardneg.core.resources import data_path
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.attributes import _AttributeSemantics
from hardneg.core.words.common import Axis, Category, Scale, _read_yaml
from hardneg.core.words.forms import inflect
from hardneg.core.words.nouns import _NounSemantics
from hardneg.core.words.readers import _load_attributes, _load_nouns, _load_relations
from hardneg.core.words.relations import _RelationSemantics

VERSION = "words@v1"
NOUNS_FILE = "nouns.v1.yaml"
ATTRIBUTES_FILE = "attributes.v1.yaml"
RELATIONS_FILE = "relation_semantics.v1.yaml"
ATTRIBUTE_TABLE_FILE = "attribute_categories.json"

# name_relation's answers; "overlap": two names one object can carry at once (a man and a skier).
NAME_RELATIONS = ("same", "plural", "synonym", "hypernym", "hyponym", "part", "whole", "overlap")


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: the tables are loaded once
class Words(_NounSemantics, _AttributeSemantics, _RelationSemantics):
    """The word tables, loaded once. A replacement is accepted only when these say the two words contradict;
    every answer that refuses says why."""

    version: str
    # nouns
    _forms: dict[str, str]
    _pluralia: frozenset[str]
    _invariant: frozenset[str]
    _irregular: dict[str, str]  # plural -> singular
    _irregular_plural: dict[str, str]  # singular -> plural
    _singular_s: frozenset[str]
    _article_an: frozenset[str]
    _article_a: frozenset[str]
    _canon: dict[str, str]  # name -> canonical synonym
    _synsets: dict[str, tuple[str, ...]]
    _parents: dict[str, frozenset[str]]  # canonical -> direct hypernyms (canonical)
    _wholes: dict[str, dict[str, str]]  # canonical part -> {canonical whole: "part" | "worn"}
    _overlaps: dict[frozenset[str], str]
    _homonyms: dict[str, str]
    _mass: frozenset[str]
    _crowd: dict[str, tuple[str, str]]  # name -> (group, reason)
    _not_object: dict[str, tuple[str, str]]
    _surfaces: dict[str, str]  # canonical name -> "text" | "pictures": its box holds print or pictures
    _categories: tuple[Category, ...]
    _known_nouns: frozenset[str]
    # attributes
    _attr_table: AttributeTable
    _attr_added: dict[str, str]
    _attr_synonyms: dict[str, str]  # spelling -> canonical
    _scales: tuple[Scale, ...]
    _antonyms: dict[str, str]
    _person_attr: dict[str, str]
    _attr_free: dict[str, frozenset[str] | None]  # attribute category -> noun categories it fits (None: all)
    # relations
    _rel_forms: dict[str, str]
    _rel_lemmas: dict[str, str]
    _rel_synonyms: dict[str, frozenset[str]]
    _rel_implies: dict[str, frozenset[str]]
    _rel_compatible: dict[frozenset[str], str]
    _axes: tuple[Axis, ...]
    _rel_plain: dict[str, str]  # known relations no table contradicts, with the reason
    _rel_symmetric: frozenset[str]
    _rel_converse: dict[str, str]
    _ie: inflect.engine = field(repr=False, compare=False)
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        return f"Words({self.version!r})"

    @property
    def known_nouns(self) -> frozenset[str]:
        """Every object name the tables know (categories, crowds, parts, synonyms, ...)."""
        return self._known_nouns

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, directory: str | Path | None = None) -> Words:
        """Read the tables from `directory`, or the bundled `templates/` when None (cached)."""
        if directory is None:
            return _default_words()
        return cls._read(Path(directory))

    @classmethod
    def _read(cls, d: Path) -> Words:
        nouns = _read_yaml(d / NOUNS_FILE)
        attrs = _read_yaml(d / ATTRIBUTES_FILE)
        rels = _read_yaml(d / RELATIONS_FILE)
        table_path = d / ATTRIBUTE_TABLE_FILE
        table = AttributeTable.load(table_path if table_path.exists() else None)
        kw: dict[str, Any] = {}
        kw.update(_load_nouns(nouns))
        kw.update(_load_attributes(attrs))
        kw.update(_load_relations(rels))
        version = (
            f"{VERSION}(nouns@{nouns['version']},attributes@{attrs['version']},"
            f"relation_semantics@{rels['version']},{table.version})"
        )
        return cls(version=version, _attr_table=table, _ie=inflect.engine(), **kw)

    # ------------------------------------------------------------------ coverage

    def noun_status(self, name: str) -> str | None:
        """How a name is classified: "category:<c>", "crowd:<group>", "mass", "part", "not_object:<group>"
        (several joined by "|"), or None when the tables know nothing of it."""
        out: list[str] = []
        cat = self.name_category(name)
        if cat is not None:
            out.append(f"category:{cat}")
        group = self.crowd_group(name)
        if group is not None:
            out.append(f"crowd:{group}")
        if self.is_mass(name):
            out.append("mass")
        if self.is_part_name(name):
            out.append("part")
        hit = self._not_object_hit(name)
        if hit is not None:
            out.append(f"not_object:{hit[0]}")
        return "|".join(out) or None

    def coverage(
        self, names: Iterable[str], attributes: Iterable[str], relations: Iterable[str]
    ) -> dict[str, dict[str, Any]]:
        """How many words of each list the tables classify, and which they do not."""

        def tally(words: Iterable[str], status: Any) -> dict[str, Any]:
            words = list(dict.fromkeys(words))
            kinds: dict[str, int] = {}
            missing: list[str] = []
            for w in words:
                s = status(w)
                if s is None:
                    missing.append(w)
                else:
                    first = s.split("|")[0].split(":")[0]
                    kinds[first] = kinds.get(first, 0) + 1
            return {"total": len(words), "covered": len(words) - len(missing), "by_kind": kinds, "uncovered": missing}

        def attr_status(a: str) -> str | None:
            cat = self.attribute_category(a)
            return None if cat is None else f"category:{cat}"

        def rel_status(r: str) -> str | None:
            f = self.relation_form(r)
            if f is None:
                return None
            if any(f in ax.poles for ax in self._axes):
                return "contradiction"
            if f in self._rel_synonyms or f in self._rel_implies:
                return "synonym"
            return "no_opposite"

        return {
            "names": tally(names, self.noun_status),
            "attributes": tally(attributes, attr_status),
            "relations": tally(relations, rel_status),
        }

    # ------------------------------------------------------------------ self-check

    def _nested(self, a: Category, b: Category) -> bool:
        """Two facets of one kind: a root of one is (a hyponym of) a root of the other."""
        return any(x == y or y in self._ancestors(x) or x in self._ancestors(y) for x in a.roots for y in b.roots)

    def check(self) -> list[str]:
        """Structural problems in the tables (the tests require none)."""
        problems: list[str] = []
        # a name listed in two categories must be a declared homonym or sit in facets of one root
        seen: dict[str, Category] = {}
        for cat in self._categories:
            for name in cat.classes:
                prev = seen.get(name)
                if prev is None:
                    seen[name] = cat
                elif name not in self._homonyms and not self._nested(prev, cat):
                    problems.append(f"'{name}' is in categories {prev.name!r} and {cat.name!r}")
        for c in self._parents:
            if c in self._ancestors(c):
                problems.append(f"is-a cycle through '{c}'")
        for name in self._known_nouns:
            if self.noun_status(name) is None:
                problems.append(f"'{name}' is named in the noun tables but classified nowhere")
            lem = self.lemma(name)
            if lem != name and name not in self._forms:
                problems.append(f"'{name}' in the noun tables is not a lemma (lemma: '{lem}')")
        for a, b in self._antonyms.items():
            if not self.attributes_contradict(a, b)[0]:
                problems.append(f"antonyms '{a}'/'{b}' do not contradict: {self.attributes_contradict(a, b)[1]}")
        for spelling, canon in self._attr_synonyms.items():
            if self.attribute_category(canon) is None:
                problems.append(f"attribute synonym '{spelling}' -> '{canon}' has no category")
        categories = {c.name for c in self._categories}
        for cat, kinds in self._attr_free.items():
            for k in sorted((kinds or frozenset()) - categories):
                problems.append(f"free_on.{cat} names the noun category '{k}', which does not exist")
        for scale in self._scales:
            for word in (*scale.classes, *scale.any):
                if self.attribute_category(word) is None:
                    problems.append(f"attribute '{word}' of scale {scale.name!r} has no category")
        for word in self._attr_added:
            if self._attr_table.category(word) is not None:
                problems.append(f"attribute '{word}' is added but the category table has it")
        for r, same in self._rel_synonyms.items():
            for s in same:
                if s != r and self.relations_contradict(r, s)[0]:
                    problems.append(f"relation synonyms '{r}'/'{s}' contradict")
        for r in (*self._rel_symmetric, *self._rel_converse):
            if self.relation_form(r) is None:
                problems.append(f"relation '{r}' of symmetric/converse is in no table")
        for ax in self._axes:
            for r in ax.poles:
                if self.relation_form(r) != r:
                    problems.append(f"relation '{r}' of axis {ax.name!r} does not read as itself")
        return problems


@lru_cache(maxsize=1)
def _default_words() -> Words:
    return Words._read(data_path("templates"))
