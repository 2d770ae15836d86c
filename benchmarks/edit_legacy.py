"""The offline edits as hardneg made them before they were verified (`opencv-inpaint@v1`), kept so that the
labelled candidates of `benchmarks/edit_labels.py` can be rendered again by anyone: the filter is measured
on the bad edits it must reject as well as on the good ones.

- `recolour_v1`: GrabCut's mask (the box when it finds nothing), its dominant-hue "colour core", and a
  recolour that moves each pixel's lightness to the target colour's reference lightness (keeping, scaled,
  its deviation) and sets its chroma to the target's: the flat, glowing cut-outs.
- `remove_v1`: Telea inpainting over that GrabCut mask, dilated by 3 px: the smears, and the objects left
  standing where the mask missed them.
"""

from __future__ import annotations

import numpy as np

from hardneg.core.colors import COLORS
from hardneg.core.pixels.masks import fill_holes, grabcut

ACHROMATIC_CHROMA = 8.0
HUE_TOLERANCE_DEG = 35.0
NEUTRAL_L_TOLERANCE = 25.0


def _to_lab(rgb: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)


def _from_lab(lab: np.ndarray) -> np.ndarray:
    import cv2

    return np.clip(cv2.cvtColor(lab, cv2.COLOR_LAB2RGB) * 255.0, 0.0, 255.0)


def _morph(mask: np.ndarray, px: int) -> np.ndarray:
    import cv2

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * abs(px) + 1, 2 * abs(px) + 1))
    return (cv2.dilate if px > 0 else cv2.erode)(mask.astype(np.uint8), kernel).astype(bool)


def window(src: np.ndarray, box: tuple[int, int, int, int], seed: int = 0) -> tuple[tuple[int, ...], np.ndarray]:
    """v1's working window (x0, y0, x1, y1) around the box and GrabCut's mask in it (the box on failure)."""
    height, width = src.shape[:2]
    x, y, w, h = box
    x0, y0, x1, y1 = max(0, x), max(0, y), min(width, x + w), min(height, y + h)
    margin = max(16, round(0.2 * max(x1 - x0, y1 - y0)))
    wx0, wy0, wx1, wy1 = max(0, x0 - margin), max(0, y0 - margin), min(width, x1 + margin), min(height, y1 + margin)
    rect = (x0 - wx0, y0 - wy0, x1 - wx0, y1 - wy0)
    fg = grabcut(src[wy0:wy1, wx0:wx1], rect, 5, seed)
    if fg is None:
        fg = np.zeros((wy1 - wy0, wx1 - wx0), bool)
        fg[rect[1] : rect[3], rect[0] : rect[2]] = True
    return (wx0, wy0, wx1, wy1), fg


def colour_core(lab: np.ndarray, fg: np.ndarray, source: tuple[int, int, int] | None) -> np.ndarray:
    """v1's part of the mask that carries the object's colour (its dominant hue, or neutral lightness)."""
    lightness, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    chroma = np.hypot(a, b)
    neutral = chroma <= ACHROMATIC_CHROMA
    chromatic = fg & ~neutral
    src = _to_lab(np.array([[source]], np.uint8))[0, 0] if source is not None else None
    src_neutral = src is not None and float(np.hypot(src[1], src[2])) <= ACHROMATIC_CHROMA
    if (src is None and chromatic.sum() < 0.3 * fg.sum()) or (src_neutral and (fg & neutral).any()):
        member = neutral
        pool = lightness[fg & neutral]
        if src is not None:
            near_l = pool[np.abs(pool - src[0]) < 2 * NEUTRAL_L_TOLERANCE]
            pool = near_l if near_l.size else pool
        core = fg & neutral & (np.abs(lightness - float(np.median(pool))) < NEUTRAL_L_TOLERANCE)
    elif not chromatic.any():
        return fg
    else:
        hue = np.degrees(np.arctan2(b, a)) % 360.0
        weights = chroma[chromatic]
        hist, _ = np.histogram(hue[chromatic], bins=36, range=(0.0, 360.0), weights=weights)
        peak = (np.argmax(hist) + 0.5) * 10.0
        if src is not None and not src_neutral:
            peak = float(np.degrees(np.arctan2(src[2], src[1])) % 360.0)
        near = np.abs((hue[chromatic] - peak + 180.0) % 360.0 - 180.0) < HUE_TOLERANCE_DEG
        rad, w = np.radians(hue[chromatic][near]), weights[near]
        mean = np.degrees(np.arctan2((w * np.sin(rad)).sum(), (w * np.cos(rad)).sum()))
        same_hue = np.abs((hue - mean + 180.0) % 360.0 - 180.0) < HUE_TOLERANCE_DEG
        member = same_hue | neutral
        core = chromatic & same_hue
    if core.sum() < 0.1 * fg.sum():
        return fg
    return fg & member & _morph(fill_holes(core), 1)


def recolour_v1(src: np.ndarray, box: tuple[int, int, int, int], old: str | None, new: str) -> np.ndarray:
    """The photo with the object in `box` recoloured as v1 did it (candidate 0)."""
    import cv2

    (wx0, wy0, wx1, wy1), fg = window(src, box)
    win = src[wy0:wy1, wx0:wx1]
    lab = _to_lab(win)
    mask = colour_core(lab, fg, COLORS.get((old or "").strip().lower()))
    t_l, t_a, t_b = _to_lab(np.array([[COLORS[new]]], np.uint8))[0, 0]
    obj = lab[mask]
    dev = obj[:, 0] - obj[:, 0].mean()
    lo, hi = np.percentile(dev, [5, 95]) if dev.size else (0.0, 0.0)
    room = min((100.0 - t_l) / hi if hi > 1e-3 else np.inf, t_l / -lo if lo < -1e-3 else np.inf, 1.0)
    new_l = np.clip(t_l + max(room, 0.35) * dev, 0.0, 100.0)
    chroma = np.hypot(obj[:, 1], obj[:, 2])
    med = float(np.median(chroma)) if chroma.size else 0.0
    ratio = np.clip(chroma / med, 0.0, 1.25) if med > ACHROMATIC_CHROMA else np.ones_like(chroma)
    out_lab = lab.copy()
    out_lab[mask] = np.stack([new_l, t_a * ratio, t_b * ratio], axis=1)
    alpha = np.maximum(cv2.GaussianBlur(mask.astype(np.float32), (0, 0), 1.0)[..., None], mask[..., None])
    out = src.copy()
    out[wy0:wy1, wx0:wx1] = np.clip(alpha * _from_lab(out_lab) + (1.0 - alpha) * win + 0.5, 0, 255).astype(np.uint8)
    return out


def remove_v1(src: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """The photo with the object in `box` removed as v1 did it (candidate 0: Telea, radius 5, 3 px margin)."""
    import cv2

    (wx0, wy0, wx1, wy1), fg = window(src, box)
    win = np.ascontiguousarray(src[wy0:wy1, wx0:wx1][..., ::-1])
    hole = _morph(fg, 3).astype(np.uint8) * 255
    out = src.copy()
    out[wy0:wy1, wx0:wx1] = cv2.inpaint(win, hole, 5, cv2.INPAINT_TELEA)[..., ::-1]
    return out
