"""How alike two photos look, by their pixels alone: what ImageCoDe's ranking of distractors adds to the
graph's likeness when the run has the images.

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

from pathlib import Path

import numpy as np
from PIL import Image

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
