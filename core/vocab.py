"""Loaders for the versioned data files under `templates/` (names, relations, English facts)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


def _load_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"data file not found: {path}") from None
    if not isinstance(data, dict) or "version" not in data:
        raise ValueError(f"{path} must be a mapping with a 'version' key")
    return data


@dataclass(slots=True, frozen=True)
class PoorReferents:
    """Names that are never a target; `related_ok` groups may still be related objects."""

    version: str
    reasons: dict[str, str]  # name -> "<group>: <reason>"
    never_related: frozenset[str]

    @classmethod
    def load(cls, path: Path) -> PoorReferents:
        data = _load_yaml(path)
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
        data = _load_yaml(path)
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
    article_a: frozenset[str]
    article_an: frozenset[str]

    @classmethod
    def load(cls, path: Path) -> English:
        data = _load_yaml(path)
        return cls(
            version=f"english@{data['version']}",
            adjective_order=tuple(data["adjective_order"]),
            singular_s=frozenset(data["singular_s"]),
            plural=frozenset(data["plural"]),
            article_a=frozenset(data["article_a"]),
            article_an=frozenset(data["article_an"]),
        )

    def is_plural(self, noun: str) -> bool:
        last = noun.split()[-1]
        if last in self.plural:
            return True
        if last in self.singular_s or last.endswith(("ss", "us", "is")):
            return False
        return last.endswith("s")

    def indefinite(self, phrase: str) -> str:
        first = phrase.split()[0]
        if first in self.article_an:
            return "an"
        if first in self.article_a:
            return "a"
        return "an" if first[:1] in "aeiou" else "a"
