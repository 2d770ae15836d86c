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
none). `exports/card.py` writes README.md.
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
from hardneg.core.io import iter_json_array

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
SOURCES = {"positives": "positive.json", "negatives": "negative.json"}
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


def _row(config: str, r: dict[str, Any], split: str, images: bool) -> dict[str, Any]:
    """One record as a row of the config's fixed schema."""
    known = {name for name, _, _ in COLUMNS[config]}
    row: dict[str, Any] = {}
    for name, kind, _ in COLUMNS[config]:
        v = r.get(name)
        row[name] = _json(v) if kind == JSON else v
    edited = r.get("negative_cate") == "image"
    row["file_name"] = image_name(r["image_id"]) if images else None
    row["split"] = split
    if config == "negatives":
        row["candidate"] = r.get("file_name") if edited else None
        row["source_image_file_name"] = image_name(r["source_image_id"]) if edited and images else None
    extra = {k: v for k, v in r.items() if k not in known and not (config == "negatives" and k == "file_name")}
    row["extra"] = _json(extra) if extra else None
    return row


def write_dataset(root: Path, images: Path | None) -> dict[str, Any]:
    """Write `data/` from `splits/<split>/{positive,negative}.json`; returns what the card reports:
    rows per (config, split), and how the images got there (`linked`, `copied`)."""
    import pandas as pd
    import pyarrow.parquet as pq

    for old in root.glob(f".{DATA}.*"):  # what an interrupted write left
        shutil.rmtree(old, ignore_errors=True)
    stage = root / f".{DATA}.tmp{os.getpid()}"
    rows: dict[str, dict[str, int]] = {c: {} for c in CONFIGS}
    placed: Counter = Counter()
    for split_dir in sorted(p for p in (root / "splits").iterdir() if p.is_dir()):
        split = split_dir.name
        for config in CONFIGS:
            src = split_dir / SOURCES[config]
            if not src.exists():
                continue
            out = stage / config / split
            writer, n, batch = None, 0, []
            for r in iter_json_array(src):
                batch.append(_row(config, r, split, images is not None))
                if images is not None:
                    _place_images(root, out, config, split, r, images, placed)
                if len(batch) >= BATCH:
                    writer = _write(writer, out, config, pd.DataFrame(batch), pq)
                    n, batch = n + len(batch), []
            if batch:
                writer = _write(writer, out, config, pd.DataFrame(batch), pq)
                n += len(batch)
            if writer is not None:
                writer.close()
                rows[config][split] = n
    stage.mkdir(parents=True, exist_ok=True)
    final, old = root / DATA, root / f".{DATA}.old{os.getpid()}"
    if final.exists():
        final.rename(old)
    stage.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    sizes = {c: {s: (final / c / s / "metadata.parquet").stat().st_size for s in rows[c]} for c in CONFIGS}
    return {"rows": rows, "bytes": sizes, "images": dict(sorted(placed.items())), "has_images": images is not None}


def _write(writer: Any, out: Path, config: str, df: Any, pq: Any) -> Any:
    import pyarrow as pa

    schema = arrow_schema(config)
    table = pa.Table.from_pandas(df[[f.name for f in schema]], schema=schema, preserve_index=False)
    if writer is None:
        out.mkdir(parents=True, exist_ok=True)
        writer = pq.ParquetWriter(out / "metadata.parquet", schema)
    writer.write_table(table)
    return writer


def _place_images(
    root: Path, out: Path, config: str, split: str, r: dict[str, Any], images: Path, placed: Counter
) -> None:
    """Put the images a record uses under `out/images/`: hard links within the run folder (to the photo
    store and the candidates), or copies where the file system refuses links."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    if r.get("negative_cate") == "image":
        _place(root / r["file_name"], out / image_name(r["image_id"]), placed)
        source = r["source_image_id"]
    else:
        source = r["image_id"]
    own = out.parent.parent / "positives" / split / image_name(source)  # the positives' copy
    src = own if config == "negatives" and own.exists() else image_file(images, source)
    _place(src, out / image_name(source), placed)


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
