"""TRICD's own grounding layout: the file that TRICD's official evaluation code reads unchanged.

The official `grounding/evaluation/main.py` (with `grounding_recall.py` and `grounding_AP.py`) reads one
COCO-style JSON per split, `RUN/tricd/TRICD_grounding_<split>.json` here (the official file is
`TRICD_grounding_val.json`):

- `images`: one record per (image, caption): `id` (an integer unique in the file), `file_name` (relative to
  `RUN/tricd/`), `caption`, `source`, `coco_type`, `positive` (whether the caption is true of the image),
  `original_id` "N_k" (group N, image k of it), `phrases` {phrase id: [[start, end]]} (character spans
  that slice the caption to the phrase; phrase ids are integers, as strings, unique in the file), `width`,
  `height`, `license`;
- `annotations`: the boxes of the positive records' phrases: `id` (from 1: the official matcher takes 0 for
  "unmatched"), `image_id`, integer `phrase_id`, `category_id` 1, `bbox` [x, y, w, h], `area`, `iscrowd` 0;
- `categories`: the one category the official file has.

Group N holds one positive, "N_0", and its negatives, "N_1", "N_2", ..., each with the same caption and the
same spans under phrase ids of its own. The official Group-Recall@1 pairs "N_0" with "N_1" alone (in
TRICD each group has two images), so the first negative is the most confusable one: the best-ranked
certified distractor, else the first image edit; further negatives count in AP. `evaluation.tricd` pools
them all. The official code knows two sources and fails on any other (its per-subset table cannot sort a
missing subset): "coco_test2017" is the one chosen, as TRICD's COCO part is built like this export (a
caption true of one natural image and false of a similar one), and its `coco_type` ("object": the
expression has no relation; "relation" otherwise) gives the official per-subset rows coco_obj and
coco_rel. The images are Visual Genome's, as `dataset` says. What the official code ignores carries this
export's own fields: `pair_id`, `positive_pair_id`, `positive_image`, `negative`, `image_id_gqa`,
`sample_id`, `split`, `subset`, `level`, `path`, `certificate`, `phrase_text`, `phrase_node`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hardneg.core.io import dumps, temp_path
from hardneg.exports.rows import TricdPairRow

SOURCE = "coco_test2017"
DATASET = "gqa (Visual Genome images)"
CATEGORY = {"id": 1, "name": "object", "supercategory": "object"}


def file_name(split: str) -> str:
    """The official layout's file for a split, as the official annotations file is named."""
    return f"TRICD_grounding_{split}.json"


def coco_type(path: dict[str, Any]) -> str:
    """TRICD's subset: "object" when the expression names one object and its attributes, else "relation"."""
    return "relation" if path.get("relations") or path.get("same") else "object"


class _Ids:
    """The next free integer id of each kind (images, phrases, annotations), from 1."""

    def __init__(self) -> None:
        self.next = {"image": 1, "phrase": 1, "annotation": 1}

    def take(self, kind: str) -> int:
        out = self.next[kind]
        self.next[kind] += 1
        return out


def write_official(path: Path, records: Iterable[TricdPairRow], folder: str) -> None:
    """The official layout of one split's pairs (a positive, then its negatives, as the stage writes them) in
    `path`, as `write_json` writes a whole object; `folder` is the export's folder in the run,
    which `file_name` is relative to. Written as the records come, no more than one held (the annotations
    wait in a file beside it until the images are written)."""
    tmp, side = temp_path(path), temp_path(path.with_name(path.name + ".annotations"))
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tmp.open("wb") as f, side.open("w+b") as anns:
            f.write(b'{\n  "images": [')
            n = {"images": 0, "annotations": 0}
            for kind, entry in _entries(records, folder):
                (f if kind == "images" else anns).write((b",\n" if n[kind] else b"\n") + _item(entry))
                n[kind] += 1
            f.write(b"\n  ]" if n["images"] else b"]")
            f.write(b',\n  "annotations": [')
            anns.seek(0)
            shutil.copyfileobj(anns, f)
            f.write(b"\n  ]" if n["annotations"] else b"]")
            f.write(b',\n  "categories": ' + dumps([CATEGORY], indent=True).replace(b"\n", b"\n  ") + b"\n}\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        side.unlink(missing_ok=True)


def _item(entry: dict[str, Any]) -> bytes:
    """An element of a top-level array in `dumps(..., indent=True)`'s layout (two levels deep)."""
    return b"    " + dumps(entry, indent=True).replace(b"\n", b"\n    ")


def _entries(records: Iterable[TricdPairRow], folder: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The official file's images and annotations, in its order, each as ("images" | "annotations", entry)."""
    ids, groups = _Ids(), {}  # groups by our positive pair id
    for r in records:
        image_id = ids.take("image")
        if r.positive_id is None:
            g = groups[r.id] = _Group(len(groups) + 1, image_id, [ph for ph, boxes in r.phrases.items() if boxes])
            k, positive_image = 0, None
        else:
            g = groups[r.positive_id]
            g.negatives += 1
            k, positive_image = g.negatives, g.image_id
        pids = {ph: ids.take("phrase") for ph in g.phrases}
        yield "images", _image(r, image_id, f"{g.number}_{k}", pids, folder, positive_image)
        if positive_image is None:
            for ph in g.phrases:
                for box in r.phrases[ph]:
                    yield "annotations", _annotation(ids.take("annotation"), image_id, pids[ph], box)


class _Group:
    """One positive and its negatives: the group's number N, the positive's image id, the phrases kept (those
    with boxes on the positive: the official recall needs a box for every positive phrase)."""

    def __init__(self, number: int, image_id: int, phrases: list[str]) -> None:
        self.number, self.image_id, self.phrases, self.negatives = number, image_id, phrases, 0


def _image(
    r: TricdPairRow, image_id: int, original_id: str, pids: dict[str, int], folder: str, positive_image: int | None
) -> dict[str, Any]:
    rel = r.image
    prefix = folder.rstrip("/") + "/"
    return {
        "id": image_id,
        "license": 1,
        "file_name": rel[len(prefix) :] if rel and rel.startswith(prefix) else rel,
        "caption": r.caption,
        "source": SOURCE,
        "coco_type": coco_type(r.path),
        "positive": r.positive_id is None,
        "original_id": original_id,
        "phrases": {str(pid): [list(r.phrase_span[ph])] for ph, pid in pids.items()},
        "width": r.width,
        "height": r.height,
        # this export's own fields, which the official code does not read
        "dataset": DATASET,
        "pair_id": r.id,
        "positive_pair_id": r.positive_id,
        "positive_image": positive_image,
        "negative": r.negative,
        "image_id_gqa": r.image_id,
        "sample_id": r.sample_id,
        "split": r.split,
        "subset": r.subset,
        "level": r.level,
        "path": r.path,
        "certificate": r.certificate,
        "phrase_text": {str(pid): r.phrase_text[ph] for ph, pid in pids.items()},
        "phrase_node": {str(pid): r.phrase_node[ph] for ph, pid in pids.items()},
    }


def _annotation(ann_id: int, image_id: int, phrase_id: int, box: list[int]) -> dict[str, Any]:
    x, y, w, h = box
    return {
        "id": ann_id,
        "image_id": image_id,
        "phrase_id": phrase_id,
        "category_id": CATEGORY["id"],
        "bbox": [x, y, w, h],
        "area": w * h,
        "iscrowd": 0,
    }
