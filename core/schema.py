"""Record types: the shape of one kind of stage output, and a cheap check of a row against it.

Every output kind a stage writes has a record type (`Stage.writes`): a dataclass whose fields are the
row's JSON keys, in the order the writer puts them, required unless the field has a default. The runner
checks the first row of every write against it (every row in `core/runner/alone.py`'s runs), so a writer
that drops or misspells a key fails in the stage that wrote it, not in a reader three stages later; and
`Unit.records` hands readers the rows as those dataclasses. Rows are plain dicts on disk; a writer hands
`Unit.write` records or dicts, and a record becomes its row by `as_row`: its fields in order, or what its
own `to_row` says where the row leaves a field out.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

R = TypeVar("R")


@dataclasses.dataclass(slots=True, frozen=True)
class Schema:
    name: str
    required: frozenset[str]
    allowed: frozenset[str]


@functools.cache
def schema(record: type) -> Schema:
    """The fields of a record type: all of them, and those without a default."""
    if not dataclasses.is_dataclass(record):
        raise TypeError(f"{record!r} is not a dataclass: a record type lists a row's fields")
    fields = dataclasses.fields(record)
    missing = dataclasses.MISSING
    required = frozenset(f.name for f in fields if f.default is missing and f.default_factory is missing)
    return Schema(record.__name__, required, frozenset(f.name for f in fields))


@dataclasses.dataclass(frozen=True, slots=True)
class Output(Generic[R]):
    """One kind of a stage's output, typed: the stage that writes it, the kind, its record type. A stage
    declares what it writes with these (`outputs`), and a reader names one (`Unit.records(output)` gives
    its records as `record`) instead of the stage's name, the kind and the type as three loose values."""

    stage: str
    kind: str
    record: type[R]


def outputs(*declared: Output[Any] | dict[str, type]) -> Mapping[str, type]:
    """A stage's `writes`: its outputs' kinds and their record types (its handles, all of one stage, or a
    dict of kind -> record type), each checked to be a record type, read-only."""
    kinds: dict[str, type] = {}
    stages = {d.stage for d in declared if isinstance(d, Output)}
    if len(stages) > 1:
        raise ValueError(f"a stage's outputs are its own, not those of {', '.join(sorted(stages))}")
    for d in declared:
        kinds.update({d.kind: d.record} if isinstance(d, Output) else d)
    for record in kinds.values():
        schema(record)
    return MappingProxyType(kinds)


def row_problem(row: Any, record: type) -> str | None:
    """What is wrong with `row` as a `record` (None: nothing): not a JSON object, a required field
    missing, a field the record type does not have."""
    if not isinstance(row, dict):
        return f"a row is a {type(row).__name__}, not a dict"
    s = schema(record)
    if missing := s.required - row.keys():
        return f"a row lacks {', '.join(sorted(missing))} (required by {s.name})"
    if unknown := row.keys() - s.allowed:
        return f"a row has {', '.join(sorted(map(str, unknown)))}, which {s.name} does not declare"
    return None


def as_row(record: Any) -> dict[str, Any]:
    """The stored row of a record (a dict is one already): `record.to_row()` where the record type defines
    it (a row that leaves a field out), else every field, in order."""
    if isinstance(record, dict):
        return record
    if (to_row := getattr(record, "to_row", None)) is not None:
        return to_row()
    if not dataclasses.is_dataclass(record):
        raise TypeError(f"a {type(record).__name__} is neither a row nor a record")
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def to_record(row: dict[str, Any], record: type[R]) -> R:
    """A stored row as its record type; a row of another shape names what is wrong with it."""
    try:
        return record(**row)
    except TypeError:
        raise ValueError(row_problem(row, record) or f"a row does not fit {record.__name__}") from None
