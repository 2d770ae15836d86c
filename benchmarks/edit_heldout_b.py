"""A second held-out set of edit candidates: six photos of OpenCV's sample data, labelled by eye before any
filter verdict on them was read, and after the `edits` filter's rules measured on the first held-out set
(`benchmarks.edit_heldout`) were chosen. A rule chosen after reading the first set's misses is measured
here, on candidates it was not chosen on.

The photos are the `examples/data` folder of Debian's `opencv-doc` package (BSD-licensed samples):

    apt-get download opencv-doc && dpkg -x opencv-doc_*.deb /tmp/ocv
    .venv/bin/python -m benchmarks.edit_labels --opencv-images /tmp/ocv/usr/share/doc/opencv-doc/examples/data

Without them the set is left out and the report says so. Boxes, names and the colour a person calls each
object were given by hand (`OBJECTS`); the candidates are made as for the first set (two recolours, a
removal per object, a flip per photo). A football player (print on his shirt and a watermark: a flip must be
refused), a desk with a pen, a ball, a cap, a coin and a lighter, children's toys on a striped blanket,
sweets on white, a black notebook with a green band (a near-black object), and cut fruit.

    .venv/bin/python -m benchmarks.edit_heldout_b --opencv-images DIR --render OUT   # draw each candidate
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from benchmarks.edit_heldout import Box, made
from benchmarks.edit_labels import Candidate, render

LABELS = Path(__file__).with_name("edit_labels_heldout_b.csv")
FILES = {"messi": "messi5.jpg", "stuff": "stuff.jpg", "toys": "rubberwhale1.png", "sweets": "smarties.png",
         "notebook": "ela_original.jpg", "fruits": "fruits.jpg"}  # fmt: skip
# photo -> (name, box xywh, the colour a person calls it, the names of the objects inside its box)
OBJECTS: dict[str, list[tuple[str, Box, str, tuple[str, ...]]]] = {
    "messi": [
        ("shirt", (158, 105, 145, 145), "blue", ()),
        ("shorts", (222, 210, 120, 72), "red", ()),
        ("ball", (337, 287, 51, 49), "yellow", ()),
        ("sock", (235, 283, 55, 37), "blue", ()),
        ("right sock", (360, 232, 68, 45), "blue", ()),
        ("shoe", (418, 255, 40, 35), "yellow", ()),
    ],
    "stuff": [
        ("pen", (55, 88, 287, 167), "black", ()),
        ("ball", (336, 124, 120, 122), "white", ()),
        ("cap", (190, 18, 80, 82), "black", ()),
        ("coin", (188, 288, 45, 42), "silver", ()),
        ("lighter", (314, 312, 42, 148), "red", ()),
    ],
    "toys": [
        ("toy", (218, 90, 100, 98), "green", ()),
        ("shell", (62, 140, 92, 42), "white", ()),
        ("letter", (150, 225, 152, 105), "orange", ()),
        ("ring", (70, 293, 115, 95), "orange", ()),
        ("curtain", (345, 0, 239, 255), "orange", ()),
        ("box", (390, 250, 194, 138), "yellow", ()),
        ("lattice", (0, 0, 350, 125), "brown", ()),
        ("blue letter", (0, 240, 80, 148), "blue", ()),
    ],
    "sweets": [
        ("candy", (5, 203, 58, 52), "red", ()),
        ("green candy", (242, 90, 55, 55), "green", ()),
        ("brown candy", (125, 243, 55, 55), "brown", ()),
        ("blue candy", (320, 212, 57, 55), "blue", ()),
    ],
    "notebook": [
        ("notebook", (0, 0, 860, 640), "black", ("band",)),
        ("band", (540, 0, 220, 632), "green", ()),
        ("pages", (0, 548, 855, 60), "white", ()),
    ],
    "fruits": [
        ("orange", (75, 45, 275, 425), "orange", ()),
        ("lemon", (318, 248, 194, 232), "yellow", ()),
        ("lime", (340, 120, 150, 180), "green", ()),
        ("kiwi", (0, 275, 100, 205), "green", ()),
        ("cabbage", (100, 0, 412, 130), "purple", ()),
        ("cheese", (0, 95, 140, 190), "yellow", ()),
    ],
}


def folder(given: Path | None = None) -> Path | None:
    """The folder of OpenCV's sample photos: `given`, or `HARDNEG_OPENCV_IMAGES`; None when neither holds them."""
    d = given or (Path(os.environ["HARDNEG_OPENCV_IMAGES"]) if os.environ.get("HARDNEG_OPENCV_IMAGES") else None)
    return d if d is not None and all((d / f).exists() for f in FILES.values()) else None


def photos(given: Path | None = None) -> dict[str, np.ndarray | None]:
    d = folder(given)
    return {k: None if d is None else np.asarray(Image.open(d / f).convert("RGB")) for k, f in FILES.items()}


def candidates(given: Path | None = None) -> Iterator[Candidate]:
    return made(photos(given), OBJECTS, "hb")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opencv-images", type=Path, help="the examples/data folder of Debian's opencv-doc")
    ap.add_argument("--render", type=Path, required=True, help="draw every candidate beside its source here")
    ap.add_argument("--ids", action="store_true", help="print each candidate's number, id and digest")
    args = ap.parse_args(argv)
    if folder(args.opencv_images) is None:
        print("OpenCV's sample photos are not here: see the module docstring", file=sys.stderr)
        return 1
    cands = list(candidates(args.opencv_images))
    render(cands, args.render)
    if args.ids:
        for n, c in enumerate(cands):
            print(f"#{n} {c.id} {c.kind} {c.maker} {c.digest}")
    print(f"{len(cands)} candidates of the second held-out set drawn into {args.render}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
