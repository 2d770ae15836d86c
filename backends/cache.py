"""On-disk response cache for language backends: SQLite, keyed by the content of a request.

A key is the sha256 of the canonical JSON of everything that determines an answer (model, prompt version,
messages, attempt number, sampling settings, JSON mode), never the API key or the server address, so
a rerun with nothing changed is served entirely from disk and an interrupted stage resumes where it stopped.
The value is the raw response text and the time it was stored. Safe to share between threads (one
connection behind a lock) and between processes (WAL journal).

The text comes from an untrusted server, so the cache keeps it verbatim or not at all: `put` skips an
answer over `MAX_CACHED_CHARS` (a valid answer is a few hundred characters), so a cut answer is never
replayed as if whole; the backend also skips answers that `backends.untrusted.clean` would change
(control characters, secrets).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_CACHED_CHARS = 4_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    raw TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(payload: Mapping[str, Any]) -> str:
    """sha256 hex of `payload` as canonical JSON (sorted keys, no whitespace, UTF-8)."""
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A persistent map from `cache_key(...)` to raw response text."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection shared by the worker threads; sqlite3 objects are not thread-safe, hence the lock.
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer (parallel runs)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT raw FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, raw: str) -> bool:
        """Store `raw` under `key`; False (nothing stored) when it is longer than `MAX_CACHED_CHARS`."""
        if len(raw) > MAX_CACHED_CHARS:
            return False
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, raw, created) VALUES (?, ?, ?)", (key, raw, time.time())
            )
            self._conn.commit()  # commit per answer so a crash mid-stage loses nothing already paid for
        return True

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
