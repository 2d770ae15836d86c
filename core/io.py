"""Small file helpers: atomic writes and JSON Lines, so an interrupted run never leaves half a file."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def dumps(obj: Any, indent: bool = False) -> bytes:
    opt = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, option=opt | orjson.OPT_NON_STR_KEYS)


def write_json(path: Path, obj: Any, indent: bool = True) -> None:
    atomic_write_bytes(path, dumps(obj, indent) + b"\n")


def write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Write rows atomically; returns the count."""
    chunks = [dumps(r) + b"\n" for r in rows]
    atomic_write_bytes(path, b"".join(chunks))
    return len(chunks)


def read_jsonl(path: Path) -> Iterator[Any]:
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                yield orjson.loads(line)


class JsonArrayWriter:
    """Stream a JSON array to disk one element per line; renamed into place on close."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        self._f = self._tmp.open("wb")
        self._f.write(b"[")
        self.count = 0

    def write(self, obj: Any) -> None:
        self._f.write(b"\n" if self.count == 0 else b",\n")
        self._f.write(dumps(obj))
        self.count += 1

    def close(self) -> None:
        self._f.write(b"\n]\n" if self.count else b"]\n")
        self._f.close()
        os.replace(self._tmp, self.path)
