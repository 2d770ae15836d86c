"""Human-filter decisions in `RUN/work/review.sqlite`: an append-only event log plus the current label.

Every click is one transaction (WAL, synchronous FULL), so a crash loses at most the click in flight and
two browser tabs (or two processes) never interleave half a decision. `events` keeps the whole history:
a label event, or an undo event that names the event it cancels. `current` holds, per (item,
annotator), the latest label not undone; it is derived from `events` inside the same transaction.
Items are keyed by the sample's content id, which a rerun of the pipeline keeps.

A label may name the version it was given on (`record(..., version=)`): the number of events of that
(item, annotator) when the page showed the item. A stale version (another tab labelled or undid since) is
refused with `StaleVersion`, checked inside the write transaction, so the stale tab never overwrites.
The adjudicators (`hardneg review --adjudicator NAME`) are kept in `meta`, so every reader of the store
(the decide stage, `hardneg split`, the report) applies the same rule. The audit's random sample
(`hardneg review --audit N`, `filters/human/audit.py`) is kept here too: its items in `audit`, its draw in `meta`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hardneg.core.errors import HardnegError
from hardneg.filters.human.labels import ALL_LABELS, annotator_name

FILENAME = "review.sqlite"
STORE = Path("work") / FILENAME  # the run's private part: no dataset upload or `load_dataset` reads it


def store_path(run_dir: str | Path) -> Path:
    """`RUN/work/review.sqlite`. A store an older version kept at `RUN/review.sqlite`, beside the published
    files, is moved there the first time it is asked for (with its write-ahead files)."""
    root = Path(run_dir)
    path, old = root / STORE, root / FILENAME
    if old.is_file() and not path.exists() and (root / "work").is_dir():
        for suffix in ("", "-wal", "-shm"):
            if (src := root / f"{FILENAME}{suffix}").exists():
                src.rename(root / "work" / f"{FILENAME}{suffix}")
    return path


SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    label TEXT,                                -- NULL for an undo
    undoes INTEGER REFERENCES events(seq),     -- the label event an undo cancels
    at TEXT NOT NULL                           -- UTC, ISO 8601
);
CREATE INDEX IF NOT EXISTS events_by_annotator ON events(annotator, seq);
CREATE INDEX IF NOT EXISTS events_by_item ON events(item_id, annotator, seq);
CREATE UNIQUE INDEX IF NOT EXISTS events_undoes ON events(undoes);
CREATE TABLE IF NOT EXISTS current (
    item_id INTEGER NOT NULL,
    annotator TEXT NOT NULL,
    label TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (item_id, annotator)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit (              -- the audit's sample (filters/human/audit.py); its draw in meta
    item_id INTEGER PRIMARY KEY,
    stratum TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


@dataclass(frozen=True, slots=True)
class Decision:
    seq: int
    item_id: int
    annotator: str
    label: str
    at: str


@dataclass(frozen=True, slots=True)
class AuditSample:
    """The audit as stored: its seed, the largest N asked, each audited id's stratum, and the strata's
    sizes in the final dataset it was drawn from (the estimates' weights)."""

    seed: int
    asked: int
    items: dict[int, str]
    population: dict[str, int]
    at: str


class StaleVersion(Exception):
    """A label given on an old view of the item: someone (another tab) labelled it since."""

    def __init__(self, expected: int, current: int):
        super().__init__(f"version {expected} is stale; the item is at version {current}")
        self.current = current


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ReviewStore:
    """Decisions of one run folder. Opens a short-lived connection per operation (thread and process safe)."""

    def __init__(self, run_dir: str | Path, *, create: bool = True):
        self.path = store_path(run_dir)
        if not create and not self.path.is_file():
            raise FileNotFoundError(self.path)
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if create:
            with self._connect() as con:
                con.execute("PRAGMA journal_mode=WAL")
                con.executescript(_SCHEMA)
                con.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            con.execute("PRAGMA busy_timeout=10000")
            con.execute("PRAGMA synchronous=FULL")
            yield con
        finally:
            con.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")  # take the write lock first: read-then-write stays consistent
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def record(self, item_id: int, annotator: str, label: str, version: int | None = None) -> Decision:
        """Store one click; the latest label of (item, annotator) replaces the previous one. With `version`,
        refuse (StaleVersion) unless the pair is still at that version: the check and the write are one
        transaction, so two tabs cannot both pass it."""
        if label not in ALL_LABELS:
            raise ValueError(f"unknown label {label!r}")
        annotator = annotator_name(annotator)  # one person, one spelling: the key the votes are counted by
        at = _now()
        with self._transaction() as con:
            if version is not None and (now := self._version(con, item_id, annotator)) != version:
                raise StaleVersion(version, now)
            cur = con.execute(
                "INSERT INTO events (item_id, annotator, label, at) VALUES (?, ?, ?, ?)",
                (item_id, annotator, label, at),
            )
            seq = int(cur.lastrowid or 0)
            con.execute(
                "INSERT INTO current VALUES (?, ?, ?, ?) ON CONFLICT (item_id, annotator) "
                "DO UPDATE SET label = excluded.label, seq = excluded.seq",
                (item_id, annotator, label, seq),
            )
        return Decision(seq, item_id, annotator, label, at)

    def undo(self, annotator: str, item_id: int | None = None) -> Decision | None:
        """Cancel this annotator's latest label not yet undone (on `item_id` if given); None if none is left."""
        where, args = ("AND e.item_id = ?", (annotator, item_id)) if item_id is not None else ("", (annotator,))
        with self._transaction() as con:
            row = con.execute(
                "SELECT e.seq, e.item_id, e.annotator, e.label, e.at FROM events e "
                "WHERE e.annotator = ? AND e.label IS NOT NULL "
                f"AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.seq) {where} "
                "ORDER BY e.seq DESC LIMIT 1",
                args,
            ).fetchone()
            if row is None:
                return None
            undone = Decision(*row)
            con.execute(
                "INSERT INTO events (item_id, annotator, label, undoes, at) VALUES (?, ?, NULL, ?, ?)",
                (undone.item_id, annotator, undone.seq, _now()),
            )
            # The pair's label falls back to its previous surviving label, if any.
            prev = con.execute(
                "SELECT e.seq, e.label FROM events e WHERE e.item_id = ? AND e.annotator = ? AND e.label IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM events u WHERE u.undoes = e.seq) ORDER BY e.seq DESC LIMIT 1",
                (undone.item_id, annotator),
            ).fetchone()
            if prev is None:
                con.execute("DELETE FROM current WHERE item_id = ? AND annotator = ?", (undone.item_id, annotator))
            else:
                con.execute(
                    "UPDATE current SET label = ?, seq = ? WHERE item_id = ? AND annotator = ?",
                    (prev[1], prev[0], undone.item_id, annotator),
                )
        return undone

    def current(self, annotator: str | None = None) -> dict[int, dict[str, str]]:
        """item id -> {annotator: label}, the labels in force (optionally one annotator's)."""
        sql, args = "SELECT item_id, annotator, label FROM current", ()
        if annotator is not None:
            sql, args = sql + " WHERE annotator = ?", (annotator,)
        out: dict[int, dict[str, str]] = {}
        with self._connect() as con:
            for item_id, who, label in con.execute(sql, args):
                out.setdefault(int(item_id), {})[who] = label
        return out

    @staticmethod
    def _version(con: sqlite3.Connection, item_id: int, annotator: str) -> int:
        row = con.execute("SELECT COUNT(*) FROM events WHERE item_id = ? AND annotator = ?", (item_id, annotator))
        return int(row.fetchone()[0])

    def version(self, item_id: int, annotator: str) -> int:
        """The (item, annotator) pair's version: how many labels and undos it has had; any write moves it."""
        with self._connect() as con:
            return self._version(con, item_id, annotator)

    def adjudicators(self) -> frozenset[str]:
        """The annotator names whose labels are the final word (empty in a store that never had one)."""
        with self._connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'adjudicators'").fetchone()
        return frozenset(json.loads(row[0])) if row else frozenset()

    def add_adjudicators(self, names: Iterable[str]) -> frozenset[str]:
        """Record more adjudicators (kept for good: a later server without the flag decides alike)."""
        with self._transaction() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'adjudicators'").fetchone()
            merged = sorted(set(json.loads(row[0]) if row else []) | set(names))
            con.execute(
                "INSERT INTO meta VALUES ('adjudicators', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (json.dumps(merged),),
            )
        return frozenset(merged)

    def audit(self) -> AuditSample | None:
        """The audit's sample, None when none was drawn (a store made before audits has no table yet)."""
        with self._connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'audit'").fetchone()
            if row is None:
                return None
            items = {int(i): str(k) for i, k in con.execute("SELECT item_id, stratum FROM audit")}
        m = json.loads(row[0])
        return AuditSample(int(m["seed"]), int(m["asked"]), items, dict(m["population"]), str(m["at"]))

    def add_audit(self, items: dict[int, str], *, seed: int, asked: int, population: dict[str, int], at: str) -> int:
        """Add drawn items (one already stored keeps its row and labels) and record the draw; how many
        were new. One transaction, so a second draw at the same time waits, then adds nothing twice."""
        with self._transaction() as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'audit'").fetchone()
            old = json.loads(row[0]) if row else {}
            if old and int(old["seed"]) != seed:
                raise HardnegError(f"the audit was drawn with seed {old['seed']}, not {seed}")
            before = con.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
            con.executemany("INSERT OR IGNORE INTO audit VALUES (?, ?, ?)", [(i, k, at) for i, k in items.items()])
            after = con.execute("SELECT COUNT(*) FROM audit").fetchone()[0]
            m = {"seed": seed, "asked": max(asked, int(old.get("asked", 0))), "population": population, "at": at}
            if old and after == before and m["asked"] == old["asked"]:
                return 0  # the same draw again: nothing changes, not even its time
            con.execute(
                "INSERT INTO meta VALUES ('audit', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (json.dumps(m, sort_keys=True),),
            )
        return int(after - before)

    def label_of(self, item_id: int, annotator: str) -> str | None:
        with self._connect() as con:
            row = con.execute(
                "SELECT label FROM current WHERE item_id = ? AND annotator = ?", (item_id, annotator)
            ).fetchone()
        return row[0] if row else None

    def history(self, item_id: int | None = None) -> list[dict[str, object]]:
        """Every event in order (undo events have `label` None and `undoes` set)."""
        sql, args = "SELECT seq, item_id, annotator, label, undoes, at FROM events", ()
        if item_id is not None:
            sql, args = sql + " WHERE item_id = ?", (item_id,)
        with self._connect() as con:
            rows = con.execute(sql + " ORDER BY seq", args).fetchall()
        keys = ("seq", "item_id", "annotator", "label", "undoes", "at")
        return [dict(zip(keys, r, strict=True)) for r in rows]
