"""Loaders for the versioned data files under `templates/` (names, relations, English facts)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hardneg.core.errors import ConfigError


class DataLoader(yaml.SafeLoader):
    """YAML without 1.1's on/off/yes/no booleans ("on" is a GQA relation, not True), refusing duplicate
    keys (a repeated config key or table entry would silently drop the first)."""


DataLoader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:bool"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
DataLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class DuplicateKeyError(yaml.constructor.ConstructorError, ValueError):
    """A key repeated in one YAML mapping, which YAML would resolve silently by keeping the last."""


def _mapping_without_duplicates(loader: DataLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key: construct_mapping says so
            continue
        if repeated:
            raise DuplicateKeyError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep)


DataLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def load_yaml_text(text: str) -> Any:
    """YAML as the project reads it: "on" stays a string, and a repeated key is an error."""
    return yaml.load(text, Loader=DataLoader)


def load_data_file(path: Path) -> dict:
    """A versioned YAML data file the config names (`templates/...`, or the user's own), every way it can
    fail to be one as a ConfigError line."""
    try:
        data = load_yaml_text(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"data file not found: {path}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"data file {path} is not valid YAML: {e}") from None
    if not isinstance(data, dict) or "version" not in data:
        raise ConfigError(f"{path} must be a mapping with a 'version' key")
    return data


@dataclass(slots=True, frozen=True)
class PoorReferents:
    """Names that are never a target; `related_ok` groups may still be related objects."""

    version: str
    reasons: dict[str, str]  # name -> "<group>: <reason>"
    never_related: frozenset[str]

    @classmethod
    def load(cls, path: Path) -> PoorReferents:
        data = load_data_file(path)
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
        data = load_data_file(path)
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

    @classmethod
    def load(cls, path: Path) -> English:
        data = load_data_file(path)
        return cls(
            version=f"english@{data['version']}",
            adjective_order=tuple(data["adjective_order"]),
            singular_s=frozenset(data["singular_s"]),
            plural=frozenset(data["plural"]),
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
        data = load_data_file(path)
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
        data = load_data_file(path)
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
