"""The COCO form read by the FineCops-Ref evaluation code.

One `images[]` entry per sample (its id is the sample id, its caption the expression) and exactly one
`annotations[]` entry per image entry, with the box in xywh; a negative's also says what it negates.
Every `file_name` is relative to the run folder (`info.file_names` says so): a source image as the
dataset's copy (`exports/dataset.py`, named by the id's safe name), an edited image under `images/`. A run
made without an images folder names source images `<image_id>.jpg`, to be found in the GQA images folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardneg.core.ids import safe_name
from hardneg.core.io import JsonArrayWriter, atomic_write_bytes, dumps
from hardneg.core.rows import ImageNegativeRow, TextNegativeRow

if TYPE_CHECKING:
    from hardneg.exports.published import Published

CATEGORIES = [{"id": 1, "name": "object", "supercategory": "object"}]
NEGATIVE_KEYS = ("negative_type", "negative_level", "positive_id", "negative_cate")
FILE_NAMES = {
    True: "relative to the run folder",
    False: "edited images relative to the run folder; <image_id>.jpg in the GQA images folder (the run had none)",
}


def coco_entries(sample: Published, source_dir: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(image entry, annotation entry) for one published sample (`exports/published.py`: a positive or a
    negative); `source_dir` is the run-relative folder of the split's source images (None: the run has no
    images folder)."""
    copy = f"{source_dir}/{safe_name(sample.image_id)}.jpg" if source_dir else f"{sample.image_id}.jpg"
    image = {
        "id": sample.id,
        "file_name": sample.file_name if isinstance(sample, ImageNegativeRow) else copy,
        "height": sample.height,
        "width": sample.width,
        "caption": sample.expression,
        "original_id": sample.image_id,
    }
    x, y, w, h = sample.bbox
    ann: dict[str, Any] = {
        "id": sample.id,
        "image_id": sample.id,
        "bbox": [x, y, w, h],
        "area": w * h,
        "iscrowd": 0,
        "category_id": 1,
        "level": sample.level,
        "tuple_type": sample.tuple_type,
    }
    if isinstance(sample, (TextNegativeRow, ImageNegativeRow)):
        ann.update((k, getattr(sample, k)) for k in NEGATIVE_KEYS)
    return image, ann


class CocoWriter:
    """Streams images to the final file and annotations to a side file, then joins them."""

    def __init__(self, path: Path, source_dir: str | None = None):
        self.path = path
        self.source_dir = source_dir
        self._images = JsonArrayWriter(path.with_name(f".{path.name}.images"))
        self._anns = JsonArrayWriter(path.with_name(f".{path.name}.annotations"))

    def add(self, sample: Published) -> None:
        image, ann = coco_entries(sample, self.source_dir)
        self._images.write(image)
        self._anns.write(ann)

    def close(self, info: dict[str, Any]) -> None:
        self._images.close()
        self._anns.close()
        parts = [
            b'{"info":',
            dumps({**info, "file_names": FILE_NAMES[self.source_dir is not None]}),
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
