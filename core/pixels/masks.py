"""The mask of an object inside its box, and how far to trust it. Classical segmentation, no weights.

A scene graph gives a box; the pixel checks need the object. `object_mask(rgb, box)` cuts it out with
GrabCut (OpenCV's graph cut over colour models of the box and a ring of context around it) and says what
it found, so a caller can tell "this mask is the object" from "this mask misses part of it / is unusable".

How the cut is made:
1. GrabCut initialised with the box (`GC_INIT_WITH_RECT`): the ring outside the box is background, the
   box probably foreground. The window (box plus a context margin of a fifth of its longer side, at
   least `MIN_MARGIN_PX`) is segmented at most `GRABCUT_MAX_SIDE` px on its longer side (GrabCut's cost
   grows with the area; the mask is scaled back, nearest). This is the cut the inpainting backend
   (`backends/inpaint_opencv.py`) and the edit checks make, with the same seeds giving the same pixels.
2. On cluttered real photos GrabCut often *collapses*: the object's colours also fill the ring (a white
   car beside a white truck, a green pole among trees), its foreground model loses, and nothing is left
   (on four raw Visual Genome photos, over half of the coloured objects). Then the cut is run again with
   a central ellipse (`SEED_CORE` of the box's half-sizes) marked as sure foreground, which cannot
   vanish. That seeded cut takes what the box centre looks like, so it is trusted less: it says so.
3. Holes enclosed by the mask up to `MAX_HOLE` of the box's area are filled (a highlight, the stripes of
   a shirt, a mug's outline belong to the object); larger ones are left open (the window between two
   curtains is not curtain).
4. When neither cut finds anything, the mask is the whole box and `method` says "box".

What the trust numbers mean (all inside the clipped box):
- `coverage`: the mask's share of the box. A tight box around a compact object gives 0.4-0.9; far
  below (`MIN_COVERAGE`) the cut kept a part (a white air conditioner on a cream wall leaves its dark
  slit); at the top (`MAX_COVERAGE`) nothing was separated from whatever else the box holds.
- `edge_contact`: the mean share of the box's four sides that the mask runs along. An object touches
  its tight box at a few points per side; a mask that follows most of the outline (`MAX_EDGE_CONTACT`)
  took background that continues past the box, or an object the box cuts.
- `main_share`: the largest connected part's share of the mask; below `MIN_MAIN_SHARE` the mask is in
  pieces (background bits, or an object split by an occluder).
- `problems`: a sentence per number out of range, and for the box fallback; `usable` is "no problem".

What it cannot see: an occluder of the object's colours inside the box (a tree trunk in front of a van
is cut with the van), an object of the colours of its surroundings (both cuts then fail or guess), thin
parts below the working resolution (a lamp's stem in a large window), and whether the box is the right
one (raw graphs put a "car" box on the man in front of it).

OpenCV is imported when a mask is made, never at import.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

logger = logging.getLogger(__name__)

Rect = tuple[int, int, int, int]  # x0, y0, x1, y1: [x0, x1) x [y0, y1), in pixels
MaskMethod = Literal["grabcut", "seeded", "box"]

GRABCUT_ITERS = 5
GRABCUT_MAX_SIDE = 128  # px; larger windows are segmented at reduced size (GrabCut is the costly step)
MIN_GRABCUT_FILL = 0.05  # a GrabCut mask covering less of the box than this failed
MARGIN_FRACTION = 0.2  # context around the box for GrabCut's background model, of the box's longer side
MIN_MARGIN_PX = 16
SEED_CORE = 0.3  # the seeded cut's sure-foreground ellipse, as a share of the box's half-width and half-height
MAX_HOLE = 0.1  # enclosed holes up to this share of the box's area are part of the object
BLEND_GROUND_CHROMA = 12.0  # CIELAB a-b: a ground's colour across the object's hue up to which it is plain
BLEND_CURVE = 0.25  # of the object-ground distance: how far off their line an sRGB blend of the two may lie
BLEND_CONTRAST = 20.0  # CIELAB a-b distance under which an object and its ground are not told apart at its rim

MIN_COVERAGE = 0.15
MAX_COVERAGE = 0.95
MAX_EDGE_CONTACT = 0.75
MIN_MAIN_SHARE = 0.7


def clip_box(box: Sequence[float], width: int, height: int) -> Rect:
    """An xywh box (GQA's) clipped to the image, as (x0, y0, x1, y1). GQA boxes can spill past the edge;
    a box with nothing left inside the image is an error."""
    x, y, w, h = (int(v) for v in box)
    x0, y0, x1, y1 = max(0, x), max(0, y), min(width, x + w), min(height, y + h)
    if x1 - x0 < 1 or y1 - y0 < 1:
        raise ValueError(f"box {tuple(box)} is empty inside the {width}x{height} image")
    return x0, y0, x1, y1


def context_window(rect: Rect, width: int, height: int, margin: int | None = None) -> Rect:
    """`rect` grown by the context margin (a fifth of its longer side, at least MIN_MARGIN_PX), clipped."""
    x0, y0, x1, y1 = rect
    if margin is None:
        margin = max(MIN_MARGIN_PX, round(MARGIN_FRACTION * max(x1 - x0, y1 - y0)))
    return max(0, x0 - margin), max(0, y0 - margin), min(width, x1 + margin), min(height, y1 + margin)


def grabcut(
    rgb: np.ndarray,
    rect: Rect,
    iters: int,
    seed: int,
    *,
    core: float | None = None,
    max_side: int = GRABCUT_MAX_SIDE,
    min_fill: float = MIN_GRABCUT_FILL,
) -> np.ndarray | None:
    """GrabCut's foreground inside `rect` of the RGB window `rgb` (bool, window-sized), or None when it
    finds nothing usable (under `min_fill` of the rect, a rect too small to segment or with no window
    around it to model the background, or OpenCV's error on degenerate colour statistics).

    `core`: None initialises with the rectangle; a fraction marks a central ellipse of that share of the
    rect's half-sizes as sure foreground, so the cut cannot collapse to nothing. The seed fixes GrabCut's
    colour-model initialisation (it draws from OpenCV's RNG): the same inputs give the same pixels."""
    import cv2

    h, w = rgb.shape[:2]
    rx0, ry0, rx1, ry1 = rect
    rect_w, rect_h = rx1 - rx0, ry1 - ry0
    if rect_w < 4 or rect_h < 4 or (rect_w >= w - 1 and rect_h >= h - 1):
        return None  # too small to segment, or no background pixels to model
    # GrabCut's cost grows with the window's area: segment a large window at reduced size and scale the
    # mask back (nearest), which keeps the outline to within a pixel or two of the full-size cut.
    scale = min(1.0, max_side / max(h, w))
    sh, sw = max(1, round(h * scale)), max(1, round(w * scale))
    x0, y0 = round(rx0 * scale), round(ry0 * scale)
    rw, rh = max(1, round(rect_w * scale)), max(1, round(rect_h * scale))
    small = rgb if scale == 1.0 else cv2.resize(rgb, (sw, sh), interpolation=cv2.INTER_AREA)
    mask = np.zeros((sh, sw), np.uint8)
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(seed % (2**31))  # GrabCut's GMM initialisation draws from OpenCV's RNG
    bgr = np.ascontiguousarray(small[..., ::-1])
    gc_rect = (x0, y0, min(rw, sw - x0), min(rh, sh - y0))
    try:
        if core is None:
            cv2.grabCut(bgr, mask, gc_rect, bgd, fgd, iters, cv2.GC_INIT_WITH_RECT)
        else:
            gx, gy, gw, gh = gc_rect
            mask[gy : gy + gh, gx : gx + gw] = cv2.GC_PR_FGD
            yy, xx = np.mgrid[0:sh, 0:sw]
            ax, ay = max(0.5, core * gw / 2), max(0.5, core * gh / 2)
            inner = ((xx + 0.5 - gx - gw / 2) / ax) ** 2 + ((yy + 0.5 - gy - gh / 2) / ay) ** 2 <= 1.0
            mask[inner & (mask == cv2.GC_PR_FGD)] = cv2.GC_FGD
            cv2.grabCut(bgr, mask, None, bgd, fgd, iters, cv2.GC_INIT_WITH_MASK)
    except cv2.error as e:  # degenerate colour statistics (e.g. a flat box)
        logger.debug("grabCut failed on %s: %s", rect, e)
        return None
    fg = (mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)
    if scale != 1.0:
        fg = cv2.resize(fg.astype(np.uint8), (w, h), interpolation=cv2.INTER_NEAREST).astype(bool)
        inside = np.zeros((h, w), bool)
        inside[ry0:ry1, rx0:rx1] = True
        fg &= inside  # GrabCut never marks foreground outside its rectangle
    if fg.sum() < min_fill * rect_w * rect_h:
        return None
    return fg


def blend_share(
    lab: np.ndarray, inner: np.ndarray, bound: np.ndarray, px: int, contrast: float = BLEND_CONTRAST
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """How much of the object each pixel of its soft rim holds, and where the object's pixel nearest each
    pixel is ((ys, xs) arrays of the image's shape). The rim: the pixels within `px` of `inner` (the pixels
    recoloured) but not in it nor in a hole of `bound` (what lies on the object, left out of its mask): the
    blurred outline just past the mask, and the mask's own edge pixels too pale to count as the object's
    colour (a red sweet's pink outline). Each is read as a blend of the nearest
    object pixel's colour and the nearest ground pixel's (the 3 px past the rim), in CIELAB's a-b plane: its
    share is its projection from the ground onto the object, 0 to 1; 0 where the two are under `contrast`
    apart (a brown glove on sand: which is which cannot be told), and where the ground has a colour of its
    own, not the object's own blur on white, grey or black (more than `BLEND_GROUND_CHROMA` of it across
    the object's hue), or the pixel is no blend of the two (that far off the line between them, and
    `BLEND_CURVE` of their distance more): another object touching it (an orange lamp on a red tank)."""
    import cv2
    from scipy import ndimage

    def grown(n: int) -> np.ndarray:
        return cv2.dilate(inner.astype(np.uint8), np.ones((2 * n + 1, 2 * n + 1), np.uint8)).astype(bool)

    filled = fill_holes(bound | inner)
    rim = grown(px) & ~inner & ~(filled & ~bound & ~inner)
    ground = grown(px + 3) & ~grown(px) & ~filled
    share = np.zeros(inner.shape, np.float32)
    _, near = ndimage.distance_transform_edt(~inner, return_indices=True)
    if not rim.any() or not ground.any():
        return share, (near[0], near[1])
    _, (gy, gx) = ndimage.distance_transform_edt(~ground, return_indices=True)
    ys, xs = np.nonzero(rim)
    obj, gnd, here = lab[near[0][ys, xs], near[1][ys, xs], 1:], lab[gy[ys, xs], gx[ys, xs], 1:], lab[ys, xs, 1:]
    d = obj - gnd
    dd = (d * d).sum(-1)
    t = np.clip(((here - gnd) * d).sum(-1) / np.maximum(dd, 1e-6), 0.0, 1.0)
    unit, dist = obj / np.maximum(np.hypot(obj[:, 0], obj[:, 1]), 1e-6)[:, None], np.sqrt(dd)
    plain = np.abs(gnd[:, 0] * unit[:, 1] - gnd[:, 1] * unit[:, 0]) <= BLEND_GROUND_CHROMA
    off = np.abs((here - gnd)[:, 0] * d[:, 1] - (here - gnd)[:, 1] * d[:, 0]) / np.maximum(dist, 1e-6)
    blend = off <= BLEND_GROUND_CHROMA + BLEND_CURVE * dist  # sRGB blends bend off the line in a-b
    share[ys, xs] = np.where((dd >= contrast**2) & plain & blend, t, 0.0)
    return share, (near[0], near[1])


def fill_holes(mask: np.ndarray, max_hole: int | None = None) -> np.ndarray:
    """`mask` with its enclosed holes filled: every hole (`max_hole` None), or those of at most `max_hole`
    pixels (4-connected background parts that do not reach the array's border)."""
    import cv2

    if max_hole is None:
        contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        filled = np.zeros(mask.shape, np.uint8)
        cv2.drawContours(filled, contours, -1, 1, thickness=cv2.FILLED)
        return filled.astype(bool)
    background = (~mask).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(background, connectivity=4)
    if count <= 1:
        return mask.copy()
    border = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    small = stats[:, cv2.CC_STAT_AREA] <= max_hole
    small[0] = False  # label 0 is the mask itself
    small[border] = False
    return mask | small[labels]


@dataclass(frozen=True, slots=True)
class ObjectMask:
    """An object's mask inside its clipped box, with the numbers that say how far to trust it (see the
    module docstring for what each means)."""

    box: Rect  # the clipped box in image pixels
    mask: np.ndarray  # bool, the box's size: True where the object is
    method: MaskMethod  # "grabcut" (box-initialised), "seeded" (the centre-seeded retry), "box" (no cut)
    coverage: float
    edge_contact: float
    main_share: float

    @property
    def collapsed(self) -> bool:
        """Whether the box-initialised cut found nothing (the seeded retry or the box stands in)."""
        return self.method != "grabcut"

    @property
    def problems(self) -> tuple[str, ...]:
        """Why the mask may not be the object, one sentence each; empty when it can be trusted."""
        out = []
        if self.method == "box":
            out.append("no outline found: the mask is the whole box")
        else:
            if self.coverage < MIN_COVERAGE:
                out.append(f"covers {self.coverage:.0%} of its box: a part of the object at most")
            if self.coverage > MAX_COVERAGE:
                out.append(f"fills {self.coverage:.0%} of its box: nothing was separated from the background")
            if self.edge_contact > MAX_EDGE_CONTACT:
                out.append(f"runs along {self.edge_contact:.0%} of its box's outline: background or a cut object")
            if self.main_share < MIN_MAIN_SHARE:
                out.append(f"in pieces: its largest part is {self.main_share:.0%} of it")
        return tuple(out)

    @property
    def usable(self) -> bool:
        return not self.problems

    def full(self, shape: tuple[int, ...]) -> np.ndarray:
        """The mask as an image-sized bool array (`shape`: the image's, height first)."""
        x0, y0, x1, y1 = self.box
        out = np.zeros(shape[:2], bool)
        out[y0:y1, x0:x1] = self.mask
        return out

    def pixels(self, image: np.ndarray) -> np.ndarray:
        """The image's values under the mask, (N, channels) (`image`: the full image the box is in)."""
        x0, y0, x1, y1 = self.box
        return image[y0:y1, x0:x1][self.mask]


def mask_quality(mask: np.ndarray) -> tuple[float, float, float]:
    """(coverage, edge_contact, main_share) of a box-sized bool mask (module docstring)."""
    import cv2

    area = int(mask.sum())
    if area == 0:
        return 0.0, 0.0, 0.0
    sides = (mask[0], mask[-1], mask[:, 0], mask[:, -1])
    edge = float(np.mean([side.mean() for side in sides]))
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    main = float(stats[1:count, cv2.CC_STAT_AREA].max()) / area
    return area / mask.size, edge, main


def object_mask(
    rgb: np.ndarray,
    box: Sequence[float],
    *,
    seed: int = 0,
    iters: int = GRABCUT_ITERS,
    max_side: int = GRABCUT_MAX_SIDE,
    seeded_retry: bool = True,
) -> ObjectMask:
    """The object in `box` (xywh, GQA's) of the RGB uint8 image `rgb`, with its trust numbers.

    The box-initialised cut first; when it collapses, the centre-seeded cut (unless `seeded_retry` is
    off); the whole box when both fail. See the module docstring for each step and what it cannot see."""
    height, width = rgb.shape[:2]
    rect = clip_box(box, width, height)
    win = context_window(rect, width, height)
    wx0, wy0, wx1, wy1 = win
    bx0, by0, bx1, by1 = rect
    local = (bx0 - wx0, by0 - wy0, bx1 - wx0, by1 - wy0)
    window = rgb[wy0:wy1, wx0:wx1]
    method: MaskMethod = "grabcut"
    fg = grabcut(window, local, iters, seed, max_side=max_side)
    if fg is None and seeded_retry:
        method = "seeded"
        fg = grabcut(window, local, iters, seed, core=SEED_CORE, max_side=max_side)
    box_h, box_w = by1 - by0, bx1 - bx0
    if fg is None:
        inside = np.ones((box_h, box_w), bool)
        return ObjectMask(rect, inside, "box", 1.0, 1.0, 1.0)
    inside = fg[local[1] : local[3], local[0] : local[2]]
    inside = fill_holes(inside, max_hole=int(MAX_HOLE * box_w * box_h))
    coverage, edge, main = mask_quality(inside)
    return ObjectMask(rect, inside, method, coverage, edge, main)
