"""What every export stage shares: the decided samples, a light index of the corpus, checks run
while the cleaned graphs stream by, English prompts, and the export's folder in the run.

The corpus is read twice, never held whole: `CorpusIndex` keeps per image only its split, location and
names (and, when asked, its (name, attribute) pairs) to choose candidate images; `GraphChecks` then
streams the graphs once and runs each check on the one graph it needs. A distractor or second image is
always taken from the first image's split (`core/splits.py`), so no image of one split shows up in
another's records.
"""

from __future__ import annotations

import bisect
import os
import random
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.config import SplitsConfig
from hardneg.core.errors import HardnegError
from hardneg.core.executor import GraphIndex
from hardneg.core.io import atomic_write_bytes, dumps, temp_path, write_json
from hardneg.core.records import SceneGraph, keyed_seed
from hardneg.core.rows import GraphRow
from hardneg.core.runner.stage import Unit
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words

SPLITS = ("train", "val", "test")


# -- the decided samples -----------------------------------------------------------------------------


def kept_positives(unit: Unit) -> list[dict[str, Any]]:
    """The positives the write stage writes (not dropped by the decide stage), each with its `split`."""
    dropped = {d["id"] for d in unit.read_all("decide", "positives") if not d["keep"]}
    out = []
    for r in unit.read_all("language", "positives"):
        if r["id"] not in dropped:
            r["split"] = split_of(r["image_id"], unit.cfg.splits)
            out.append(r)
    return out


def kept_image_negatives(unit: Unit, positive_ids: set[int]) -> list[dict[str, Any]]:
    """Image negatives the decide stage kept, of kept positives: `chosen` is the candidate the write stage
    writes, `passed` every candidate each filter keeps (the chosen one first)."""
    decisions = {d["id"]: d for d in unit.read_all("decide", "negatives")}
    out = []
    for r in unit.read_all("images", "image-negatives"):
        d = decisions.get(r["id"])
        if d is None or not d["keep"] or r["positive_id"] not in positive_ids:
            continue
        best = d["candidate"]
        passed = d.get("passed", [best])  # decide@v2 runs did not record it: the chosen one alone
        r["chosen"] = r["candidates"][best]
        r["passed"] = [r["candidates"][best]] + [r["candidates"][k] for k in passed if k != best]
        out.append(r)
    return out


# -- the corpus --------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ImageInfo:
    split: str
    location: str | None
    names: frozenset[str]


class CorpusIndex:
    """Pass one over the cleaned graphs: per image its split, location and names; images by (split, name)
    and, with `pairs`, by (split, name, attribute)."""

    def __init__(self, rows: Iterable[dict[str, Any]], splits: SplitsConfig, pairs: bool = False) -> None:
        self.images: dict[str, ImageInfo] = {}
        self.by_name: dict[tuple[str, str], Sequence[str]] = defaultdict(list)  # SortedIds once built
        self.by_pair: dict[tuple[str, str, str], Sequence[str]] = defaultdict(list)
        self.names_by_attribute: dict[tuple[str, str], set[str]] = defaultdict(set)  # (split, attribute) -> names
        for row in rows:
            image_id, g = row["image_id"], row["graph"]
            split = split_of(image_id, splits)
            objects = g.get("objects", {}).values()
            names = frozenset(o["name"] for o in objects)
            self.images[image_id] = ImageInfo(split, g.get("location"), names)
            for n in names:
                self.by_name[(split, n)].append(image_id)
            if pairs:
                seen = {(o["name"], a) for o in objects for a in o.get("attributes", [])}
                for n, a in seen:
                    self.by_pair[(split, n, a)].append(image_id)
                    self.names_by_attribute[(split, a)].add(n)
        self.by_name = {k: SortedIds.of(v) for k, v in self.by_name.items()}  # type: ignore[misc]
        self.by_pair = {k: SortedIds.of(v) for k, v in self.by_pair.items()}  # type: ignore[misc]

    def similarity(self, a: str, b: str) -> float:
        """Shared core traits of two images: the Jaccard index of their names, plus half for one location."""
        x, y = self.images[a], self.images[b]
        union = len(x.names | y.names)
        same_place = x.location is not None and x.location == y.location
        return (len(x.names & y.names) / union if union else 0.0) + (0.5 if same_place else 0.0)


class SortedIds(Sequence[str]):
    """Distinct image ids in sorted order, with at most one left out, never copied: what `sample` draws from.

    The corpus index keeps its image lists in this form, so drawing a few candidates for one positive costs
    the few draws, not a sort of every image of the split that shows the name (which, once per positive,
    made the exports quadratic in the corpus)."""

    __slots__ = ("_ids", "_skip")

    def __init__(self, ids: tuple[str, ...], skip: int | None = None) -> None:
        self._ids, self._skip = ids, skip

    @classmethod
    def of(cls, ids: Iterable[str]) -> SortedIds:
        return cls(tuple(sorted(set(ids))))

    def without(self, image_id: str) -> SortedIds:
        """These ids less `image_id` (itself when it is not one of them)."""
        j = bisect.bisect_left(self._ids, image_id)
        return (
            SortedIds(self._ids, j) if self._skip is None and j < len(self._ids) and self._ids[j] == image_id else self
        )

    def __len__(self) -> int:
        return len(self._ids) - (self._skip is not None)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._ids[i + 1 if self._skip is not None and i >= self._skip else i]


NO_IDS = SortedIds(())


def sample(ids: Iterable[str], k: int, *key: object) -> list[str]:
    """At most `k` of `ids`, a keyed random choice (the same every run, whatever the order of `ids`)."""
    pool = ids if isinstance(ids, SortedIds) else sorted(set(ids))
    if len(pool) <= k:
        return list(pool)
    return sorted(random.Random(keyed_seed(*key)).sample(pool, k))


def hygiene_graphs(unit: Unit) -> Iterator[SceneGraph]:
    for row in unit.records_all("hygiene", "graphs", GraphRow):
        yield row.scene_graph()


class GraphChecks:
    """Checks registered per image id, run in one streaming pass over the cleaned graphs."""

    def __init__(self, table: AttributeTable) -> None:
        self.table = table
        self.by_image: dict[str, list[Callable[[SceneGraph, GraphIndex], None]]] = defaultdict(list)

    def add(self, image_id: str, check: Callable[[SceneGraph, GraphIndex], None]) -> None:
        self.by_image[image_id].append(check)

    def run(self, graphs: Iterable[SceneGraph]) -> None:
        for g in graphs:
            if not self.by_image:
                return
            checks = self.by_image.pop(g.image_id, None)
            if checks:
                index = GraphIndex(g, self.table)
                for check in checks:
                    check(g, index)


# -- English ------------------------------------------------------------------------------------------


def noun_phrase(words: Words, name: str, attributes: Iterable[str] = ()) -> str:
    """ "a small dog", "an apple", "the ground", "bananas": a count noun takes "a"/"an", a mass noun "the"
    ("a house on ground" does not read; "a house on the ground" does), a plural none."""
    phrase = " ".join((*attributes, name))
    article = words.indefinite_article(phrase)
    if not article and not words.is_plural(phrase.split()[-1]):
        article = "the"
    return f"{article} {phrase}" if article else phrase


def relation_prompt(words: Words, subject: str, relation: str, obj: str) -> str:
    return f"{noun_phrase(words, subject)} {relation} {noun_phrase(words, obj)}"


# -- the export's folder ------------------------------------------------------------------------------


class ExportFolder:
    """`RUN/<name>/`: JSON records and parquet per table, images as hard links (copies across file
    systems), `summary.json` with the counts. Every path a record holds is relative to the run folder."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.dir = root / name

    def reset(self, *parts: str) -> None:
        """Remove what this stage wrote before: the named parts, or the whole folder."""
        for p in [self.dir / x for x in parts] if parts else [self.dir]:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()

    def place(self, src: Path, rel: str) -> str:
        """Put `src` at `RUN/<name>/<rel>` (a hard link, else a copy); returns its run-relative path."""
        dst = self.dir / rel
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except FileNotFoundError:
                raise HardnegError(f"export: image {src} is missing; rerun `hardneg run` to redo the images") from None
            except OSError:  # another file system, or links not allowed there
                shutil.copyfile(src, dst)
        return dst.relative_to(self.root).as_posix()

    def write_tables(self, splits: dict[str, list[dict[str, Any]]], prefix: str = "") -> None:
        """Per split `<prefix><split>.json` (a JSON array, one record a line) and `<prefix><split>.parquet`
        (nested fields as JSON text). The parquet files share one schema and one column order, and a split
        with no rows is written with the others' columns: every split of an export loads alike."""
        import pyarrow.parquet as pq  # loads only where an export is written

        flat = {s: [{k: _cell(v) for k, v in r.items()} for r in rows] for s, rows in splits.items()}
        columns = list(dict.fromkeys(k for rows in flat.values() for r in rows for k in r))
        schema = _schema(columns, [r for rows in flat.values() for r in rows])
        for split, rows in splits.items():
            path = self.dir / f"{prefix}{split}.json"
            body = b",\n".join(dumps(r) for r in rows)
            atomic_write_bytes(path, b"[\n" + body + b"\n]\n" if rows else b"[]\n")
            out = self.dir / f"{prefix}{split}.parquet"
            tmp = temp_path(out)
            if rows:
                pq.write_table(_table([{c: r.get(c) for c in columns} for r in flat[split]], schema), tmp)
            else:  # the schema and no row group: a row group of 0 rows is what readers choke on
                pq.ParquetWriter(tmp, schema).close()
            os.replace(tmp, out)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.dir / "summary.json", summary)


def _schema(columns: list[str], rows: list[dict[str, Any]]) -> Any:
    """One arrow schema for every split's rows: each column's type inferred from all of them; a column
    whose values do not share a type (a number in one record, a word in another) is stored as JSON text."""
    import pyarrow as pa

    fields = []
    for c in columns:
        values = [r.get(c) for r in rows]
        try:
            fields.append(pa.field(c, pa.array(values).type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            fields.append(pa.field(c, pa.string()))
    return pa.schema(fields)


def _table(rows: list[dict[str, Any]], schema: Any) -> Any:
    import pyarrow as pa

    def fit(v: Any, t: Any) -> Any:
        return v if v is None or not pa.types.is_string(t) or isinstance(v, str) else dumps(v).decode()

    cols = {f.name: [fit(r.get(f.name), f.type) for r in rows] for f in schema}
    return pa.Table.from_pydict(cols, schema=schema)


def _cell(v: Any) -> Any:
    """A parquet cell: scalars and lists of strings as they are, anything nested as JSON text."""
    if isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict | list) for x in v)):
        return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS).decode()
    return v


def by_split(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for r in rows:
        out.setdefault(r["split"], []).append(r)
    return out
