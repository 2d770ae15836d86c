"""The COCO form read by the FineCops-Ref evaluation code (SPEC section 4).

One `images[]` entry per sample (its id is the sample id, its caption the expression) and exactly one
`annotations[]` entry per image entry, with the box in xywh. A sample without `negative_type` is positive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.io import JsonArrayWriter, atomic_write_bytes, dumps

CATEGORIES = [{"id": 1, "name": "object", "supercategory": "object"}]
NEGATIVE_KEYS = ("negative_type", "negative_level", "positive_id", "negative_cate")


def coco_entries(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(image entry, annotation entry) for one vanilla record (positive or negative)."""
    edited = record.get("negative_cate") == "image"
    image = {
        "id": record["id"],
        # GQA images are named by id under the input images folder; edited ones live in the run folder.
        "file_name": record["file_name"] if edited else f"{record['image_id']}.jpg",
        "image_root": "run" if edited else "images",
        "height": record["height"],
        "width": record["width"],
        "caption": record["expression"],
        "original_id": record["image_id"],
    }
    x, y, w, h = record["bbox"]
    ann: dict[str, Any] = {
        "id": record["id"],
        "image_id": record["id"],
        "bbox": [x, y, w, h],
        "area": w * h,
        "iscrowd": 0,
        "category_id": 1,
        "level": record["level"],
        "tuple_type": record["tuple_type"],
    }
    for k in NEGATIVE_KEYS:
        if k in record:
            ann[k] = record[k]
    return image, ann


class CocoWriter:
    """Streams images to the final file and annotations to a side file, then joins them."""

    def __init__(self, path: Path):
        self.path = path
        self._images = JsonArrayWriter(path.with_name(f".{path.name}.images"))
        self._anns = JsonArrayWriter(path.with_name(f".{path.name}.annotations"))

    def add(self, record: dict[str, Any]) -> None:
        image, ann = coco_entries(record)
        self._images.write(image)
        self._anns.write(ann)

    def close(self, info: dict[str, Any]) -> None:
        self._images.close()
        self._anns.close()
        parts = [
            b'{"info":',
            dumps(info),
            b',\n"licenses":[],\n"categories":',
            dumps(CATEGORIES),
            b',\n"images":',
            self._images.path.read_bytes().rstrip(),
            b',\n"annotations":',
            self._anns.path.read_bytes().rstrip(),
            b"}\n",
        ]
        atomic_write_bytes(self.path, b"".join(parts))
        self._images.path.unlink()
        self._anns.path.unlink()
