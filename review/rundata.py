"""Read a run folder defensively: a folder from an older or newer version still yields what it has.

Everything the report and the app show comes through `RunData`; a file or key that is absent becomes an
empty value plus a note in `RunData.notes`, never an exception, so a partial run still gets a report.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.errors import HardnegError
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import id_problem, safe_name
from hardneg.core.splits import SPLITS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GraphObject:
    """The part of a scene-graph object the pictures need."""

    x: float
    y: float
    w: float
    h: float
    name: str


@dataclass(frozen=True, slots=True)
class ImageGraph:
    width: float
    height: float
    objects: dict[str, GraphObject]


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as e:
        log.warning("cannot read %s: %s", path, e)
        return None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _parse_object(raw: Any) -> GraphObject | None:
    if not isinstance(raw, dict):
        return None
    box = [_num(raw.get(k)) for k in ("x", "y", "w", "h")]
    if any(b is None for b in box):
        return None
    x, y, w, h = box
    return GraphObject(x, y, w, h, str(raw.get("name", "")))  # type: ignore[arg-type]


# the head of a stored graph row as the ingest stage writes it: {"image_id":"<id>","graph":...
_HEAD = re.compile(rb'\{"image_id":("[^"\\]*(?:\\.[^"\\]*)*"),"graph":')


def _other_image(line: bytes, wanted: Mapping[str, Any]) -> bool:
    """Whether a stored graph row is certainly of an image not in `wanted` (False where unsure)."""
    if (head := _HEAD.match(line)) is None or (image_id := _string(head.group(1))) is None:
        return False
    return image_id not in wanted


def _string(quoted: bytes) -> str | None:
    """A JSON string literal's value (escapes decoded), or None where it is not one."""
    try:
        value = orjson.loads(quoted)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _parse_graph(raw: Any) -> ImageGraph | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("objects"), dict):
        return None
    objects = {str(k): o for k, v in raw["objects"].items() if (o := _parse_object(v)) is not None}
    return ImageGraph(_num(raw.get("width")) or 0.0, _num(raw.get("height")) or 0.0, objects)


def _inside(folder: Path, path: Path) -> Path | None:
    """`path` resolved, when it is a file inside `folder`; None for a name no file can have (a NUL byte,
    a component over the file system's limit) rather than an error."""
    try:
        p = path.resolve()
        return p if p.is_relative_to(folder) and p.is_file() else None
    except (OSError, ValueError):
        return None


def _decode_nested(row: dict[str, Any]) -> dict[str, Any]:
    """Columnar files may store nested fields as JSON text; decode the ones that look like JSON."""
    for k, v in row.items():
        if isinstance(v, str) and v[:1] in "[{" and k not in ("expression", "caption"):
            with contextlib.suppress(orjson.JSONDecodeError):
                row[k] = orjson.loads(v)
    return row


class RunData:
    """One run folder, read lazily. `notes` lists what was missing or unreadable."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise HardnegError(f"run folder not found: {root}")
        if not (self.root / "splits").is_dir() and not (self.root / "manifest.json").is_file():
            raise HardnegError(f"{root} is not a run folder: it has neither splits/ nor manifest.json")
        self.notes: list[str] = []

    # ---- small files ------------------------------------------------------------------------

    @cached_property
    def manifest(self) -> dict[str, Any]:
        m = _read_json(self.root / "manifest.json")
        if not isinstance(m, dict):
            self.notes.append("manifest.json not available")
            return {}
        return m

    @cached_property
    def stats(self) -> dict[str, Any]:
        s = _read_json(self.root / "stats.json")
        return s if isinstance(s, dict) else {}

    # ---- records ----------------------------------------------------------------------------

    @cached_property
    def splits(self) -> list[str]:
        folder = self.root / "splits"
        found = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
        return [s for s in SPLITS if s in found] + [s for s in found if s not in SPLITS]

    def _records(self, split: str, kind: str) -> list[dict[str, Any]]:
        folder = self.root / "splits" / split
        rows: Any = None
        if (folder / f"{kind}.json").is_file():
            rows = _read_json(folder / f"{kind}.json")
        elif (folder / f"{kind}.parquet").is_file():
            rows = self._read_parquet(folder / f"{kind}.parquet")
        if not isinstance(rows, list):
            self.notes.append(f"splits/{split}/{kind} not available")
            return []
        out = []
        for r in rows:
            if isinstance(r, dict) and isinstance(r.get("id"), int):
                r.setdefault("split", split)
                out.append(r)
        if len(out) < len(rows):
            self.notes.append(f"splits/{split}/{kind}: {len(rows) - len(out)} records without an integer id skipped")
        return out

    def _read_parquet(self, path: Path) -> list[dict[str, Any]] | None:
        try:
            import pandas as pd

            return [_decode_nested(r) for r in pd.read_parquet(path).to_dict("records")]
        except Exception as e:  # no parquet engine, or a file we cannot read: the section says so
            log.warning("cannot read %s: %s", path, e)
            return None

    @cached_property
    def positives(self) -> list[dict[str, Any]]:
        return [r for s in self.splits for r in self._records(s, "positive")]

    @cached_property
    def negatives(self) -> list[dict[str, Any]]:
        return [r for s in self.splits for r in self._records(s, "negative")]

    @cached_property
    def by_id(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in (*self.positives, *self.negatives)}

    @cached_property
    def negatives_of(self) -> dict[int, list[dict[str, Any]]]:
        out: dict[int, list[dict[str, Any]]] = {}
        for n in self.negatives:
            if isinstance(n.get("positive_id"), int):
                out.setdefault(n["positive_id"], []).append(n)
        return out

    def iter_rejects(self) -> Iterator[dict[str, Any]]:
        path = self.root / "rejects.jsonl"
        if not path.is_file():
            self.notes.append("rejects.jsonl not available")
            return
        bad = 0
        with path.open("rb") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    row = orjson.loads(line)
                except orjson.JSONDecodeError:
                    bad += 1
                    continue
                if isinstance(row, dict):
                    yield row
        if bad:
            self.notes.append(f"rejects.jsonl: {bad} unreadable lines skipped")

    # ---- files --------------------------------------------------------------------------------

    @cached_property
    def graph_files(self) -> list[Path]:
        """The scene graphs as the run's ingest stage stored them (`work/ingest/graphs-*.jsonl`): the run
        folder alone, wherever it was moved, whatever became of its inputs."""
        files = sorted((self.root / "work" / "ingest").glob("graphs-*.jsonl"))
        if not files:
            self.notes.append("scene graphs not available: related-object boxes are not drawn")
        return files

    @cached_property
    def images_dir(self) -> Path | None:
        """The run's own copies of its photos (`work/ingest/photos/`)."""
        p = self.root / "work" / "ingest" / "photos"
        if not p.is_dir():
            self.notes.append("source images not available")
            return None
        return p.resolve()

    def source_image(self, image_id: Any) -> Path | None:
        """The run's copy of an image when it exists (`work/ingest/photos/`), else the published one of a
        kept sample (`data/<config>/<split>/images/`), else None: also for an id ingest rejects as a file
        name (`id_problem`: a separator, a NUL, too long), which a reject record still names."""
        if not isinstance(image_id, str | int) or id_problem(str(image_id)):
            return None
        if self.images_dir is not None and (p := _inside(self.images_dir, image_file(self.images_dir, str(image_id)))):
            return p
        name = f"{safe_name(str(image_id))}.jpg"
        for folder in self._published_image_dirs:
            if (p := folder / name).is_file():
                return p
        return None

    @cached_property
    def _published_image_dirs(self) -> list[Path]:
        return sorted(p for p in (self.root / "data").glob("*/*/images") if p.is_dir())

    def run_file(self, rel: Any) -> Path | None:
        """A file named relative to the run folder (an edited image), only if it stays inside it."""
        if not isinstance(rel, str) or not rel:
            return None
        return _inside(self.root, self.root / rel)

    def graphs(self, wanted: Mapping[str, set[str] | None]) -> dict[str, ImageGraph]:
        """Graphs of the images in `wanted` (image id -> the object ids to keep, None = all), streamed from
        the run's stored graphs in one pass that stops once every image is found."""
        out: dict[str, ImageGraph] = {}
        if not wanted:
            return out
        bad = 0
        for path in self.graph_files:
            try:
                with path.open("rb") as f:
                    for line in f:
                        if _other_image(line, wanted):
                            continue  # its id read off the row's head, the graph left unparsed
                        try:
                            row = orjson.loads(line)
                            image_id, raw = row["image_id"], row["graph"]
                        except (orjson.JSONDecodeError, KeyError, TypeError):
                            bad += 1
                            continue
                        if image_id not in wanted or (g := _parse_graph(raw)) is None:
                            continue
                        keep = wanted[image_id]
                        if keep is not None:
                            g = ImageGraph(g.width, g.height, {k: v for k, v in g.objects.items() if k in keep})
                        out[image_id] = g
                        if len(out) == len(wanted):
                            return out
            except OSError as e:  # one unreadable shard: the others still give their images
                log.warning("scene graphs %s: %s", path, e)
                self.notes.append(f"scene graphs partly unreadable: {path.name}")
        if bad:
            self.notes.append(f"scene graphs: {bad} unreadable rows skipped")
        return out
