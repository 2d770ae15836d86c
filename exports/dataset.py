"""The run folder as a Hugging Face dataset: `datasets.load_dataset(str(run_folder))` gives train/val/test.

Two configs with one fixed schema each, whatever a split holds (a field a record lacks is null):
`positives` (the default) and `negatives` (text and image negatives in one table). Each (config, split)
is an image folder in the layout `datasets` resolves by itself, from any working directory:

    data/positives/<split>/metadata.parquet     one row per positive; `file_name` = images/<safe name>.jpg
    data/positives/<split>/images/              the source images the split uses
    data/negatives/<split>/metadata.parquet     `file_name` = the image the negative is about (the source
                                                image, or the chosen edited image); `source_image_file_name`
                                                = the source of an image negative
    data/negatives/<split>/images/

`datasets` reads `file_name` columns as `datasets.Image` (`image`, `source_image`) relative to the
folder of `metadata.parquet`, and refuses paths leaving it, so the images a split uses live under it:
hard links to the run's own copies of its photos (`work/ingest/photos/`, which no change of the inputs
reaches) and to the chosen candidates under `images/`, or copies where hard links fail (the card says
how many). A split with no
rows is left out. Every image is named by its id's `core.ids.safe_name` (the id itself when it is
plain), never by the raw id: an id such as `<img src=x>` names no file. Nested fields (`path`, `change`,
`edit`, `scores`) are JSON strings; `extra` holds any record field the schema does not know yet (null when
none). The card (README.md) is written with the run's statistics (`exports/summary.py`).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.errors import HardnegError
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import safe_name
from hardneg.core.rows import ImageNegativeRow, PositiveRow, TextNegativeRow
from hardneg.core.schema import as_row

DATA = "data"
CONFIGS = ("positives", "negatives")
BATCH = 20_000  # rows per parquet write: bounded memory on GQA-sized splits

# (column, arrow type, what it holds); "json" is a JSON string, "image" a path datasets opens as an image
STR, INT, BOOL, JSON = "string", "int64", "bool", "json"
STRS, INTS, BOXES, TRIPLES = "list<string>", "list<int64>", "list<list<int64>>", "list<list<string>>"
_TEXT = [
    ("expression", STR, "the referring expression"),
    ("template_expression", STR, "the template's text when a rewrite was chosen"),
    ("expression_source", STR, "template or rewrite#k"),
    ("rewrites", STRS, "validated rewrites the language backend offered"),
    ("rewrite_backend", STR, "the backend that rewrote it"),
]
POSITIVE_COLUMNS: list[tuple[str, str, str]] = [
    ("id", INT, "content-derived sample id"),
    ("image_id", STR, "GQA image id"),
    ("file_name", STR, "the image (datasets: `image`)"),
    ("split", STR, "train, val or test (by image id)"),
    *_TEXT,
    ("tuple_type", STR, "path type: 0_hop 1_hop and 2_hop same_attr same_attr_2hop"),
    ("level", INT, "difficulty level 1-3"),
    ("spatial", BOOL, "the path uses a spatial relation"),
    ("attribute", BOOL, "the path uses an attribute"),
    ("objects_id", STRS, "scene-graph object ids on the path, target first"),
    ("tuple", TRIPLES, "[subject, predicate, object] facts the path uses"),
    ("bbox", INTS, "the target's box, xywh pixels"),
    ("width", INT, "image width"),
    ("height", INT, "image height"),
    ("distractors", INT, "other objects with the target's name"),
    ("path", JSON, "the referring path (re-executable against the scene graph)"),
    ("template", STR, "template id"),
    ("generator", STR, "generator version"),
    ("scores", JSON, "scores by name: annotation_risk, and a detector's where one ran"),
    ("risk_reasons", JSON, "what the graph cannot rule out, each with its weight"),
    ("extra", JSON, "fields this schema does not know yet"),
]
NEGATIVE_COLUMNS: list[tuple[str, str, str]] = [
    ("id", INT, "content-derived sample id"),
    ("image_id", STR, "the image: GQA id, or <source>_<hex> for an edited image"),
    ("file_name", STR, "the image (datasets: `image`)"),
    ("source_image_id", STR, "image negatives: the GQA image it was edited from"),
    ("source_image_file_name", STR, "image negatives: the source image (datasets: `source_image`)"),
    ("positive_id", INT, "the positive it negates"),
    ("split", STR, "its positive's split"),
    ("negative_cate", STR, "text or image"),
    ("negative_type", STR, "replace_/swap_ object, attribute, relation, or flip"),
    ("negative_level", INT, "1: change on the target, 2: on a related object"),
    ("shuffle_index", INTS, "altered node indices"),
    ("ori_type", STR, "the positive's path type"),
    ("tuple_type", STR, "the positive's path type"),
    ("level", INT, "the positive's level"),
    *_TEXT,
    ("path", JSON, "text: the altered path; image: the positive's path"),
    ("change", JSON, "text negatives: what was altered"),
    ("edit", JSON, "image negatives: the scene-graph edit"),
    ("edit_boxes", BOXES, "image negatives: where pixels changed"),
    ("candidate", STR, "image negatives: the chosen candidate, relative to the run folder"),
    ("candidates", STRS, "image negatives: every candidate made"),
    ("bbox", INTS, "the target's box, xywh pixels"),
    ("width", INT, "image width"),
    ("height", INT, "image height"),
    ("template", STR, "template id"),
    ("generator", STR, "generator version"),
    ("backend", STR, "language or inpainting backend version"),
    ("scores", JSON, "filter scores by name"),
    ("extra", JSON, "fields this schema does not know yet"),
]
COLUMNS = {"positives": POSITIVE_COLUMNS, "negatives": NEGATIVE_COLUMNS}
IMAGE_COLUMNS = {"file_name": "image", "source_image_file_name": "source_image"}  # datasets' names for them


def source_dir(split: str) -> str:
    """Where a split's source images are, relative to the run folder (COCO `file_name`s point there)."""
    return f"{DATA}/positives/{split}/images"


def image_name(image_id: str) -> str:
    """Where a split's folder holds the image of `image_id`: `images/<safe name>.jpg`."""
    return f"images/{safe_name(image_id)}.jpg"


def arrow_schema(config: str) -> Any:
    import pyarrow as pa

    types = {
        STR: pa.string(),
        INT: pa.int64(),
        BOOL: pa.bool_(),
        JSON: pa.string(),
        STRS: pa.list_(pa.string()),
        INTS: pa.list_(pa.int64()),
        BOXES: pa.list_(pa.list_(pa.int64())),
        TRIPLES: pa.list_(pa.list_(pa.string())),
    }
    return pa.schema([(name, types[kind]) for name, kind, _ in COLUMNS[config]])


def _json(v: Any) -> str | None:
    return None if v is None else orjson.dumps(v).decode()


def _row(config: str, r: dict[str, Any], split: str, file_name: str | None, source: str | None) -> dict[str, Any]:
    """A published row as a row of the config's fixed schema (`file_name`, `source`: the image names the
    dataset gives the sample's image and an image negative's source)."""
    known = {name for name, _, _ in COLUMNS[config]}
    row: dict[str, Any] = {}
    for name, kind, _ in COLUMNS[config]:
        v = r.get(name)
        row[name] = _json(v) if kind == JSON else v
    edited = r.get("negative_cate") == "image"
    row["file_name"] = file_name
    row["split"] = split
    if config == "negatives":
        row["candidate"] = r.get("file_name") if edited else None
        row["source_image_file_name"] = source
    extra = {k: v for k, v in r.items() if k not in known and not (config == "negatives" and k == "file_name")}
    row["extra"] = _json(extra) if extra else None
    return row


class DatasetFiles:
    """`data/` written as the published samples come (`exports/published.py`), beside the split files: each
    (config, split) a parquet file of up to `BATCH` rows a write, and the images its rows use. It is built in
    a staging folder and put in place by `close`, which returns what the card reports: rows and bytes per
    (config, split), how the images got there (`linked`, `copied`) and whether the run has images.
    `images`: the run's own copies of its photos (None: no images; `file_name` is null)."""

    def __init__(self, root: Path, images: Path | None) -> None:
        for old in root.glob(f".{DATA}.*"):  # what an interrupted write left
            shutil.rmtree(old, ignore_errors=True)
        self.root, self.images = root, images
        self.stage = root / f".{DATA}.tmp{os.getpid()}"
        self.placed: Counter = Counter()
        self._batches: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._writers: dict[tuple[str, str], Any] = {}
        self._rows: Counter = Counter()

    def add(self, r: PositiveRow | TextNegativeRow | ImageNegativeRow, split: str) -> None:
        config = "positives" if isinstance(r, PositiveRow) else "negatives"
        edited = r if isinstance(r, ImageNegativeRow) else None
        source = edited.source_image_id if edited is not None else r.image_id
        own, src_name = image_name(r.image_id), image_name(source)
        names = (own, src_name if edited is not None else None) if self.images is not None else (None, None)
        batch = self._batches.setdefault((config, split), [])
        batch.append(_row(config, as_row(r), split, *names))
        if self.images is not None:
            out = self.stage / config / split
            (out / "images").mkdir(parents=True, exist_ok=True)
            if edited is not None:
                _place(self.root / str(edited.file_name), out / own, self.placed)
            copy = self.stage / "positives" / split / src_name  # the positives' copy
            src = copy if config == "negatives" and copy.exists() else image_file(self.images, source)
            _place(src, out / src_name, self.placed)
        if len(batch) >= BATCH:
            self._flush(config, split)

    def _flush(self, config: str, split: str) -> None:
        import pandas as pd
        import pyarrow.parquet as pq

        batch = self._batches[(config, split)]
        out = self.stage / config / split
        self._writers[(config, split)] = _write(
            self._writers.get((config, split)), out, config, pd.DataFrame(batch), pq
        )
        self._rows[(config, split)] += len(batch)
        batch.clear()

    def close(self) -> dict[str, Any]:
        """Write what is left, put `data/` in place of the old one, and say what it holds."""
        for config, split in list(self._batches):
            if self._batches[(config, split)]:
                self._flush(config, split)
        for writer in self._writers.values():
            writer.close()
        rows: dict[str, dict[str, int]] = {c: {} for c in CONFIGS}
        for config, split in sorted(self._rows, key=lambda k: k[1]):  # as the split folders list
            rows[config][split] = self._rows[(config, split)]
        self.stage.mkdir(parents=True, exist_ok=True)
        final, old = self.root / DATA, self.root / f".{DATA}.old{os.getpid()}"
        if final.exists():
            final.rename(old)
        self.stage.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        sizes = {c: {s: (final / c / s / "metadata.parquet").stat().st_size for s in rows[c]} for c in CONFIGS}
        placed = dict(sorted(self.placed.items()))
        return {"rows": rows, "bytes": sizes, "images": placed, "has_images": self.images is not None}


def _write(writer: Any, out: Path, config: str, df: Any, pq: Any) -> Any:
    import pyarrow as pa

    schema = arrow_schema(config)
    table = pa.Table.from_pandas(df[[f.name for f in schema]], schema=schema, preserve_index=False)
    if writer is None:
        out.mkdir(parents=True, exist_ok=True)
        writer = pq.ParquetWriter(out / "metadata.parquet", schema)
    writer.write_table(table)
    return writer


def _place(src: Path, dst: Path, placed: Counter) -> None:
    if dst.exists():
        return
    try:
        os.link(src, dst)
        placed["linked"] += 1
    except FileNotFoundError:
        raise HardnegError(f"dataset: image {src} is missing; rerun `hardneg run` to redo the images") from None
    except OSError:  # another file system (EXDEV), or links not allowed there
        shutil.copyfile(src, dst)
        placed["copied"] += 1
