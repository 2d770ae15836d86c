"""What the pixel evidence costs: ms per object mask and per colour naming, and per image, on real photos.

    .venv/bin/python -m benchmarks.pixel_evidence [PHOTOS ...] [--repeat N]

PHOTOS are GQA-style folders (`images/<id>.jpg` and `sceneGraphs.json`); without any, the four Visual
Genome photos the tests use (`tests/data/photos8`, with boxes from their raw graphs written below)
and scikit-image's astronaut and coffee with hand-made boxes. Every object is masked (`core.pixels.masks.
object_mask`) and its colours read (`core.colors.read_colours`), `--repeat` times; the table gives the
median ms per object for each step, split by how the mask was made (the centre-seeded retry runs a
second GrabCut), the ms per image, and the baseline in the same run: the plain box-initialised GrabCut
alone (what the inpainting backend already pays per region), so the ratio is what the trust numbers and
the retry add.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from hardneg.core.colors import read_colours
from hardneg.core.pixels.masks import clip_box, context_window, grabcut, object_mask

REPO = Path(__file__).resolve().parent.parent

# Boxes (xywh) of the four VG photos' coloured objects, from their raw graphs.
VG_BOXES: dict[str, list[tuple[int, int, int, int]]] = {
    "1": [(421, 91, 79, 339), (243, 489, 52, 26), (118, 13, 88, 182), (241, 289, 59, 101), (708, 342, 91, 174),
          (574, 327, 32, 143), (391, 481, 46, 34), (245, 384, 38, 118), (356, 296, 89, 97), (382, 369, 54, 128),
          (521, 271, 265, 185), (529, 298, 233, 134), (0, 1, 134, 533), (384, 306, 37, 66)],
    "2": [(359, 362, 72, 81), (324, 320, 142, 255), (239, 347, 136, 126), (3, 321, 372, 279), (0, 146, 73, 223),
          (0, 492, 366, 107), (547, 4, 251, 384), (346, 327, 86, 76), (288, 212, 28, 131), (230, 287, 22, 67),
          (165, 13, 282, 298)],
    "4": [(360, 1, 280, 300), (387, 214, 92, 157), (407, 284, 72, 27), (183, 222, 111, 86), (2, 321, 629, 157),
          (105, 210, 260, 172), (0, 230, 92, 129), (216, 62, 48, 150)],
    "5": [(2, 490, 349, 108), (301, 448, 49, 88), (389, 9, 404, 519), (144, 358, 174, 240), (194, 278, 101, 101),
          (186, 20, 180, 57), (425, 132, 372, 102), (120, 357, 317, 107), (145, 3, 245, 528)],
}  # fmt: skip
SAMPLE_BOXES = {
    "astronaut": [(20, 250, 345, 262), (0, 0, 100, 512), (275, 342, 237, 170), (352, 70, 110, 210)],
    "coffee": [(75, 80, 405, 310), (170, 18, 240, 290), (322, 65, 103, 262)],
}


def photos(folders: list[Path]) -> Iterator[tuple[str, np.ndarray, list[tuple[int, int, int, int]]]]:
    if not folders:
        import skimage.data

        for image, boxes in VG_BOXES.items():
            yield (
                f"vg{image}",
                np.asarray(Image.open(REPO / "tests/data/photos8/images" / f"{image}.jpg").convert("RGB")),
                boxes,
            )
        for name, boxes in SAMPLE_BOXES.items():
            yield name, getattr(skimage.data, name)(), boxes
        return
    for folder in folders:
        graphs = json.loads((folder / "sceneGraphs.json").read_text())
        for image_id, g in graphs.items():
            rgb = np.asarray(Image.open(folder / "images" / f"{image_id}.jpg").convert("RGB"))
            boxes = [(o["x"], o["y"], o["w"], o["h"]) for o in g["objects"].values()]
            yield image_id, rgb, boxes


def plain_grabcut(rgb: np.ndarray, box: tuple[int, int, int, int]) -> None:
    """The baseline: the box-initialised cut alone, as the inpainting backend makes it."""
    height, width = rgb.shape[:2]
    rect = clip_box(box, width, height)
    wx0, wy0, wx1, wy1 = context_window(rect, width, height)
    local = (rect[0] - wx0, rect[1] - wy0, rect[2] - wx0, rect[3] - wy0)
    grabcut(rgb[wy0:wy1, wx0:wx1], local, 5, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("photos", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    mask_ms: dict[str, list[float]] = defaultdict(list)
    name_ms: list[float] = []
    base_ms: list[float] = []
    per_image: list[float] = []
    objects = 0
    for _, rgb, boxes in photos(args.photos):
        image_total = []
        for _ in range(args.repeat):
            t_image = 0.0
            for box in boxes:
                t0 = time.perf_counter()
                plain_grabcut(rgb, box)
                t1 = time.perf_counter()
                mask = object_mask(rgb, box)
                t2 = time.perf_counter()
                x0, y0, x1, y1 = mask.box
                read_colours(rgb[y0:y1, x0:x1], mask.mask)
                t3 = time.perf_counter()
                base_ms.append(1000 * (t1 - t0))
                mask_ms[mask.method].append(1000 * (t2 - t1))
                name_ms.append(1000 * (t3 - t2))
                t_image += t3 - t1
            image_total.append(1000 * t_image)
        per_image.append(statistics.median(image_total))
        objects += len(boxes)
    every = [v for values in mask_ms.values() for v in values]
    print(f"{len(per_image)} images, {objects} objects, {args.repeat} repeats; median ms per object:")
    print(f"  baseline: box-initialised GrabCut alone   {statistics.median(base_ms):7.1f}")
    for method in ("grabcut", "seeded", "box"):
        if mask_ms[method]:
            share = len(mask_ms[method]) / len(every)
            print(f"  object_mask, {method:7s} ({share:4.0%} of objects) {statistics.median(mask_ms[method]):7.1f}")
    ratio = statistics.median(every) / statistics.median(base_ms)
    print(f"  object_mask, all                        {statistics.median(every):7.1f}  ({ratio:.2f}x the baseline)")
    print(f"  read_colours                            {statistics.median(name_ms):7.1f}")
    print(f"mask + naming per image: median {statistics.median(per_image):.0f} ms, max {max(per_image):.0f} ms")


if __name__ == "__main__":
    main()
