"""Object masks from scene-graph boxes, refined the way the OpenCV inpainting backend refines its edit
regions (`backends/inpaint_opencv.py`): GrabCut inside the box, with context around it for the background
model, at reduced size for large windows; the whole box when GrabCut finds nothing usable; enclosed holes
filled (a mug's handle, a striped shirt). Probe-B keeps these pixels and replaces the rest.

OpenCV is imported when a mask is made, never at import.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

GRABCUT_ITERS = 5


def object_mask(rgb: np.ndarray, box: Sequence[int], seed: int, iters: int = GRABCUT_ITERS) -> np.ndarray:
    """A bool mask (image-sized) of the object in `box` (xywh) of the RGB array `rgb`."""
    from hardneg.backends.inpaint import Rect
    from hardneg.backends.inpaint_opencv import _clip_box, _grabcut
    from hardneg.core.pixels.masks import fill_holes

    height, width = rgb.shape[:2]
    r = _clip_box(tuple(box), width, height)  # type: ignore[arg-type]
    margin = max(16, round(0.2 * max(r.w, r.h)))  # the backend's context margin for GrabCut
    win = r.grow(margin, width, height)
    rect = Rect(r.x0 - win.x0, r.y0 - win.y0, r.x1 - win.x0, r.y1 - win.y0)
    fg = _grabcut(rgb[win.slices()], rect, iters, seed)
    if fg is None:
        fg = np.zeros((win.h, win.w), bool)
        fg[rect.slices()] = True
    out = np.zeros((height, width), bool)
    out[win.slices()] = fill_holes(fg)
    return out


def dilate(mask: np.ndarray, px: int) -> np.ndarray:
    from hardneg.backends.inpaint_opencv import _morph

    return _morph(mask, px)


def feather(mask: np.ndarray, sigma: float) -> np.ndarray:
    """A soft alpha (float32, HxWx1) from a bool mask."""
    from hardneg.backends.inpaint_opencv import _feather

    return _feather(mask, sigma)
