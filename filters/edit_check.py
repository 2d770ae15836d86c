"""Edit checks: does a negative image show the edit its record claims, without a visible artifact?

Model-free, CPU only (numpy, OpenCV, scikit-image). Every other image filter asks "does the candidate look
real?" or "is it close to the source?"; an offline edit can pass both and still be unusable: a white bowl
with a few brown specks is close and real-looking, and still a white bowl. These checks read the source,
the candidate, the edit and its boxes, and measure per edited region (the worst region decides) whether
the change happened and whether it left a trace of how it was made. A flip generates no pixel and scores
`{}`.

Which checks run on a region depends on the edit (`edit_regions`):

- `set_attribute` / `swap_attributes` between two names of the colour table (`core/colors.py`): the
  recolour checks (`swap_attributes` {"from": [A1, A2]}: region 1 goes A1 -> A2, region 2 A2 -> A1).
  Other attribute edits (material, pattern: only a generative backend makes them) are meant to keep the
  object's shape: only `smear` and `paste_edge` run.
- `rename`, `swap_names`, `remove` (the backend's "replace" and "remove" regions): `trace`, `smear`,
  `paste_edge`; a removal also `fill_mismatch`. Keys other than "op", "from" and "to" are ignored.
- anything else with boxes (an unknown op, a record without an edit): `smear` and `paste_edge`.

The object's mask is computed here, on the source, never taken from the backend: GrabCut inside the box
with context around it, holes filled, the whole box when GrabCut finds nothing
(`backends.object_masks.object_mask`). It depends only on the source and the box, so it is cached across
the candidates of one negative (items sharing `item.id` and the source image).

Scores (the worst region's: the lowest `recolor_hit`, the highest of the rest):

Recolour regions. The object's old-coloured pixels ("members") are the mask's pixels whose *source* colour
is in the old colour's range (`core.colors.in_range`); when they are fewer than 10% of the mask, or the
old colour is not in the table, the mask's dominant-hue core (`_colour_core`) instead.

`recolor_hit` (higher is better): the share of the members whose *candidate* colour is in the new colour's
    range and nearer the new reference than the old (`core.colors.closer`).
`recolor_left` (lower is better): the share of the members still in the old colour's range and nearer the
    old reference. Absent when the old colour is not in the table.
`recolor_specks`: the worse of (a) the share of the newly coloured pixels of the dilated box (new colour
    in the candidate, not in the source) lying in 8-connected parts smaller than 0.2% of the box (at least
    `DOT_MIN_PX`): colour sprinkled on the background; (b) the share of the members left unchanged in
    parts of fewer than `GLITTER_PX` pixels: glitter.
`recolor_boxy`: the mean over the box's four sides of the share of a `BOXY_BAND_PX` band just inside that
    side that turned the new colour. An object touches its box in a few places; a recolour that fills
    the box (GrabCut failed and the backend fell back to the box) paints a coloured rectangle.
`recolor_clipped`: the share of the members that are blown-out in the source (a channel >= 250). A
    clipped highlight (an overexposed window) has no shading to keep: it recolours to a flat panel.
`recolor_noise`: the members' fine detail (`local_texture`) in the candidate over the source's (the source's
    at least `NOISE_FLOOR`). Recolouring a near-white object amplifies JPEG noise into glitter (4.4x); a
    clean recolour keeps 0.6-1.4x.

Structure regions (rename, swap_names, remove) and other regions:

`trace` (structure only): how much of the original object's structure survives inside its box. On the
    mask eroded by `ERODE_PX`, the source's strong edges are the pixels whose luma gradient (Sobel on the
    luma blurred by sigma 1, in step units) is in the mask's top quarter and at least `TRACE_MIN_EDGE`.
    A strong edge persists when the candidate's gradient there, projected on the source gradient's
    direction, is at least `TRACE_CONTRAST` of the source's magnitude and points within `TRACE_ANGLE_DEG`
    of it. `trace` = persisting / strong (0 when the object has fewer than `TRACE_MIN_PIXELS` strong
    edges: nothing to trace). An untouched object scores 1, a ghost faded to half 0.9, wheels a
    replacement left behind about 0.5; a clean removal or an unrelated donor 0-0.15 (chance alignment).
`smear`: texture loss where the object was. The changed area is where the candidate differs from the
    source by more than `CHANGED_LEVEL` grey levels in some channel (opened 3x3), inside the box dilated
    by `DILATE_PX`. Local texture is the 7x7 mean of |luma - luma blurred by sigma 2| (high-frequency
    energy; a smooth ramp has none). The reference is its median over the untouched ring around the
    dilated box (`RING_FRACTION` of the box's larger side, at least `RING_MIN_PX`). `smear` = the share of
    the changed area whose local texture is below `SMEAR_RATIO` of the ring's; 0 when the ring itself is
    flat (below `FLAT_RING`: a smooth fill on a plain wall is what the wall looks like) or fewer than
    `SMEAR_MIN_PIXELS` pixels changed.
`fill_mismatch` (remove only): the share of the changed area whose LAB colour is farther from the ring's
    median colour than max(`FILL_MIN_DE`, `FILL_SPREAD` x the ring's median distance to it): the dark
    streaks Telea drags from a missed outline into a plain tablecloth.
`paste_edge`: the strongest straight, axis-aligned new edge inside the dilated box. New edge strength per
    direction, as in `filters/seam.py`: `max(0, G_c - 2 G_o)`, with G the absolute Sobel derivative across
    the line (d/dy for rows, d/dx for columns), maximum over RGB channels, in step units (a unit step reads
    1). For every row of the dilated box, every window of `PASTE_RUN` of the box's width (at least
    `PASTE_MIN_RUN` px) is valued at its `PASTE_QUANTILE` quantile (the edge must be there along three
    quarters of the run); the score is the best window over all rows and, likewise, all columns. The
    backend fits a donor crop to the box one way, so a pasted rectangle's border runs the full box side; a
    round object's outline grazes a row for a few pixels only.

Thresholds (`EditThresholds`; `hardneg split` may change them without re-scoring):

    min_recolor_hit     0.5   at least half the old-coloured pixels now show the new colour
    max_recolor_left    0.3   at most 30% still show the old one (specks on a white bowl leave ~90%)
    max_recolor_specks  0.12  at most 12% of the new colour scattered, or of the object glittering
    max_recolor_boxy    0.6   the new colour covers at most 60% of the box's outline
    max_recolor_clipped 0.3   at most 30% of the object blown-out white
    max_recolor_noise   2.0   fine detail at most doubled
    max_trace           0.3   at most 30% of the original's strong edges survive
    max_smear           0.35  at most 35% of the changed area much smoother than its surroundings
    max_fill_mismatch   0.2   at most 20% of a removal's fill in colours its surroundings lack
    max_paste_edge      0.1   no straight new edge stronger than 0.1 (about 25 grey levels) along a run

Calibration (`benchmarks/edit_check_calibrate.py`, 106 real offline edits of 4 GQA photos, each labelled by
eye; docs/image_checks.md has the table). Convincing recolours: hit >= 0.81, left <= 0.19, specks <= 0.09,
boxy <= 0.21, clipped <= 0.01, noise 0.6-1.2. Artifacts: partial recolours hit 0.28-0.51 / left >= 0.49;
box-shaped recolours boxy 0.76-0.99; overexposed windows clipped 0.77-0.86; napkin glitter noise 4.4.
Telea blobs in grass, foliage, gravel and crowds: smear 0.44-0.93; streaks on a tablecloth: fill
0.33-0.74; raw rectangle pastes: paste_edge 0.17-0.65; the one clean removal (a glass on a tablecloth)
scored 0 on all. 18 of 106 pass: 16 good, 2 artifacts (replacements whose donor covers only part of the
Telea fill); 1 good recolour rejected (a napkin filling its box: boxy 0.84).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hardneg.filters.base import Box, Filter, Item, Scores, Settings, check_same_size

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


class EditOptions(Settings):
    grabcut_iters: int = 5  # GrabCut iterations for the verifier's object mask


class EditThresholds(Settings):
    min_recolor_hit: float = 0.5  # share of the old-coloured pixels that must now show the new colour
    max_recolor_left: float = 0.3  # share that may still show the old colour
    max_trace: float = 0.3  # share of the original object's strong edges that may survive
    max_smear: float = 0.35  # share of the changed area that may be much smoother than its surroundings
    max_paste_edge: float = 0.1  # strongest straight new edge inside the box (step units)
    max_recolor_specks: float = 0.12  # share of the new (or left-over) colour that may lie in specks
    max_recolor_boxy: float = 0.6  # mean share of the box's four sides that may turn the new colour
    max_recolor_clipped: float = 0.3  # share of the object that may be blown-out white in the source
    max_recolor_noise: float = 2.0  # the object's fine detail may at most double (JPEG noise amplified)
    max_fill_mismatch: float = 0.2  # share of a removal's fill that may have colours its surroundings lack


@dataclass(frozen=True, slots=True)
class Region:
    """One edited box and what should have happened in it."""

    box: Box
    kind: RegionKind
    old: str | None = None  # recolor: the colour the object had (a COLORS key), when known
    new: str | None = None  # recolor: the colour it should have now
    removal: bool = False  # the object should be gone, its place filled with its surroundings


def edit_regions(edit: dict[str, Any] | None, boxes: Sequence[Box]) -> list[Region]:
    """The checks each box gets, from the recorded edit (see the module docstring)."""
    from hardneg.core.colors import colour_name

    op = edit.get("op") if isinstance(edit, dict) else None
    if op == "flip" or not boxes:
        return []
    if op == "set_attribute" and colour_name(edit.get("to")):  # type: ignore[union-attr]
        pairs = [(edit.get("from"), edit.get("to"))]  # type: ignore[union-attr]
    elif op == "swap_attributes":
        a1, a2 = [*list(edit.get("from") or []), None, None][:2]  # type: ignore[union-attr]
        pairs = [(a1, a2), (a2, a1)] if colour_name(a1) and colour_name(a2) else []
        if not pairs:
            return [Region(tuple(b), "attribute") for b in boxes]  # type: ignore[arg-type]
    elif op == "set_attribute":
        return [Region(tuple(b), "attribute") for b in boxes]  # type: ignore[arg-type]
    elif op in ("rename", "swap_names", "remove"):
        return [Region(tuple(b), "structure", removal=op == "remove") for b in boxes]  # type: ignore[arg-type]
    else:
        return [Region(tuple(b), "generic") for b in boxes]  # type: ignore[arg-type]
    return [
        Region(tuple(b), "recolor", colour_name(old), colour_name(new))  # type: ignore[arg-type]
        for b, (old, new) in zip(boxes, pairs, strict=False)
    ]


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


def _rect_mask(shape: tuple[int, int], rect: tuple[int, int, int, int]) -> np.ndarray:
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
    (a unit step reads 1, as in `filters.seam.color_gradient`): the maximum over channels sees an edge
    between regions of equal brightness but different hue."""
    import cv2

    arr = np.ascontiguousarray(rgb, dtype=np.float32) / 255.0
    gx = np.abs(cv2.Sobel(arr, cv2.CV_32F, 1, 0, ksize=3)).max(axis=2) / 4.0
    gy = np.abs(cv2.Sobel(arr, cv2.CV_32F, 0, 1, ksize=3)).max(axis=2) / 4.0
    return gx, gy


def recolour_scores(sw: SourceWindow, cand: np.ndarray, region: Region) -> Scores:
    """`recolor_hit`, `recolor_left` and `recolor_specks` of one region (module docstring)."""
    from hardneg.backends.inpaint_opencv import _colour_core
    from hardneg.core.colors import COLORS, closer, in_range, to_lab

    new, old = region.new, region.old
    assert new is not None and sw.lab is not None
    src_lab, cand_lab, mask, frame = sw.lab, to_lab(cand), sw.mask, sw.frame
    members = mask & in_range(src_lab, old) if old else np.zeros_like(mask)
    if members.sum() < max(1, MIN_CORE_FRACTION * mask.sum()):
        members = _colour_core(src_lab, mask, COLORS[old] if old else None)
    if not members.any():
        return {}
    hit = in_range(cand_lab, new) & members
    if old is not None:
        hit &= closer(cand_lab, new, old)
    out = {
        "recolor_hit": float(hit.sum() / members.sum()),
        "recolor_specks": speck_share(src_lab, cand_lab, hit, members, new, frame),
        "recolor_boxy": boxy_share(src_lab, cand_lab, new, frame),
        "recolor_clipped": float((sw.rgb[members].max(axis=1) >= CLIPPED_LEVEL).mean()),
        "recolor_noise": noise_ratio(sw.rgb, cand, members),
    }
    if old is not None:
        left = members & in_range(cand_lab, old) & ~closer(cand_lab, new, old)
        out["recolor_left"] = float(left.sum() / members.sum())
    return out


def speck_share(
    src_lab: np.ndarray, cand_lab: np.ndarray, hit: np.ndarray, members: np.ndarray, new: str, frame: Frame
) -> float:
    """`recolor_specks` (module docstring): new colour scattered in specks around the object, or old colour
    left in specks all over it (glitter), whichever is worse."""
    from hardneg.core.colors import in_range

    bx0, by0, bx1, by1 = frame.box
    small = max(DOT_MIN_PX, DOT_FRACTION * (bx1 - bx0) * (by1 - by0))
    newly = in_range(cand_lab, new) & ~in_range(src_lab, new) & _rect_mask(src_lab.shape[:2], frame.grown)
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
    return opened & _rect_mask(src.shape[:2], frame.grown)


def smear_score(src: np.ndarray, cand: np.ndarray, frame: Frame) -> float:
    """`smear` (module docstring): the share of the changed area much smoother than the untouched ring."""
    changed = changed_area(src, cand, frame)
    ring = ~_rect_mask(src.shape[:2], frame.grown)
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
    ring = ~_rect_mask(src.shape[:2], frame.grown)
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


# -- the filter ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SourceWindow:
    """What one region's checks need of the source alone: computed once per negative, not per candidate."""

    frame: Frame
    rgb: np.ndarray
    mask: np.ndarray  # the object, window-sized bool
    lab: np.ndarray | None = None
    grad: tuple[np.ndarray, np.ndarray] | None = None
    cgrad: tuple[np.ndarray, np.ndarray] | None = None


def source_window(src: np.ndarray, region: Region, iters: int) -> SourceWindow | None:
    from hardneg.backends.object_masks import object_mask
    from hardneg.core.colors import to_lab

    height, width = src.shape[:2]
    frame = frame_of(region.box, width, height)
    if frame is None:
        return None
    mask = frame.crop(object_mask(src, region.box, MASK_SEED, iters)) & _rect_mask(
        (frame.window[3] - frame.window[1], frame.window[2] - frame.window[0]), frame.box
    )
    rgb = frame.crop(src)
    sw = SourceWindow(frame, rgb, mask)
    if region.kind == "recolor":
        sw.lab = to_lab(rgb)
    else:
        sw.grad = luma_gradient(rgb)
        sw.cgrad = colour_gradient(rgb)
    return sw


def region_scores(sw: SourceWindow, cand_full: np.ndarray, region: Region) -> Scores:
    """All of one region's scores for one candidate."""
    from hardneg.backends.inpaint_opencv import _morph

    cand = sw.frame.crop(cand_full)
    if region.kind == "recolor":
        return recolour_scores(sw, cand, region)
    out: Scores = {
        "smear": smear_score(sw.rgb, cand, sw.frame),
        "paste_edge": paste_edge_score(sw.cgrad, colour_gradient(cand), sw.frame),  # type: ignore[arg-type]
    }
    if region.kind == "structure":
        out["trace"] = trace_score(sw.grad, luma_gradient(cand), _morph(sw.mask, -ERODE_PX))  # type: ignore[arg-type]
    if region.removal:
        out["fill_mismatch"] = fill_score(sw.rgb, cand, sw.frame)
    return out


WORST = {
    "recolor_hit": min,
    "recolor_left": max,
    "recolor_specks": max,
    "recolor_boxy": max,
    "recolor_clipped": max,
    "recolor_noise": max,
    "trace": max,
    "smear": max,
    "fill_mismatch": max,
    "paste_edge": max,
}


def worst(per_region: Sequence[Scores]) -> Scores:
    """The worst value of each score over the regions (the lowest hit, the highest of the rest)."""
    out: Scores = {}
    for scores in per_region:
        for k, v in scores.items():
            out[k] = WORST[k](out[k], v) if k in out else v
    return out


class EditCheckFilter(Filter):
    """Whether each candidate shows its edit without a visible artifact; see the module docstring."""

    name = "edits"
    version = "edits@v1"
    targets = frozenset({"image_candidate"})
    Options = EditOptions
    Thresholds = EditThresholds

    def score(self, items: Sequence[Item]) -> list[Scores]:
        cache: dict[tuple[int, int, Box], SourceWindow | None] = {}  # (negative, source, box): source-only work
        out: list[Scores] = []
        for it in items:
            regions = edit_regions(it.record.get("edit"), it.boxes)
            if not regions or it.image is None or it.candidate is None:
                out.append({})
                continue
            check_same_size(it.image, it.candidate, "edits")
            src = cand = None
            per_region = []
            for region in regions:
                key = (it.id, id(it.image), region.box)
                if key not in cache:
                    src = np.asarray(it.image.convert("RGB")) if src is None else src
                    cache[key] = source_window(src, region, self.options.grabcut_iters)  # type: ignore[attr-defined]
                sw = cache[key]
                if sw is None:
                    continue
                cand = np.asarray(it.candidate.convert("RGB")) if cand is None else cand
                per_region.append(region_scores(sw, cand, region))
            out.append(worst(per_region))
        return out

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        t: Any = thresholds
        reasons = []
        hit, left = scores.get("recolor_hit"), scores.get("recolor_left")
        if hit is not None and hit < t.min_recolor_hit:
            reasons.append(
                f"recolour: {hit:.0%} of the object's pixels now have the new colour (needs {t.min_recolor_hit:.0%})"
            )
        if left is not None and left > t.max_recolor_left:
            reasons.append(
                f"recolour: {left:.0%} of the object's pixels still have the old colour "
                f"(at most {t.max_recolor_left:.0%})"
            )
        specks = scores.get("recolor_specks")
        if specks is not None and specks > t.max_recolor_specks:
            reasons.append(
                f"recolour: {specks:.0%} of the newly coloured pixels are scattered specks "
                f"(at most {t.max_recolor_specks:.0%})"
            )
        boxy = scores.get("recolor_boxy")
        if boxy is not None and boxy > t.max_recolor_boxy:
            reasons.append(
                f"recolour: the new colour fills {boxy:.0%} of the box's outline, a box-shaped patch "
                f"(at most {t.max_recolor_boxy:.0%})"
            )
        clipped = scores.get("recolor_clipped")
        if clipped is not None and clipped > t.max_recolor_clipped:
            reasons.append(
                f"recolour: {clipped:.0%} of the object is blown-out white, which recolours to a flat panel "
                f"(at most {t.max_recolor_clipped:.0%})"
            )
        noise = scores.get("recolor_noise")
        if noise is not None and noise > t.max_recolor_noise:
            reasons.append(
                f"recolour: the object's fine detail grew {noise:.1f}x, noise turned to glitter "
                f"(at most {t.max_recolor_noise:.1f}x)"
            )
        trace = scores.get("trace")
        if trace is not None and trace > t.max_trace:
            reasons.append(
                f"trace: {trace:.0%} of the original object's strong edges survive (at most {t.max_trace:.0%})"
            )
        smear = scores.get("smear")
        if smear is not None and smear > t.max_smear:
            reasons.append(
                f"smear: {smear:.0%} of the changed area is much smoother than its surroundings "
                f"(at most {t.max_smear:.0%})"
            )
        fill = scores.get("fill_mismatch")
        if fill is not None and fill > t.max_fill_mismatch:
            reasons.append(
                f"removal fill: {fill:.0%} of it has colours its surroundings lack (at most {t.max_fill_mismatch:.0%})"
            )
        paste = scores.get("paste_edge")
        if paste is not None and paste > t.max_paste_edge:
            reasons.append(
                f"pasted rectangle: a straight new edge of strength {paste:.2f} inside the box "
                f"(at most {t.max_paste_edge:.2f})"
            )
        return (False, "; ".join(reasons)) if reasons else (True, None)
