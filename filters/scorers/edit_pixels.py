"""The pixel measurements behind the edit checks (`filters/scorers/edit_check.py`, whose docstring defines each
score and its constants): the region's working window, gradients, local texture, and one function per
score. Only numpy and OpenCV, imported when a measurement runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from hardneg.filters.base import Box, Scores

RegionKind = Literal["recolor", "structure", "attribute", "generic"]

DILATE_PX = 8  # the backend pastes the source back outside the box dilated by 6 px; 2 more for blending
ERODE_PX = 2  # the object's outline is shared with its surroundings: trace reads its inside only
MASK_SEED = 1729  # GrabCut's RNG seed: the verifier's mask is its own, not the backend's
MIN_CORE_FRACTION = 0.1  # of the mask: fewer old-colour pixels than this and the hue core is used instead
TRACE_MIN_EDGE = 0.03  # step units (blurred luma): weaker gradients are noise, not structure
TRACE_CONTRAST = 0.4  # a surviving edge keeps at least this share of its strength (a faded ghost counts)
TRACE_ANGLE_DEG = 30.0
TRACE_MIN_PIXELS = 20
CHANGED_LEVEL = 10  # grey levels (0-255) in some channel: JPEG noise is below, an edit above
SMEAR_RATIO = 0.35  # a pixel is smeared when its local texture is below this share of the ring's
FLAT_RING = 0.012  # step units: a ring this flat (a plain wall) has no texture to lose
SMEAR_MIN_PIXELS = 64
FILL_MIN_DE = 12.0  # LAB distance from the ring's median colour that is always within its usual range
FILL_SPREAD = 2.0  # ... or this many times the ring's own median distance, when larger
DOT_FRACTION = 0.002  # of the box's area: a newly coloured patch smaller than this is a speck
DOT_MIN_PX = 12
GLITTER_PX = 5  # old colour left in parts this small inside the object is noise-like glitter
BOXY_BAND_PX = 2  # the box's outline band, inside the box
CLIPPED_LEVEL = 250  # a channel this bright is a blown-out highlight: no shading left to keep
NOISE_FLOOR = 0.005  # local texture below this is flat; ratios are taken against at least this
RING_FRACTION = 0.25
RING_MIN_PX = 12
PASTE_RUN = 0.6  # of the box side: an aspect-fitted crop spans the box one way; curves do not
PASTE_MIN_RUN = 10
PASTE_QUANTILE = 0.25  # the run's value: a quarter of its pixels may lack the edge (the backdrop matched)


@dataclass(frozen=True, slots=True)
class Region:
    """One edited box and what should have happened in it."""

    box: Box
    kind: RegionKind
    old: str | None = None  # recolor: the colour the object had (a COLORS key), when known
    new: str | None = None  # recolor: the colour it should have now
    removal: bool = False  # the object should be gone, its place filled with its surroundings
    inside: tuple[Box, ...] = ()  # recolor: boxes (xywh) of objects on it, left out of its mask


# -- geometry ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """A region's working window in image pixels, and the box and dilated box inside it (window coords)."""

    window: tuple[int, int, int, int]  # x0, y0, x1, y1 in the image
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 in the window
    grown: tuple[int, int, int, int]  # the box dilated by DILATE_PX, in the window

    def crop(self, arr: np.ndarray) -> np.ndarray:
        x0, y0, x1, y1 = self.window
        return arr[y0:y1, x0:x1]


def frame_of(box: Box, width: int, height: int) -> Frame | None:
    """The window around `box`: the box, DILATE_PX, and the ring the smear reference is read from."""
    x, y, w, h = (int(v) for v in box)
    bx0, by0, bx1, by1 = max(0, x), max(0, y), min(width, x + w), min(height, y + h)
    if bx1 - bx0 < 2 or by1 - by0 < 2:
        return None
    ring = max(RING_MIN_PX, round(RING_FRACTION * max(bx1 - bx0, by1 - by0)))
    m = DILATE_PX + ring
    wx0, wy0, wx1, wy1 = max(0, bx0 - m), max(0, by0 - m), min(width, bx1 + m), min(height, by1 + m)
    gx0, gy0 = max(wx0, bx0 - DILATE_PX), max(wy0, by0 - DILATE_PX)
    gx1, gy1 = min(wx1, bx1 + DILATE_PX), min(wy1, by1 + DILATE_PX)
    return Frame(
        (wx0, wy0, wx1, wy1),
        (bx0 - wx0, by0 - wy0, bx1 - wx0, by1 - wy0),
        (gx0 - wx0, gy0 - wy0, gx1 - wx0, gy1 - wy0),
    )


def rect_mask(shape: tuple[int, int], rect: tuple[int, int, int, int]) -> np.ndarray:
    x0, y0, x1, y1 = rect
    m = np.zeros(shape, bool)
    m[y0:y1, x0:x1] = True
    return m


# -- per-window measurements ----------------------------------------------------------------------------


def luma_gradient(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sobel x / y of the luma blurred by sigma 1, in step units (a sharp unit step reads about 0.4)."""
    import cv2

    luma = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
    luma = cv2.GaussianBlur(luma, (0, 0), 1.0)
    return cv2.Sobel(luma, cv2.CV_32F, 1, 0, ksize=3) / 4.0, cv2.Sobel(luma, cv2.CV_32F, 0, 1, ksize=3) / 4.0


def colour_gradient(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|d/dx| and |d/dy| of the colour image (Sobel per RGB channel, maximum over channels), in step units
    (a unit step reads 1, as in `filters.scorers.seam.color_gradient`): the maximum over channels sees an edge
    between regions of equal brightness but different hue."""
    import cv2

    arr = np.ascontiguousarray(rgb, dtype=np.float32) / 255.0
    gx = np.abs(cv2.Sobel(arr, cv2.CV_32F, 1, 0, ksize=3)).max(axis=2) / 4.0
    gy = np.abs(cv2.Sobel(arr, cv2.CV_32F, 0, 1, ksize=3)).max(axis=2) / 4.0
    return gx, gy


def recolour_scores(sw: SourceWindow, cand: np.ndarray, region: Region) -> Scores:
    """The recolour scores of one region (module docstring of `edit_check`): the colour checks on the
    pixels that carried the old colour (hit, left), what the mask missed (missed), how far lightness moved
    (lift), and the traces of how it was painted (specks, boxy, clipped, noise)."""
    from hardneg.core.colors import colour_name, in_range, lch, read_colours, to_lab
    from hardneg.core.pixels import recolour as dye
    from hardneg.core.pixels.evidence import colour_word

    new, old = region.new, region.old
    assert new is not None and old is not None and sw.lab is not None and sw.carry is not None
    carry, mask, frame = sw.carry, sw.mask, sw.frame
    if not carry.any():
        return {"mask_trust": 0.0}
    cand_lab = to_lab(cand)
    target, parts = colour_word(new), colour_word(old)
    assert target is not None and parts is not None
    after = read_colours(cand, carry)
    own = set().union(*(p.terms for p in parts)) - target[0].terms - target[0].near
    out: Scores = {
        "mask_trust": 1.0 if sw.trusted else 0.0,
        "recolor_hit": after.share(target[0].terms) if after.pixels else 0.0,
        "recolor_left": read_colours(cand, mask).share(own),
        "recolor_missed": dye.like_around(sw.rgb, cand, mask, carry, old, frame.box),
        "recolor_lift": float(abs(np.median(lch(cand_lab[carry])[0] - lch(sw.lab[carry])[0]))),
        "recolor_clipped": float((sw.rgb[carry].max(axis=1) >= CLIPPED_LEVEL).mean()),
        "recolor_noise": noise_ratio(sw.rgb, cand, carry),
    }
    table_new = colour_name(new)
    if table_new is not None:
        hit = in_range(cand_lab, table_new) & carry
        out["recolor_specks"] = speck_share(sw.lab, cand_lab, hit, carry, table_new, frame)
        out["recolor_boxy"] = boxy_share(sw.lab, cand_lab, table_new, frame)
    return out


def remnant_score(sw: SourceWindow, cand: np.ndarray) -> float:
    """`remnant` (module docstring of `edit_check`): the box's pixels the removal left unchanged that have
    the object's colours and not the surroundings', over the object's mask: the rest of the object, where
    the mask missed it."""
    from hardneg.core.pixels.recolour import like

    frame = sw.frame
    changed = changed_area(sw.rgb, cand, frame)
    box = rect_mask(sw.rgb.shape[:2], frame.box)
    ring = ~rect_mask(sw.rgb.shape[:2], frame.grown)
    rest = box & ~changed & ~sw.mask
    if not sw.mask.any() or not rest.any():
        return 0.0
    objectish = like(sw.rgb, rest, sw.mask) & ~like(sw.rgb, rest, ring)
    return float(objectish.sum() / sw.mask.sum())


def speck_share(
    src_lab: np.ndarray, cand_lab: np.ndarray, hit: np.ndarray, members: np.ndarray, new: str, frame: Frame
) -> float:
    """`recolor_specks` (module docstring): new colour scattered in specks around the object, or old colour
    left in specks all over it (glitter), whichever is worse."""
    from hardneg.core.colors import in_range

    bx0, by0, bx1, by1 = frame.box
    small = max(DOT_MIN_PX, DOT_FRACTION * (bx1 - bx0) * (by1 - by0))
    newly = in_range(cand_lab, new) & ~in_range(src_lab, new) & rect_mask(src_lab.shape[:2], frame.grown)
    scattered = _small_parts(newly, small) / max(1, int(newly.sum()))
    glitter = _small_parts(members & ~hit, GLITTER_PX) / max(1, int(members.sum()))
    return float(max(scattered, glitter))


def noise_ratio(src: np.ndarray, cand: np.ndarray, members: np.ndarray) -> float:
    """`recolor_noise` (module docstring): the object's fine detail after the recolour over before."""
    before = float(local_texture(src)[members].mean())
    after = float(local_texture(cand)[members].mean())
    return after / max(before, NOISE_FLOOR)


def boxy_share(src_lab: np.ndarray, cand_lab: np.ndarray, new: str, frame: Frame) -> float:
    """`recolor_boxy` (module docstring): how much of the box's own outline turned the new colour."""
    from hardneg.core.colors import in_range

    newly = in_range(cand_lab, new) & ~in_range(src_lab, new)
    x0, y0, x1, y1 = frame.box
    b = BOXY_BAND_PX
    sides = (newly[y0 : y0 + b, x0:x1], newly[y1 - b : y1, x0:x1], newly[y0:y1, x0 : x0 + b], newly[y0:y1, x1 - b : x1])
    return float(np.mean([side.mean() for side in sides]))


def _small_parts(mask: np.ndarray, small: float) -> int:
    """Pixels of `mask` in 8-connected parts smaller than `small` pixels."""
    import cv2

    if not mask.any():
        return 0
    count, _, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    areas = stats[1:count, cv2.CC_STAT_AREA]
    return int(areas[areas < small].sum())


def trace_score(
    src_grad: tuple[np.ndarray, np.ndarray], cand_grad: tuple[np.ndarray, np.ndarray], obj: np.ndarray
) -> float:
    """`trace` (module docstring): the share of the object's strong source edges still in the candidate."""
    sx, sy = src_grad
    cx, cy = cand_grad
    mag = np.hypot(sx, sy)
    if obj.sum() < TRACE_MIN_PIXELS:
        return 0.0
    level = max(TRACE_MIN_EDGE, float(np.percentile(mag[obj], 75)))
    strong = obj & (mag >= level)
    if strong.sum() < TRACE_MIN_PIXELS:
        return 0.0
    ux, uy = sx[strong] / mag[strong], sy[strong] / mag[strong]
    along = cx[strong] * ux + cy[strong] * uy  # the candidate's gradient along the source's direction
    across = np.abs(cx[strong] * uy - cy[strong] * ux)
    persists = (along >= TRACE_CONTRAST * mag[strong]) & (across <= np.tan(np.radians(TRACE_ANGLE_DEG)) * along)
    return float(persists.mean())


def local_texture(rgb: np.ndarray) -> np.ndarray:
    """High-frequency energy around each pixel: the 7x7 mean of |luma - luma blurred by sigma 2| (0..1).
    A smooth shading ramp (what Telea leaves) has none; grain, grass, fabric and print have it."""
    import cv2

    luma = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
    return cv2.blur(np.abs(luma - cv2.GaussianBlur(luma, (0, 0), 2.0)), (7, 7))


def changed_area(src: np.ndarray, cand: np.ndarray, frame: Frame) -> np.ndarray:
    """Pixels inside the dilated box that the edit changed by more than CHANGED_LEVEL, specks opened away."""
    import cv2

    diff = np.abs(cand.astype(np.int16) - src.astype(np.int16)).max(axis=2) > CHANGED_LEVEL
    opened = cv2.morphologyEx(diff.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)).astype(bool)
    return opened & rect_mask(src.shape[:2], frame.grown)


def smear_score(src: np.ndarray, cand: np.ndarray, frame: Frame) -> float:
    """`smear` (module docstring): the share of the changed area much smoother than the untouched ring."""
    changed = changed_area(src, cand, frame)
    ring = ~rect_mask(src.shape[:2], frame.grown)
    if changed.sum() < SMEAR_MIN_PIXELS or ring.sum() < SMEAR_MIN_PIXELS:
        return 0.0
    texture = local_texture(cand)
    reference = float(np.median(texture[ring]))
    if reference < FLAT_RING:
        return 0.0
    return float((texture[changed] < SMEAR_RATIO * reference).mean())


def fill_score(src: np.ndarray, cand: np.ndarray, frame: Frame) -> float:
    """`fill_mismatch` (module docstring): the share of a removal's fill whose colour its surroundings lack."""
    from hardneg.core.colors import to_lab

    changed = changed_area(src, cand, frame)
    ring = ~rect_mask(src.shape[:2], frame.grown)
    if changed.sum() < SMEAR_MIN_PIXELS or ring.sum() < SMEAR_MIN_PIXELS:
        return 0.0
    lab = to_lab(cand)
    usual = np.median(lab[ring], axis=0)
    spread = float(np.median(np.linalg.norm(lab[ring] - usual, axis=1)))
    limit = max(FILL_MIN_DE, FILL_SPREAD * spread)
    return float((np.linalg.norm(lab[changed] - usual, axis=1) > limit).mean())


def _best_run(lines: np.ndarray, run: int) -> float:
    """The strongest straight run along the rows of `lines` (2-D): over every window of `run` consecutive
    values of a row, the window's PASTE_QUANTILE quantile, maximised. A low quantile asks the edge to be
    there along nearly the whole run: a pasted crop's border is; a round object's outline, crossing a
    row for a few pixels or grazing it along its top, is not."""
    if lines.size == 0:
        return 0.0
    run = max(1, min(run, lines.shape[1]))
    windows = np.lib.stride_tricks.sliding_window_view(lines, run, axis=1)
    return float(np.quantile(windows, PASTE_QUANTILE, axis=2).max())


def paste_edge_score(
    src_cgrad: tuple[np.ndarray, np.ndarray], cand_cgrad: tuple[np.ndarray, np.ndarray], frame: Frame
) -> float:
    """`paste_edge` (module docstring): the strongest straight new edge along a row or column of the box."""
    x0, y0, x1, y1 = frame.grown
    bx0, by0, bx1, by1 = frame.box
    (sx, sy), (cx, cy) = src_cgrad, cand_cgrad
    across_rows = np.maximum(0.0, cy - 2.0 * sy)[y0:y1, x0:x1]  # horizontal edges: the gradient points up/down
    across_cols = np.maximum(0.0, cx - 2.0 * sx)[y0:y1, x0:x1]
    rows = _best_run(across_rows, max(PASTE_MIN_RUN, round(PASTE_RUN * (bx1 - bx0))))
    cols = _best_run(across_cols.T, max(PASTE_MIN_RUN, round(PASTE_RUN * (by1 - by0))))
    return max(rows, cols)


@dataclass(slots=True)
class SourceWindow:
    """What one region's checks need of the source alone: computed once per negative, not per candidate."""

    frame: Frame
    rgb: np.ndarray
    mask: np.ndarray  # the object, window-sized bool
    trusted: bool = True  # the mask is the whole object (`core.pixels.whole`; a removal: not a seeded guess)
    carry: np.ndarray | None = None  # recolor: the mask's pixels that carried the old colour, window-sized
    lab: np.ndarray | None = None
    grad: tuple[np.ndarray, np.ndarray] | None = None
    cgrad: tuple[np.ndarray, np.ndarray] | None = None
