"""xywh box helpers shared by the detection metrics (FineCops-Ref, TRICD).

Boxes are `[x, y, w, h]` in pixels of the image they refer to, continuous coordinates:
IoU is area-based with no "+1" pixel convention, as in pycocotools.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Box = Sequence[float]  # [x, y, w, h]


def check_box(box: object, what: str) -> tuple[float, float, float, float]:
    """The box as four finite floats with w, h >= 0, or a ValueError naming `what`.

    Zero-width or zero-height boxes are allowed (a degenerate prediction overlaps nothing: IoU 0);
    negative sizes usually mean xyxy was passed for xywh, so they are refused rather than fixed.
    """
    if not isinstance(box, Sequence) or isinstance(box, str) or len(box) != 4:
        raise ValueError(f"{what}: a box must be [x, y, w, h], got {box!r}")
    try:
        x, y, w, h = (float(v) for v in box)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: box values must be numbers, got {box!r}") from None
    if not all(math.isfinite(v) for v in (x, y, w, h)):
        raise ValueError(f"{what}: box values must be finite, got {box!r}")
    if w < 0 or h < 0:
        raise ValueError(f"{what}: box width and height must be >= 0 (xywh, not xyxy), got {box!r}")
    return x, y, w, h


def iou_xywh(a: Box, b: Box) -> float:
    """Intersection over union of two xywh boxes; 0 when the union is empty (two degenerate boxes)."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = min(ax + aw, bx + bw) - max(ax, bx)
    ih = min(ay + ah, by + bh) - max(ay, by)
    inter = max(iw, 0.0) * max(ih, 0.0)
    union = aw * ah + bw * bh - inter
    return float(inter / union) if union > 0 else 0.0


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every box in `a` (N x 4, xywh) with every box in `b` (M x 4): an N x M array."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    ax1, ay1 = a[:, 0:1], a[:, 1:2]
    ax2, ay2 = ax1 + a[:, 2:3], ay1 + a[:, 3:4]
    bx1, by1 = b[:, 0], b[:, 1]
    bx2, by2 = bx1 + b[:, 2], by1 + b[:, 3]
    iw = np.clip(np.minimum(ax2, bx2) - np.maximum(ax1, bx1), 0.0, None)
    ih = np.clip(np.minimum(ay2, by2) - np.maximum(ay1, by1), 0.0, None)
    inter = iw * ih
    union = (a[:, 2:3] * a[:, 3:4]) + (b[:, 2] * b[:, 3]) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return out
