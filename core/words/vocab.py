"""The small versioned data files under `templates/` (poor referents, relations, English facts, name categories,
the lexicon), each read into a record with its version."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hardneg.core.words.common import read_yaml


@dataclass(slots=True, frozen=True)
class PoorReferents:
    """Names that are never a target; `related_ok` groups may still be related objects."""

    version: str
    reasons: dict[str, str]  # name -> "<group>: <reason>"
    never_related: frozenset[str]

    @classmethod
    def load(cls, path: Path) -> PoorReferents:
        data = read_yaml(path)
        reasons: dict[str, str] = {}
        never: set[str] = set()
        for group, spec in data.get("groups", {}).items():
            for name in spec["names"]:
                reasons.setdefault(name, f"{group}: {spec['reason']}")
                if not spec.get("related_ok", False):
                    never.add(name)
        return cls(version=f"poor_referents@{data['version']}", reasons=reasons, never_related=frozenset(never))


@dataclass(slots=True, frozen=True)
class RelationVocab:
    version: str
    skip: frozenset[str]
    skip_reason: str
    spatial: frozenset[str]
    phrase: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> RelationVocab:
        data = read_yaml(path)
        return cls(
            version=f"relations@{data['version']}",
            skip=frozenset(data["skip"]["names"]),
            skip_reason=data["skip"]["reason"],
            spatial=frozenset(data.get("spatial", [])),
            phrase=dict(data.get("phrase") or {}),
        )


@dataclass(slots=True, frozen=True)
class English:
    version: str
    adjective_order: tuple[str, ...]
    singular_s: frozenset[str]
    plural: frozenset[str]
    predicative: frozenset[str] = frozenset()  # attributes said after "is", never before the noun

    @classmethod
    def load(cls, path: Path) -> English:
        data = read_yaml(path)
        return cls(
            version=f"english@{data['version']}",
            adjective_order=tuple(data["adjective_order"]),
            singular_s=frozenset(data["singular_s"]),
            plural=frozenset(data["plural"]),
            predicative=frozenset(data.get("predicative") or ()),
        )

    def is_plural(self, noun: str) -> bool:
        last = noun.split()[-1]
        if last in self.plural:
            return True
        if last in self.singular_s or last.endswith(("ss", "us", "is")):
            return False
        return last.endswith("s")


@dataclass(slots=True, frozen=True)
class NameCategories:
    """Object name -> category (templates/name_categories.v1.yaml), for same-category replacement."""

    version: str
    by_name: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> NameCategories:
        data = read_yaml(path)
        by_name: dict[str, str] = {}
        for cat, names in data["categories"].items():
            for n in names:
                by_name.setdefault(n, cat)
        return cls(version=f"name_categories@{data['version']}", by_name=by_name)

    def category(self, name: str) -> str | None:
        return self.by_name.get(name)


@dataclass(slots=True, frozen=True)
class Lexicon:
    """Synonyms, antonyms, relation categories and paraphrase rules (templates/lexicon.v1.yaml)."""

    version: str
    relation_synonyms: dict[str, tuple[str, ...]]
    attribute_synonyms: dict[str, tuple[str, ...]]
    antonyms: dict[str, str]
    relation_category: dict[str, str]
    paraphrases: tuple[tuple[str, str], ...]

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        data = read_yaml(path)
        syn = data.get("synonyms", {})
        rel_cat: dict[str, str] = {}
        for cat, names in data.get("relation_categories", {}).items():
            for n in names:
                rel_cat.setdefault(n, cat)
        return cls(
            version=f"lexicon@{data['version']}",
            relation_synonyms={k: tuple(v) for k, v in (syn.get("relations") or {}).items()},
            attribute_synonyms={k: tuple(v) for k, v in (syn.get("attributes") or {}).items()},
            antonyms=dict(data.get("antonyms") or {}),
            relation_category=rel_cat,
            paraphrases=tuple((a, b) for a, b in data.get("paraphrases", [])),
        )
