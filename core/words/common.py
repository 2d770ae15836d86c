"""What the word package shares: name normalisation, the project's YAML reading (every versioned data file
under `templates/` and the run configs are read with it), and the records the word tables are read into
(noun categories, attribute scales, relation axes). Nothing here knows the table classes; readers.py turns
the tables into them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from hardneg.core.errors import ConfigError

_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1 << 16)  # the same few thousand words, asked millions of times by the word tables
def norm(word: str) -> str:
    """A word as the tables key it: lower case, "_" read as a space, runs of spaces as one."""
    return _SPACES.sub(" ", word.replace("_", " ").strip().lower())


def word_list(value: Any, where: str) -> list[str]:
    """A table entry that must be a list of words, normalised; `where` names the entry in the error."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where} must be a list of strings")
    return [norm(v) for v in value]


class DataLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
    """YAML without 1.1's on/off/yes/no booleans ("on" is a GQA relation, not True), refusing duplicate
    keys (a repeated config key or table entry would silently drop the first). On libyaml when present:
    the noun table alone takes a quarter of a second to parse in pure Python."""


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


def read_yaml(path: Path) -> dict[str, Any]:
    """A versioned data file (`templates/...`, or the user's own that the config names): a mapping with a
    'version' key. Every way it can fail to be one is a ConfigError naming the file."""
    try:
        data = load_yaml_text(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"data file not found: {path}") from None
    except DuplicateKeyError as e:
        raise ConfigError(f"{path}: {e.problem} at line {e.problem_mark.line + 1}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"data file {path} is not valid YAML: {e}") from None
    if not isinstance(data, dict) or "version" not in data:
        raise ConfigError(f"{path} must be a mapping with a 'version' key")
    return data


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
