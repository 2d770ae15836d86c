"""xywh box helpers shared by the detection metrics (FineCops-Ref, TRICD).

Boxes are `[x, y, w, h]` in pixels of the image they refer to, continuous coordinates:
IoU is area-based with no "+1" pixel convention, as in pycocotools.
"""

from __future__ import annotations

from collections.abc import Sequence

from hardneg.evaluation.numbers import finite_numbers

Box = Sequence[float]  # [x, y, w, h]


def check_box(box: object, what: str) -> tuple[float, float, float, float]:
    """The box as four finite floats with w, h >= 0, or a ValueError naming `what`.

    Zero-width or zero-height boxes are allowed (a degenerate prediction overlaps nothing: IoU 0);
    negative sizes usually mean xyxy was passed for xywh, so they are refused rather than fixed.
    """
    if not isinstance(box, Sequence) or isinstance(box, str) or len(box) != 4:
        raise ValueError(f"{what}: a box must be [x, y, w, h], got {box!r}")
    x, y, w, h = finite_numbers(box, f"{what}: each box value")
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
