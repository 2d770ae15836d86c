"""Boxes that fit their name: how big, how shaped and where a name's boxes usually are, and a box far
outside that.

A scene graph's box can be wrong in ways its name shows: a 22x16 px sliver of a counter called "cabinet",
a ball's box on bare dirt, a "sky" at the bottom of the picture. Each name's boxes, over many real graphs,
have a distribution; a box that few of its name's boxes resemble is suspect (a risk of the positive, and
dropped at levels 2 and 3 by default: `filters/evidence.py`).

Per name, two histograms of normalised box geometry (`BoxShapes`):

- **shape**: log(box area / image area) in `AREA_BINS` bins over `AREA_RANGE`, by log(width / height) in
  `ASPECT_BINS` bins over `ASPECT_RANGE` (both clamped into the end bins);
- **place**: the box centre's x and y as fractions of the image, `PLACE_BINS` by `PLACE_BINS`.

How unusual a box is: the *tail mass* of its bin, the share of the name's boxes that lie in bins no more
common than its own (after a light smoothing over neighbouring bins, so a box just beside the common ones
is not called rare). A box whose tail mass is under `TAIL` in either histogram is far outside its name's
distribution; a name with fewer than `MIN_BOXES` boxes decides nothing.

The distributions ship as versioned package data (`templates/box_shapes.v1.json`, built from real scene
graphs by `python -m hardneg.core.gqa.boxes GRAPHS... --out FILE`) and are combined with the run's own
boxes (counted by the plausibility stage, `AnnotationStats.shape`/`place`), the box judged left out of
its own distribution.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

FORMAT = 1
AREA_RANGE = (-12.0, 0.0)  # log of the box's share of the image: e^-12 is 1 px in 163k
AREA_BINS = 12
ASPECT_RANGE = (-3.0, 3.0)  # log(w / h): 1:20 to 20:1
ASPECT_BINS = 12
PLACE_BINS = 5
TAIL = 0.005  # a box whose bin and every rarer bin hold under this share of its name's boxes is far outside
MIN_BOXES = 30  # a name with fewer boxes decides nothing
KEEP_BOXES = 10  # the shipped table leaves out names with fewer boxes (the run's own may add them)
HISTOGRAMS = ("shape", "place")
Bin = tuple[int, int]


def _bin(value: float, lo: float, hi: float, bins: int) -> int:
    return min(bins - 1, max(0, int((value - lo) / (hi - lo) * bins)))


def box_bins(box: Sequence[float], width: int, height: int) -> dict[str, Bin] | None:
    """The (shape, place) bins of an xywh box in a `width` x `height` image; None for an empty box."""
    x, y, w, h = map(float, box)
    if w <= 0 or h <= 0 or width <= 0 or height <= 0:
        return None
    area = math.log(w * h / (width * height))
    aspect = math.log(w / h)
    cx, cy = (x + w / 2) / width, (y + h / 2) / height
    return {
        "shape": (_bin(area, *AREA_RANGE, AREA_BINS), _bin(aspect, *ASPECT_RANGE, ASPECT_BINS)),
        "place": (_bin(cx, 0.0, 1.0, PLACE_BINS), _bin(cy, 0.0, 1.0, PLACE_BINS)),
    }


def bin_key(name: str, b: Bin) -> str:
    """How a run stores one bin's count (`AnnotationStats.shape`, `.place`): "<name>\\t<i>,<j>"."""
    return f"{name}\t{b[0]},{b[1]}"


def parse_key(key: str) -> tuple[str, Bin]:
    name, _, b = key.rpartition("\t")
    i, j = b.split(",")
    return name, (int(i), int(j))


@dataclass(slots=True)
class NameBoxes:
    """One name's boxes: per histogram, the count of each bin."""

    counts: dict[str, Counter] = field(default_factory=lambda: {h: Counter() for h in HISTOGRAMS})

    @property
    def n(self) -> int:
        return sum(self.counts["shape"].values())


@dataclass(frozen=True, slots=True)
class Misfit:
    """Why a box is far outside its name's boxes: which histogram, its tail mass, out of how many boxes."""

    histogram: str
    tail: float
    boxes: int
    reason: str


class BoxShapes:
    """Per name, how its boxes are shaped and placed (module docstring)."""

    def __init__(self, names: Mapping[str, NameBoxes] | None = None) -> None:
        self.names: dict[str, NameBoxes] = dict(names or {})
        self._tails: dict[tuple[str, str, Bin, bool], float] = {}  # (name, histogram, bin, counted) -> tail mass

    def add(self, name: str, box: Sequence[float], width: int, height: int) -> None:
        bins = box_bins(box, width, height)
        self._tails.clear()
        if bins is not None:
            entry = self.names.setdefault(name, NameBoxes())
            for h, b in bins.items():
                entry.counts[h][b] += 1

    def combined(self, other: BoxShapes) -> BoxShapes:
        """The counts of both (the shipped table and a run's own boxes)."""
        out = BoxShapes()
        for src in (self, other):
            for name, entry in src.names.items():
                mine = out.names.setdefault(name, NameBoxes())
                for h in HISTOGRAMS:
                    mine.counts[h].update(entry.counts[h])
        return out

    def misfit(
        self, name: str, box: Sequence[float], width: int, height: int, *, counted: bool = False
    ) -> Misfit | None:
        """Why `box` (xywh) of a `name` is far outside its name's boxes, or None (too few boxes to say, or
        it fits). `counted`: the box is one of the counted ones (a run's own), left out of its own
        distribution."""
        entry = self.names.get(name)
        bins = box_bins(box, width, height)
        if entry is None or bins is None:
            return None
        n = entry.n - (1 if counted else 0)
        if n < MIN_BOXES:
            return None
        for h in HISTOGRAMS:
            tail = self._tails.get(key := (name, h, bins[h], counted))
            if tail is None:  # a name's boxes fall in few bins: once per (name, bin) while the counts stand
                counts = entry.counts[h]
                if counted:
                    counts = counts.copy()
                    counts[bins[h]] -= 1
                tail = self._tails[key] = _tail_mass(counts, bins[h], _shape_of(h))
            if tail < TAIL:
                what = "size and shape" if h == "shape" else "place in the picture"
                why = f"its {what} is rarer than {1 - tail:.1%} of the {n} '{name}' boxes seen"
                return Misfit(h, tail, n, why)
        return None

    # ------------------------------------------------------------------ storage

    def to_json(self, source: str) -> dict[str, Any]:
        names = {
            name: {
                "n": e.n,
                **{h: {f"{i},{j}": c for (i, j), c in sorted(e.counts[h].items()) if c} for h in HISTOGRAMS},
            }
            for name, e in sorted(self.names.items())
            if e.n >= KEEP_BOXES
        }
        return {
            "format": FORMAT,
            "source": source,
            "area_range": list(AREA_RANGE),
            "area_bins": AREA_BINS,
            "aspect_range": list(ASPECT_RANGE),
            "aspect_bins": ASPECT_BINS,
            "place_bins": PLACE_BINS,
            "names": names,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BoxShapes:
        expected = (list(AREA_RANGE), AREA_BINS, list(ASPECT_RANGE), ASPECT_BINS, PLACE_BINS)
        got = (data.get("area_range"), data.get("area_bins"), data.get("aspect_range"), data.get("aspect_bins"),
               data.get("place_bins"))  # fmt: skip
        if data.get("format") != FORMAT or tuple(got) != expected:
            raise ValueError("a box-shape table of another format or binning: rebuild it with this hardneg")
        out = cls()
        for name, e in data["names"].items():
            entry = out.names[name] = NameBoxes()
            for h in HISTOGRAMS:
                for k, c in e[h].items():
                    i, j = k.split(",")
                    entry.counts[h][(int(i), int(j))] = int(c)
        return out

    @classmethod
    def load(cls, path: str | Path) -> BoxShapes:
        return cls.from_json(orjson.loads(Path(path).read_bytes()))

    @classmethod
    def from_counts(cls, shape: Mapping[str, int], place: Mapping[str, int]) -> BoxShapes:
        """A run's own boxes, from the counts the plausibility stage stores (`bin_key` keys)."""
        out = cls()
        for h, counts in (("shape", shape), ("place", place)):
            for key, c in counts.items():
                name, b = parse_key(key)
                out.names.setdefault(name, NameBoxes()).counts[h][b] += c
        return out


def _shape_of(histogram: str) -> tuple[int, int]:
    return (AREA_BINS, ASPECT_BINS) if histogram == "shape" else (PLACE_BINS, PLACE_BINS)


def _tail_mass(counts: Mapping[Bin, int], at: Bin, shape: tuple[int, int]) -> float:
    """The share of the (smoothed) mass in bins no denser than `at`'s."""
    grid = np.zeros(shape, np.float64)
    for (i, j), c in counts.items():
        if c > 0:
            grid[i, j] = c
    total = grid.sum()
    if total <= 0:
        return 1.0
    # a light smoothing: each bin keeps itself and takes a quarter of each of its 4 neighbours' mass
    padded = np.pad(grid, 1)
    smooth = grid + 0.25 * (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:])
    density = smooth / smooth.sum()
    return float(density[density <= density[at] + 1e-12].sum())


# ------------------------------------------------------------------ building the shipped table


def boxes_of(graphs: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, list[float], int, int]]:
    """(name, xywh, width, height) of every object of GQA-schema graphs (one dict per image)."""
    for g in graphs:
        if not isinstance(g, Mapping):
            continue
        width, height = int(g.get("width") or 0), int(g.get("height") or 0)
        for o in (g.get("objects") or {}).values():
            yield o["name"], [o["x"], o["y"], o["w"], o["h"]], width, height


def build(files: Sequence[Path]) -> tuple[BoxShapes, int]:
    """The table of every box in `files` (GQA `*_sceneGraphs.json`), and how many boxes it counted. An image
    id in two files is counted from the first only (two releases of one graph are not two images)."""
    shapes, seen, ids = BoxShapes(), 0, set()
    for f in files:
        graphs = orjson.loads(f.read_bytes())
        fresh = [g for i, g in graphs.items() if i not in ids]
        ids.update(graphs)
        for name, box, width, height in boxes_of(fresh):
            shapes.add(name, box, width, height)
            seen += 1
    return shapes, seen


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Build the box-shape table from real scene graphs (GQA schema).")
    ap.add_argument("graphs", nargs="+", type=Path, help="*_sceneGraphs.json files")
    ap.add_argument("--out", type=Path, required=True, help="where to write the table (JSON)")
    ap.add_argument("--source", default=None, help="what the table was built from, as the file will say")
    args = ap.parse_args(argv)
    shapes, seen = build(args.graphs)
    source = args.source or ", ".join(f.parent.name or f.name for f in args.graphs)
    data = shapes.to_json(f"{source}: {seen:,} boxes")
    args.out.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    kept = len(data["names"])
    print(f"{seen:,} boxes of {len(shapes.names):,} names; {kept} names with {KEEP_BOXES}+ boxes -> {args.out}")


if __name__ == "__main__":
    main()
