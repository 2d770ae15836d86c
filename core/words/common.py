"""The word tables' common ground (core/words/table.py): name normalisation, the strict YAML reader the three
tables are read with, and the records they are read into (noun categories, attribute scales, relation
axes). Nothing here knows the `Words` class; words_readers.py turns the tables into its fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hardneg.core.words.vocab import DataLoader

_SPACES = re.compile(r"\s+")


def _norm(word: str) -> str:
    return _SPACES.sub(" ", word.replace("_", " ").strip().lower())


class _StrictLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """The project's YAML reading (DataLoader's resolvers: "on" stays a string) on libyaml when present,
    refusing duplicate keys: in a word table a repeated key would silently drop the first list."""


_StrictLoader.yaml_implicit_resolvers = dict(DataLoader.yaml_implicit_resolvers)


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ValueError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1}")
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_text(), Loader=_StrictLoader)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    except FileNotFoundError:
        raise ValueError(f"word table not found: {path}") from None
    if not isinstance(data, dict) or "version" not in data:
        raise ValueError(f"{path} must be a mapping with a 'version' key")
    return data


def _names(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return [_norm(v) for v in value]


@dataclass(slots=True, frozen=True)
class Category:
    """A replacement category: names in different classes contradict (unless related); a name not listed
    inherits the classes of its nearest listed hypernyms. `roots` name hypernyms whose hyponyms belong to
    the category even when unlisted (they are then unclassed: they contradict nothing in it)."""

    name: str
    label: str
    roots: frozenset[str]
    classes: dict[str, frozenset[str]]  # canonical name -> its classes
    similar_size: bool  # members are of one scale, so `same size` comparisons between them are fair


@dataclass(slots=True, frozen=True)
class Scale:
    """An exclusive attribute scale: two words contradict when their classes share none (after `near`)."""

    name: str
    classes: dict[str, frozenset[str]]  # word -> classes
    near: frozenset[frozenset[str]]  # pairs of classes an annotator cannot tell apart
    any: frozenset[str]  # words compatible with every class ("colorful")

    def compatible(self, a: str, b: str) -> bool | None:
        """None when the scale does not hold both words."""
        if a in self.any and (b in self.any or b in self.classes):
            return True
        if b in self.any and a in self.classes:
            return True
        ca, cb = self.classes.get(a), self.classes.get(b)
        if ca is None or cb is None:
            return None
        if ca & cb:
            return True
        return any(frozenset((x, y)) in self.near for x in ca for y in cb)


@dataclass(slots=True, frozen=True)
class Axis:
    """A relation axis: relations in different poles contradict, except for listed objects."""

    name: str
    poles: dict[str, frozenset[str]]  # relation -> poles
    except_objects: frozenset[str]
    except_relations: frozenset[str]
    except_reason: str
