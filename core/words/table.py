"""Word semantics: when a replacement word truly contradicts the original.

FineCops-Ref replaces a word of a referring expression with "a misleading word of the same category that
contradicts it". Same category is not enough: a synonym, a plural form, a hypernym or hyponym, a part or
whole, an attribute that can hold at once or a compatible relation leaves the expression true of the image.
`Words` reads three versioned tables under `templates/` and answers, with a reason, whether two words
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

The package is split by table (each module says what it holds): `common` (normalisation, the YAML reading,
the category/scale/axis records), `readers` (tables -> the objects below), `forms` (`NounForms`: English
forms of names, inflect), `nouns` (`Nouns`), `attributes` (`Attributes`) and `relations` (`Relations`).
`Words` composes them and is the one facade callers use: its methods hand each question to the part that
answers it; it adds loading, coverage and the self-check across the tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from hardneg.core.io import digest, file_digest
from hardneg.core.resources import data_path
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.attributes import Attributes
from hardneg.core.words.common import read_yaml
from hardneg.core.words.nouns import ONE_CLASS, Nouns
from hardneg.core.words.readers import read_attributes, read_nouns, read_relations
from hardneg.core.words.relations import Relations

VERSION = "words@v1"
NOUNS_FILE = "nouns.v1.yaml"
ATTRIBUTES_FILE = "attributes.v1.yaml"
RELATIONS_FILE = "relation_semantics.v1.yaml"
ATTRIBUTE_TABLE_FILE = "attribute_categories.json"


def words_digest() -> str:
    """Identity of the bundled word tables, for the fingerprints of the stages that read them."""
    return digest([file_digest(data_path(f"templates/{f}")) for f in (NOUNS_FILE, ATTRIBUTES_FILE, RELATIONS_FILE)])


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: the tables are loaded once
class Words:
    """The word tables, loaded once. A replacement is accepted only when these say the two words contradict;
    every answer that refuses says why. The methods' documentation is on the parts that answer them."""

    version: str
    nouns: Nouns
    attributes: Attributes
    relations: Relations
    _built: dict[tuple[str, frozenset[str], frozenset[str]], str | None] = field(default_factory=dict, init=False)
    _comes: dict[tuple[str, str], bool | None] = field(default_factory=dict, init=False)

    def __repr__(self) -> str:
        return f"Words({self.version!r})"

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, directory: str | Path | None = None) -> Words:
        """Read the tables from `directory`, or the bundled `templates/` when None (cached)."""
        if directory is None:
            return _default_words()
        return cls._read(Path(directory))

    @classmethod
    def _read(cls, d: Path) -> Words:
        noun_data, attr_data, rel_data = (read_yaml(d / f) for f in (NOUNS_FILE, ATTRIBUTES_FILE, RELATIONS_FILE))
        table_path = d / ATTRIBUTE_TABLE_FILE
        table = AttributeTable.load(table_path if table_path.exists() else None)
        nouns = read_nouns(noun_data)
        version = (
            f"{VERSION}(nouns@{noun_data['version']},attributes@{attr_data['version']},"
            f"relation_semantics@{rel_data['version']},{table.version})"
        )
        return cls(
            version=version,
            nouns=nouns,
            attributes=read_attributes(attr_data, table),
            relations=read_relations(rel_data, nouns.forms),
        )

    # ------------------------------------------------------------------ English forms of names

    def lemma(self, name: str) -> str:
        return self.nouns.forms.lemma(name)

    def is_plural(self, name: str) -> bool:
        return self.nouns.forms.is_plural(name)

    def plural(self, name: str) -> str:
        return self.nouns.forms.plural(name)

    def is_mass(self, name: str) -> bool:
        return self.nouns.forms.is_mass(name)

    def indefinite_article(self, phrase: str) -> str:
        return self.nouns.forms.indefinite_article(phrase)

    def be_verb(self, name: str) -> str:
        return self.nouns.forms.be_verb(name)

    # ------------------------------------------------------------------ nouns

    @property
    def known_nouns(self) -> frozenset[str]:
        """Every object name the tables know (categories, crowds, parts, synonyms, ...)."""
        return self.nouns.known

    def is_known(self, name: str) -> bool:
        return self.nouns.is_known(name)

    def is_a(self, name: str, ancestor: str) -> bool:
        return self.nouns.is_a(name, ancestor)

    def is_person(self, name: str) -> bool:
        return self.nouns.is_person(name)

    def is_crowd(self, name: str) -> bool:
        return self.nouns.is_crowd(name)

    def crowd_reason(self, name: str) -> str | None:
        return self.nouns.crowd_reason(name)

    def crowd_group(self, name: str) -> str | None:
        return self.nouns.crowd_group(name)

    def not_object_reason(self, name: str) -> str | None:
        return self.nouns.not_object_reason(name)

    def is_part_name(self, name: str) -> bool:
        return self.nouns.is_part_name(name)

    def direct_part_of(self, part: str, whole: str) -> str | None:
        return self.nouns.direct_part_of(part, whole)

    def surface_kind(self, name: str) -> str | None:
        return self.nouns.surface_kind(name)

    def is_part_of_things(self, name: str) -> bool:
        return self.nouns.is_part_of_things(name)

    def shares_whole(self, part: str, other: str) -> bool:
        return self.nouns.shares_whole(part, other)

    def name_category(self, name: str) -> str | None:
        return self.nouns.name_category(name)

    def noun_status(self, name: str) -> str | None:
        return self.nouns.noun_status(name)

    def category_members(self, category: str) -> tuple[str, ...]:
        return self.nouns.category_members(category)

    def same_kind(self, a: str, b: str) -> bool:
        return self.nouns.same_kind(a, b)

    def is_part_of(self, part: str, whole: str) -> bool:
        return self.nouns.is_part_of(part, whole)

    def name_relation(self, a: str, b: str) -> str | None:
        return self.nouns.name_relation(a, b)

    def names_contradict(self, a: str, b: str) -> tuple[bool, str]:
        return self.nouns.names_contradict(a, b)

    def one_class(self, a: str, b: str) -> str | None:
        """Why one object may be called both `a` and `b` though neither is a kind, part or synonym of the other:
        every category of the tables that classes both puts them in one class (a man and a player, a skier and
        a woman), or None."""
        ok, why = self.nouns.names_contradict(a, b)
        return why if not ok and why.startswith(ONE_CLASS) else None

    def contradicting(self, name: str, candidates: Iterable[str]) -> list[str]:
        return self.nouns.contradicting(name, candidates)

    def size_comparable(self, name_a: str, name_b: str) -> bool:
        return self.nouns.size_comparable(name_a, name_b)

    # ------------------------------------------------------------------ attributes

    def attribute_category(self, attribute: str) -> str | None:
        return self.attributes.attribute_category(attribute)

    def attributes_contradict(self, a: str, b: str, name: str | None = None) -> tuple[bool, str]:
        """Whether one object cannot carry both attributes; on an object called `name`, two materials of
        the two parts it is often built of hold at once ("glass" and "wooden" on a door: a pane in a frame)."""
        got = self.attributes.attributes_contradict(a, b)
        if not got[0] or name is None:
            return got
        ma, mb = self.attributes.materials(a), self.attributes.materials(b)
        if not ma or not mb:
            return got
        key = (name, ma, mb)
        if key not in self._built:
            self._built[key] = self._built_of(name, ma, mb)
        if (why := self._built[key]) is None:
            return got
        thing = f"{self.indefinite_article(name)} {name}".strip()
        return False, f"{thing} is often built of both '{a}' and '{b}': {why}"

    def _built_of(self, name: str, ma: frozenset[str], mb: frozenset[str]) -> str | None:
        for names, (one, other), why in self.attributes.built_of:
            if ((ma & one and mb & other) or (ma & other and mb & one)) and any(
                name == n or self.is_a(name, n) for n in names
            ):
                return why
        return None

    def comes_in(self, attribute: str, name: str) -> bool | None:
        """Whether a `name` of a natural kind comes in the colour `attribute` names: every hue region of the
        word is one the table's `comes_in` gives the name, or its nearest hypernym listed there ("pony" reads
        "horse"). None when the word is no hue or no listed name covers `name`."""
        key = (attribute, name)
        if key not in self._comes:
            hues = self.attributes.hues(attribute)
            listed = [k for k in self.attributes.comes_in if self.is_a(name, k)] if hues else []
            # the nearest: a listed name no other listed match is a kind of ("flower" before "plant")
            near = [k for k in listed if not any(o != k and self.is_a(o, k) for o in listed)]
            palettes = [self.attributes.comes_in[k] for k in sorted(near)]
            self._comes[key] = None if not near else any(p is None or hues <= p for p in palettes)
        return self._comes[key]

    def several(self, attribute: str, others: tuple[str, ...]) -> bool:
        return self.attributes.several(attribute, others)

    def fits_any(self, attribute: str, noun_category: str | None) -> bool:
        return self.attributes.fits_any(attribute, noun_category)

    def antonym(self, attribute: str) -> str | None:
        return self.attributes.antonym(attribute)

    def is_person_attribute(self, attribute: str) -> bool:
        return self.attributes.is_person_attribute(attribute)

    def person_attribute_reason(self, attribute: str) -> str | None:
        return self.attributes.person_attribute_reason(attribute)

    # ------------------------------------------------------------------ relations

    def relation_form(self, relation: str) -> str | None:
        return self.relations.relation_form(relation)

    def is_symmetric(self, relation: str) -> bool:
        return self.relations.is_symmetric(relation)

    def is_support(self, relation: str) -> bool:
        return self.relations.is_support(relation)

    def axes_of(self, relation: str) -> frozenset[str]:
        return self.relations.axes_of(relation)

    def is_positional(self, relation: str) -> bool:
        return self.relations.is_positional(relation)

    def converse(self, relation: str) -> str | None:
        return self.relations.converse(relation)

    def relation_synonyms(self, relation: str) -> tuple[str, ...]:
        return self.relations.relation_synonyms(relation)

    def relations_contradict(self, r1: str, r2: str, obj: str | None = None) -> tuple[bool, str]:
        return self.relations.relations_contradict(r1, r2, obj)

    # ------------------------------------------------------------------ coverage and self-check

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
            cat = self.attributes.attribute_category(a)
            return None if cat is None else f"category:{cat}"

        return {
            "names": tally(names, self.nouns.noun_status),
            "attributes": tally(attributes, attr_status),
            "relations": tally(relations, self.relations.status),
        }

    def check(self) -> list[str]:
        """Structural problems in the tables (the tests require none)."""
        noun_categories = frozenset(c.name for c in self.nouns.categories)
        unknown = [f"comes_in names '{n}', which the noun table does not know"
                   for n in self.attributes.comes_in if not self.is_known(n)]  # fmt: skip
        return [*self.nouns.check(), *self.attributes.check(noun_categories), *self.relations.check(), *unknown]


@lru_cache(maxsize=1)
def _default_words() -> Words:
    return Words._read(data_path("templates"))
