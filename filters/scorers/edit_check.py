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
    direction, as in `filters/scorers/seam.py`: `max(0, G_c - 2 G_o)`, with G the absolute Sobel derivative across
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
0.33-0.74; raw rectangle pastes: paste_edge 0.17-0.65. 18 of 106 pass the filter: 15 good; 3 artifacts,
2 replacements whose donor hides only part of the removed object (the backend now refuses those before
painting) and a glass removed without its stem, which its box leaves out (0 on every score: no check
here sees a remainder outside the box); 1 good recolour rejected (a napkin filling its box: boxy 0.84).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Box, Filter, Item, ScoreLine, Scores, Settings, check_same_size
from hardneg.filters.scorers.edit_pixels import (
    ERODE_PX,
    MASK_SEED,
    Region,
    SourceWindow,
    colour_gradient,
    fill_score,
    frame_of,
    luma_gradient,
    paste_edge_score,
    recolour_scores,
    rect_mask,
    smear_score,
    trace_score,
)


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


# -- the filter ------------------------------------------------------------------------------------------


def source_window(src: np.ndarray, region: Region, iters: int) -> SourceWindow | None:
    from hardneg.backends.object_masks import object_mask
    from hardneg.core.colors import to_lab

    height, width = src.shape[:2]
    frame = frame_of(region.box, width, height)
    if frame is None:
        return None
    mask = frame.crop(object_mask(src, region.box, MASK_SEED, iters)) & rect_mask(
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


@FILTERS.add("edits", order=70)
class EditCheckFilter(Filter):
    """Whether each candidate shows its edit without a visible artifact; see the module docstring."""

    version = "edits@v1"
    targets = frozenset({"image_candidate"})
    Options = EditOptions
    Thresholds = EditThresholds
    legend = (
        ScoreLine("recolor_hit", "edit check: share of the object's old-coloured pixels now in the new colour; higher "
                  "is better (at least 0.5)", "min_recolor_hit"),
        ScoreLine("recolor_left", "edit check: share still in the old colour; lower is better (at most 0.3)",
                  "max_recolor_left", "below"),
        ScoreLine("recolor_specks", "edit check: share of the new colour scattered in specks or glitter; at most 0.12",
                  "max_recolor_specks", "below"),
        ScoreLine("recolor_boxy", "edit check: share of the box outline painted the new colour (a rectangle); at most "
                  "0.6", "max_recolor_boxy", "below"),
        ScoreLine("recolor_clipped", "edit check: share of the object blown-out white in the source; at most 0.3",
                  "max_recolor_clipped", "below"),
        ScoreLine("recolor_noise", "edit check: fine detail after the recolour over before (1 = unchanged); at most 2",
                  "max_recolor_noise", "below"),
        ScoreLine("smear", "edit check: share of the changed area much smoother than its surroundings; at most 0.35",
                  "max_smear", "below"),
        ScoreLine("paste_edge", "edit check: strongest straight new edge inside the box (a pasted rectangle); at most "
                  "0.1", "max_paste_edge", "below"),
        ScoreLine("trace", "edit check: share of the original object's strong edges that survive a replacement; at "
                  "most 0.3", "max_trace", "below"),
        ScoreLine("fill_mismatch", "edit check: share of a removal's fill in colours its surroundings lack; at most "
                  "0.2", "max_fill_mismatch", "below"),
        ScoreLine("recolor_", "edit check of a recolour (see the other recolor_ lines)"),
    )  # fmt: skip

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
