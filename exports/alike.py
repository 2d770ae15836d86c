"""The corpus images most like an image, for ImageCoDe's distractors: by the graph (`exports/tricd/rank.py`),
then, when the run has the photos, by their pixels too (`Ranking`).

How alike two photos look, by their pixels alone:

A photo's *signature* is two small summaries of its pixels, made from a 1/8-scale decode (JPEG's DCT
scaling, about a millisecond a photo):

- its layout: the picture shrunk to 8 x 8 RGB, each channel centred, the whole scaled to unit length, so
  that two photos alike in where their light, dark and coloured parts lie score high whatever their
  exposure;
- its colours: a 4 x 4 x 4 RGB histogram (each pixel counted once), compared by histogram intersection.

`likeness` is the mean of the two (cosine of the layouts mapped to [0, 1], and the intersection), 1 for a
photo and itself. No model: a crude but honest measure of "looks alike", which is what the ranking needs
among images the graph already found alike.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.rows import PositiveRow
from hardneg.exports.corpus import Corpus, SortedIds, sample
from hardneg.exports.tricd.rank import Scoring, candidate_pool, path_edges

if TYPE_CHECKING:
    from hardneg.exports.imagecode import ImageCodeExport

SIDE = 8  # the layout's side, in cells
BINS = 4  # histogram bins per channel


def signature(path: Path) -> np.ndarray:
    """The photo's layout (SIDE * SIDE * 3 values) and colour histogram (BINS ** 3 shares), as one float32
    vector; a photo that cannot be read gets a zero vector, alike to nothing."""
    try:
        with Image.open(path) as im:
            im.draft("RGB", (SIDE * 8, SIDE * 8))  # JPEG: decode at the smallest scale that is still larger
            rgb = np.asarray(im.convert("RGB"), dtype=np.float32)
    except (OSError, ValueError):
        return np.zeros(SIDE * SIDE * 3 + BINS**3, np.float32)
    small = np.asarray(Image.fromarray(rgb.astype(np.uint8)).resize((SIDE, SIDE), Image.BOX), np.float32)
    layout = (small - small.mean(axis=(0, 1))).ravel()
    layout /= max(float(np.linalg.norm(layout)), 1e-6)
    q = np.minimum((rgb / (256 / BINS)).astype(np.int32), BINS - 1)
    cells = ((q[..., 0] * BINS + q[..., 1]) * BINS + q[..., 2]).ravel()
    hist = np.bincount(cells, minlength=BINS**3).astype(np.float32)
    hist /= max(float(hist.sum()), 1.0)
    return np.concatenate([layout, hist]).astype(np.float32)


def likeness(a: np.ndarray, b: np.ndarray) -> float:
    """How alike two signatures are, in [0, 1]."""
    n = SIDE * SIDE * 3
    if not a.any() or not b.any():
        return 0.0
    layout = (float(np.dot(a[:n], b[:n])) + 1.0) / 2.0
    colours = float(np.minimum(a[n:], b[n:]).sum())
    return (layout + colours) / 2.0


class Ranking:
    """The corpus images of a positive's split most like its image, best first: by the graph
    (`exports/tricd/rank.py`), then, with the photos, re-ordered by the sum of the graph's rank and the
    pixels' rank (`likeness`), ties by the graph's."""

    def __init__(self, index: Corpus, opts: ImageCodeExport, seed: int, images: Path | None,
                 signatures: dict[str, np.ndarray]) -> None:  # fmt: skip
        self.index, self.opts, self.seed, self.images, self.signatures = index, opts, seed, images, signatures

    def rank(self, p: PositiveRow) -> list[str]:
        i0, path = p.image_id, p.node()
        k = self.opts.candidates
        pool = candidate_pool(self.index, i0, path, k, self.seed, "imagecode", p.id)
        if len(pool) < k:  # a small corpus: every image of the split is a candidate
            everyone = split_images(self.index).get(self.index.images[i0].split, SortedIds(()))
            pool |= set(sample(everyone.without(i0), k - len(pool), self.seed, "imagecode", "any", p.id))
            pool.discard(i0)
        if not pool:
            return []
        partners = {n.name for n in path.nodes()[1:]} - {path.name}
        ranked = Scoring.of(self.index).best(i0, pool, path.name, partners, path_edges(path), self.opts.checked)
        if self.images is None or len(ranked) < 2:
            return ranked
        mine = self._signature(i0)
        alike = [likeness(mine, self._signature(j)) for j in ranked]
        by_pixels = sorted(range(len(ranked)), key=lambda i: (-alike[i], i))
        pixel_rank = {i: r for r, i in enumerate(by_pixels)}
        return [ranked[i] for i in sorted(range(len(ranked)), key=lambda i: (i + pixel_rank[i], i))]

    def _signature(self, image_id: str) -> np.ndarray:
        got = self.signatures.get(image_id)
        if got is None:
            assert self.images is not None
            got = self.signatures[image_id] = signature(image_file(self.images, image_id))
        return got


def split_images(index: Corpus) -> dict[str, SortedIds]:
    """The corpus's images of each split, sorted (worked out once per corpus)."""
    got = index.derived.get("split_images")
    if got is None:
        by: dict[str, list[str]] = defaultdict(list)
        for image_id, info in index.images.items():
            by[info.split].append(image_id)
        got = index.derived["split_images"] = {s: SortedIds.of(ids) for s, ids in by.items()}
    return got
