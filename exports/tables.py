"""An export's per-split tables, written as their rows come: `<prefix><split>.json` (a JSON array, one record
a line) and `<prefix><split>.parquet` (nested fields as JSON text).

The parquet files of an export share one schema and one column order (a split with no rows is written with
the others' columns: every split loads alike), and a column's type is inferred from all of its values in
every split. So the schema is known only once every row has come: `Tables` writes the JSON files as the rows
come, infers the types a chunk of rows at a time, and writes the parquet files from the JSON files it wrote,
a row group at a time. No more than a chunk of rows is held (an export of GQA train is hundreds of
thousands). A column whose chunks disagree (whole numbers in one, fractions in another; an empty list, then
words) has its type inferred from all of its values at once, as if every row were held.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.io import JsonArrayWriter, dumps, iter_json_array, temp_path
from hardneg.core.schema import as_row

CHUNK = 10_000  # rows held to infer their columns' types, and rows in a parquet row group


class Tables:
    """`add(split, row)` as the rows come, then `close()`; as a context manager, closed at the end, or on an
    error its unfinished files removed. Every split in `splits` gets its files, with rows or without; a row of
    another split adds that split's files after them."""

    def __init__(self, folder: Path, prefix: str = "", splits: Iterable[str] = ()) -> None:
        self.folder, self.prefix = folder, prefix
        self._json: dict[str, JsonArrayWriter] = {}
        self._columns: dict[str, dict[str, None]] = {}  # per split, in the order first seen
        self._types: dict[str, set[Any] | None] = {}  # a column's chunk types; None: JSON text
        self._chunk: list[dict[str, Any]] = []
        self._held: dict[str, list[dict[str, Any]]] = {}  # rows the caller holds anyway: not read back
        for s in splits:
            self._writer(s)

    def _writer(self, split: str) -> JsonArrayWriter:
        """The split's JSON file, opened the first time the split is named."""
        if split not in self._json:
            self._json[split] = JsonArrayWriter(self.folder / f"{self.prefix}{split}.json")
            self._columns[split] = {}
        return self._json[split]

    def add(self, split: str, row: Any) -> None:
        """One row of `split`: a dict or a record (`core/schema.py: as_row`)."""
        row = as_row(row)
        self._writer(split).write(row)
        self._columns[split].update(dict.fromkeys(row))
        self._chunk.append(row)
        if len(self._chunk) >= CHUNK:
            self._infer()

    def add_all(self, rows_by_split: dict[str, Iterable[Any]]) -> None:
        """Every split's rows; a list is held until `close` writes its parquet file from it (the caller holds
        it anyway), any other iterable is read back from its JSON file."""
        for split, rows in rows_by_split.items():
            self._writer(split)  # its files even with no rows
            for r in rows:
                self.add(split, r)
            if isinstance(rows, list):
                self._held[split] = [as_row(r) for r in rows]

    @property
    def splits(self) -> list[str]:
        """The splits with files, in the order they were named."""
        return list(self._json)

    def __enter__(self) -> Tables:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is None:
            self.close()
        else:
            for w in self._json.values():
                w.abort()

    def close(self) -> None:
        """The JSON files closed, the schema from every row's types, the parquet files written."""
        import pyarrow.parquet as pq  # loads only where an export is written

        self._infer()
        for w in self._json.values():
            w.close()
        schema = self._schema()
        for split in self._json:
            out = self.folder / f"{self.prefix}{split}.parquet"
            tmp = temp_path(out)
            try:
                with pq.ParquetWriter(tmp, schema) as writer:  # no row group for no rows: one of 0 rows chokes readers
                    for rows in _chunks(self._rows(split)):
                        writer.write_table(_table(rows, schema))
                os.replace(tmp, out)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise

    def _rows(self, split: str) -> Iterable[dict[str, Any]]:
        held = self._held.get(split)
        return held if held is not None else iter_json_array(self._json[split].path)

    def _infer(self) -> None:
        import pyarrow as pa

        columns = dict.fromkeys(k for r in self._chunk for k in r)
        for c in columns:
            seen = self._types.setdefault(c, set())
            if seen is None:
                continue
            try:
                seen.add(pa.array([_cell(r.get(c)) for r in self._chunk]).type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
                self._types[c] = None  # values that share no type here share none in every row
        self._chunk = []

    def _schema(self) -> Any:
        import pyarrow as pa

        columns = dict.fromkeys(c for cols in self._columns.values() for c in cols)
        fields = []
        for c in columns:
            seen = self._types.get(c, set())
            known = {t for t in seen or () if t != pa.null()}
            if seen is None:
                t = pa.string()
            elif len(known) <= 1:
                t = next(iter(known), pa.null())
            else:  # the chunks disagree: what all the values together make
                t = _whole_type([_cell(r.get(c)) for split in self._json for r in self._rows(split)])
            fields.append(pa.field(c, t))
        return pa.schema(fields)


def _whole_type(values: list[Any]) -> Any:
    import pyarrow as pa

    try:
        return pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.string()


def _chunks(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for r in rows:
        chunk.append(r)
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _table(rows: list[dict[str, Any]], schema: Any) -> Any:
    import pyarrow as pa

    def fit(v: Any, t: Any) -> Any:
        return v if v is None or not pa.types.is_string(t) or isinstance(v, str) else dumps(v).decode()

    columns = [pa.array([fit(_cell(r.get(f.name)), f.type) for r in rows], type=f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _cell(v: Any) -> Any:
    """A parquet cell: scalars and lists of strings as they are, anything nested as JSON text."""
    if isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict | list) for x in v)):
        return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS).decode()
    return v
