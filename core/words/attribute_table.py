"""The attribute -> category table (data in `templates/attribute_categories.json`).

GQA attributes carry no category, but `same_attr` paths and same-category replacement need one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.errors import ConfigError
from hardneg.core.resources import data_path

DEFAULT_TABLE = Path("templates/attribute_categories.json")


@dataclass(slots=True, frozen=True)
class AttributeTable:
    version: str
    categories: dict[str, tuple[str, ...]]
    _by_attribute: dict[str, str]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttributeTable:
        cats = data.get("categories")
        if not isinstance(cats, dict):
            raise ValueError("attribute table needs a 'categories' object of category -> [attributes]")
        by_attr: dict[str, str] = {}
        for cat, attrs in cats.items():
            if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
                raise ValueError(f"attribute category {cat!r} must list strings")
            for a in attrs:
                if a in by_attr:
                    raise ValueError(f"attribute {a!r} is in two categories: {by_attr[a]!r} and {cat!r}")
                by_attr[a] = cat
        return cls(
            version=str(data.get("version", "unversioned")),
            categories={c: tuple(a) for c, a in cats.items()},
            _by_attribute=by_attr,
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> AttributeTable:
        """The table in a JSON file (the config's `attribute_table`), every way it is none as a ConfigError."""
        p = data_path(path if path is not None else DEFAULT_TABLE)
        try:
            return cls.from_json(orjson.loads(p.read_bytes()))
        except FileNotFoundError:
            raise ConfigError(f"attribute table not found: {p}") from None
        except orjson.JSONDecodeError as e:
            raise ConfigError(f"attribute table {p} is not valid JSON: {e}") from None
        except ValueError as e:  # from_json: not a table
            raise ConfigError(f"attribute table {p}: {e}") from None

    def category(self, attribute: str) -> str | None:
        return self._by_attribute.get(attribute)

    def swap_pairs(
        self,
        a: Iterable[str],
        b: Iterable[str],
        a_held: Collection[str] | None = None,
        b_held: Collection[str] | None = None,
    ) -> Iterator[tuple[str, str, str]]:
        """(x, y, category) for an attribute x of one object and y of another that a swap of attributes can
        exchange: one category, different, neither already held by the other object (`a_held`, `b_held`:
        every attribute each object has, when more than `a` and `b`)."""
        b = tuple(b)
        a_held = set(a) if a_held is None else a_held
        b_held = set(b) if b_held is None else b_held
        for x in a:
            c = self.category(x)
            if c is None:
                continue
            for y in b:
                if x != y and self.category(y) == c and x not in b_held and y not in a_held:
                    yield x, y, c

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "categories": {c: list(a) for c, a in self.categories.items()}}
