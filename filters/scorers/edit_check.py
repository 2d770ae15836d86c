"""Edit checks: does a negative image show the edit its record claims, without a visible artifact?

Model-free, CPU only (numpy, OpenCV, scikit-image). Every other image filter asks "does the candidate look
real?" or "is it close to the source?"; an offline edit can pass both and still be unusable: a white bowl
with a few brown specks is close and real-looking, and still a white bowl. These checks read the source,
the candidate, the edit and its boxes, and measure per edited region (the worst region decides) whether
the change happened and whether it left a trace of how it was made. A flip generates no pixel and scores
`{}`.

Which checks run on a region depends on the edit (`edit_regions`):

- `set_attribute` / `swap_attributes` from a colour word the pixel evidence judges (`core.pixels.evidence.
  colour_word`) to one the dye paints (`core.pixels.recolour.paintable`): the recolour checks
  (`swap_attributes` {"from": [A1, A2]}: region 1 goes A1 -> A2, region 2 A2 -> A1). Other attribute
  edits (material, pattern: only a generative backend makes them) are meant to keep the object's shape:
  only `smear` and `paste_edge` run.
- `rename`, `swap_names`, `remove` (the backend's "replace" and "remove" regions): `trace`, `smear`,
  `paste_edge`, `mask_trust`; a removal also `fill_mismatch` and `remnant`. Keys other than "op", "from"
  and "to" are ignored.
- anything else with boxes (an unknown op, a record without an edit): `smear` and `paste_edge`.

The object's mask is computed here, on the source, never taken from the backend: the whole-object mask of
`core.pixels.whole` (GrabCut inside the box with context around it, and whether it is all of the object).
It depends only on the source and the box, so it is cached across the candidates of one negative (items
sharing `item.id` and the source image).

Scores (the worst region's: the lowest `recolor_hit` and `mask_trust`, the highest of the rest):

`mask_trust`: 1 when the mask is the whole object (`Whole.usable`; for a removal, also not the
    centre-seeded guess), else 0: the edit cannot be verified.

Recolour regions. The object's old-coloured pixels ("members") are the mask's pixels that carry the old
colour (`core.pixels.recolour.members`: named in its terms, shading-robust, and the mask's pixels of like
colour).

`recolor_hit` (higher is better): the share of the members the candidate names in the new colour's terms
    (`core.colors.read_colours`).
`recolor_left` (lower is better): the share of the whole mask the candidate still names in the old
    colour's own terms (not the new colour's, nor its neighbours).
`recolor_missed`: the share of the pixels just around the mask, inside the box, that keep the source's
    old-coloured pixels' colours in the candidate, with no edge between them and the object's pixels beside
    them (`recolour.like_around`): a part of the object the mask left out, which kept the old colour.
`recolor_lift`: the median change of the members' CIELAB lightness: a recolour that lightens or darkens
    the object as a whole glows like a cut-out.
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
`remnant` (remove only): the box's pixels the removal left unchanged, outside the mask, in the object's
    colours and not its surroundings', over the mask's size: the rest of the object where the mask missed it
    (a straw's lower half).
`paste_edge`: the strongest straight, axis-aligned new edge inside the dilated box. New edge strength per
    direction, as in `filters/scorers/seam.py`: `max(0, G_c - 2 G_o)`, with G the absolute Sobel derivative across
    the line (d/dy for rows, d/dx for columns), maximum over RGB channels, in step units (a unit step reads
    1). For every row of the dilated box, every window of `PASTE_RUN` of the box's width (at least
    `PASTE_MIN_RUN` px) is valued at its `PASTE_QUANTILE` quantile (the edge must be there along three
    quarters of the run); the score is the best window over all rows and, likewise, all columns. The
    backend fits a donor crop to the box one way, so a pasted rectangle's border runs the full box side; a
    round object's outline grazes a row for a few pixels only.

Thresholds (`EditThresholds`; `hardneg split` may change them without re-scoring):

    min_mask_trust      1     the verifier's own mask is the whole object (a removal's: not a seeded guess)
    min_recolor_hit     0.95  of the old colour's pixels, at least 95% now named the new colour
    max_recolor_left    0.02  of the whole mask, at most 2% still named the old colour
    max_recolor_missed  0.3   of the pixels just around the mask, at most 30% keep the object's old colours
    max_recolor_lift    30    the object's lightness moved by at most 30 L (the dye shifts at most 24)
    max_recolor_specks  0.12  at most 12% of the new colour scattered, or of the object glittering
    max_recolor_boxy    0.2   the new colour covers at most 20% of the box's outline
    max_recolor_clipped 0.3   at most 30% of the object blown-out white
    max_recolor_noise   2.0   fine detail at most doubled
    max_remnant         0.2   a removal: the object's colours left in its box, at most 20% of its size
    max_trace           0.3   at most 30% of the original's strong edges survive
    max_smear           0.35  at most 35% of the changed area much smoother than its surroundings
    max_fill_mismatch   0.2   at most 20% of a removal's fill in colours its surroundings lack
    max_paste_edge      0.1   no straight new edge stronger than 0.1 (about 25 grey levels) along a run

The recolour thresholds are chosen from the labelled candidates of `benchmarks/edit_labels.py` (the most
good edits kept at 90% precision or more; docs/image_negatives.md has the table). Before them:
calibration (`benchmarks/edit_check_calibrate.py`, 106 real offline edits of 4 GQA photos, each labelled by
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
    remnant_score,
    smear_score,
    trace_score,
)


class EditOptions(Settings):
    grabcut_iters: int = 5  # GrabCut iterations for the verifier's object mask


class EditThresholds(Settings):
    min_mask_trust: float = 1.0  # 1: the verifier's mask is the whole object (a removal's: not a seeded guess)
    min_recolor_hit: float = 0.95  # share of the old-coloured pixels that must now read as the new colour
    max_recolor_left: float = 0.02  # share of the whole mask that may still read as the old colour
    max_recolor_missed: float = 0.3  # share of the pixels around the mask that may keep the object's old colours
    max_recolor_lift: float = 30.0  # CIELAB L the object may be lightened or darkened by (a glowing cut-out)
    max_remnant: float = 0.2  # a removal: the object's colours left in its box, over the object's size
    max_trace: float = 0.3  # share of the original object's strong edges that may survive
    max_smear: float = 0.35  # share of the changed area that may be much smoother than its surroundings
    max_paste_edge: float = 0.1  # strongest straight new edge inside the box (step units)
    max_recolor_specks: float = 0.12  # share of the new (or left-over) colour that may lie in specks
    max_recolor_boxy: float = 0.2  # mean share of the box's four sides that may turn the new colour
    max_recolor_clipped: float = 0.3  # share of the object that may be blown-out white in the source
    max_recolor_noise: float = 2.0  # the object's fine detail may at most double (JPEG noise amplified)
    max_fill_mismatch: float = 0.2  # share of a removal's fill that may have colours its surroundings lack


def edit_regions(edit: dict[str, Any] | None, boxes: Sequence[Box]) -> list[Region]:
    """The checks each box gets, from the recorded edit (see the module docstring)."""
    from hardneg.core.pixels.evidence import colour_word
    from hardneg.core.pixels.recolour import paintable

    def recolourable(old: Any, new: Any) -> bool:
        return isinstance(old, str) and isinstance(new, str) and bool(paintable(new)) and bool(colour_word(old))

    op = edit.get("op") if isinstance(edit, dict) else None
    if op == "flip" or not boxes:
        return []
    assert edit is None or isinstance(edit, dict)
    if op == "set_attribute":
        old, new = edit.get("from"), edit.get("to")  # type: ignore[union-attr]
        if not recolourable(old, new):
            return [Region(tuple(b), "attribute") for b in boxes]  # type: ignore[arg-type]
        pairs = [(old, new)]
    elif op == "swap_attributes":
        a1, a2 = [*list(edit.get("from") or []), None, None][:2]  # type: ignore[union-attr]
        if not (recolourable(a1, a2) and recolourable(a2, a1)):
            return [Region(tuple(b), "attribute") for b in boxes]  # type: ignore[arg-type]
        pairs = [(a1, a2), (a2, a1)]
    elif op in ("rename", "swap_names", "remove"):
        return [Region(tuple(b), "structure", removal=op == "remove") for b in boxes]  # type: ignore[arg-type]
    else:
        return [Region(tuple(b), "generic") for b in boxes]  # type: ignore[arg-type]
    inside = edit.get("inside") or [] if isinstance(edit, dict) else []
    inside = [*inside, *[[]] * len(boxes)][: len(boxes)]
    return [
        Region(tuple(b), "recolor", str(old).strip().lower(), str(new).strip().lower(), inside=_boxes(on))  # type: ignore[arg-type]
        for b, (old, new), on in zip(boxes, pairs, inside, strict=False)
    ]


def _boxes(value: Any) -> tuple[Box, ...]:
    """The boxes of the objects lying on an edited one (`edit["inside"]`, a list per box); what is not four
    numbers is left out."""
    ok = [b for b in value if isinstance(b, list) and len(b) == 4 and all(isinstance(v, int | float) for v in b)]
    return tuple(tuple(b) for b in ok) if isinstance(value, list) else ()  # type: ignore[misc]


# -- the filter ------------------------------------------------------------------------------------------


def source_window(src: np.ndarray, region: Region, iters: int) -> SourceWindow | None:
    from hardneg.core.colors import to_lab
    from hardneg.core.pixels.recolour import members
    from hardneg.core.pixels.whole import whole_object

    height, width = src.shape[:2]
    frame = frame_of(region.box, width, height)
    if frame is None:
        return None
    whole = whole_object(src, region.box, seed=MASK_SEED, iters=iters, inside=region.inside)
    shape = (frame.window[3] - frame.window[1], frame.window[2] - frame.window[0])
    mask = frame.crop(whole.mask.full(src.shape)) & rect_mask(shape, frame.box)
    rgb = frame.crop(src)
    trusted = whole.usable and (region.kind == "recolor" or whole.seeded is None)
    sw = SourceWindow(frame, rgb, mask, trusted)
    if region.kind == "recolor":
        sw.lab = to_lab(rgb)
        sw.carry = members(rgb, mask, region.old) if region.old else mask  # type: ignore[arg-type]
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
        out["mask_trust"] = 1.0 if sw.trusted else 0.0
    if region.removal:
        out["fill_mismatch"] = fill_score(sw.rgb, cand, sw.frame)
        out["remnant"] = remnant_score(sw, cand)
    return out


WORST = {
    "mask_trust": min,
    "recolor_missed": max,
    "recolor_lift": max,
    "remnant": max,
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

    version = "edits@v4"  # v3: what the mask missed is judged by the edge at its outline; v4: objects on it left out
    targets = frozenset({"image_candidate"})
    Options = EditOptions
    Thresholds = EditThresholds
    legend = (
        ScoreLine("mask_trust", "edit check: 1 when the verifier's own mask is the whole object (a removal's: a real "
                  "outline, not the centre-seeded guess); 0 leaves the edit unverified", "min_mask_trust"),
        ScoreLine("recolor_hit", "edit check: share of the object's old-coloured pixels that now read as the new "
                  "colour; higher is better (at least 0.95)", "min_recolor_hit"),
        ScoreLine("recolor_left", "edit check: share of the whole mask still read as the old colour; at most 0.02",
                  "max_recolor_left", "below"),
        ScoreLine("recolor_specks", "edit check: share of the new colour scattered in specks or glitter; at most 0.12",
                  "max_recolor_specks", "below"),
        ScoreLine("recolor_boxy", "edit check: share of the box outline painted the new colour (a rectangle); at most "
                  "0.2", "max_recolor_boxy", "below"),
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
        ScoreLine("recolor_missed", "edit check: share of the pixels around the object that keep its old colours (a "
                  "part the mask missed); at most 0.3", "max_recolor_missed", "below"),
        ScoreLine("recolor_lift", "edit check: how far the object's lightness moved (CIELAB L); at most 30",
                  "max_recolor_lift", "below"),
        ScoreLine("remnant", "edit check: the object's colours a removal left in its box, over its size; at most 0.2",
                  "max_remnant", "below"),
        ScoreLine("recolor_", "edit check of a recolour (see the other recolor_ lines)"),
    )  # fmt: skip

    def score(self, items: Sequence[Item]) -> list[Scores]:
        cache: dict[tuple[int, int, Box], SourceWindow | None] = {}  # (negative, source, box): source-only work
        out: list[Scores] = []
        for it in items:
            regions = edit_regions(it.record.edit, it.boxes)  # type: ignore[union-attr]  # an image candidate's
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
        trust = scores.get("mask_trust")
        if trust is not None and trust < t.min_mask_trust:
            reasons.append("mask: the object's mask is not the whole object (or only a guess): the edit is unverified")
        hit = scores.get("recolor_hit")
        if hit is not None and hit < t.min_recolor_hit:
            reasons.append(
                f"recolour: {hit:.0%} of the object's pixels now have the new colour (needs {t.min_recolor_hit:.0%})"
            )
        reasons += [msg.format(v=v, t=getattr(t, limit)) for key, limit, msg in _MAX_RULES
                    if (v := scores.get(key)) is not None and v > getattr(t, limit)]  # fmt: skip
        return (False, "; ".join(reasons)) if reasons else (True, None)


# A score above its threshold, and what the reason says: (score, threshold, message with {v} and {t}).
_MAX_RULES = (
    (
        "recolor_left",
        "max_recolor_left",
        "recolour: {v:.0%} of the object's pixels still have the old colour (at most {t:.0%})",
    ),
    (
        "recolor_missed",
        "max_recolor_missed",
        "recolour: {v:.0%} of the pixels around the object still have its old "
        "colours (at most {t:.0%}): part of it was missed",
    ),
    (
        "recolor_lift",
        "max_recolor_lift",
        "recolour: its lightness moved by {v:.0f} (at most {t:.0f}): a painted cut-out",
    ),
    ("remnant", "max_remnant", "removal: {v:.0%} of the object's size is left in its box, untouched (at most {t:.0%})"),
    (
        "recolor_specks",
        "max_recolor_specks",
        "recolour: {v:.0%} of the newly coloured pixels are scattered specks (at most {t:.0%})",
    ),
    (
        "recolor_boxy",
        "max_recolor_boxy",
        "recolour: the new colour fills {v:.0%} of the box's outline, a box-shaped patch (at most {t:.0%})",
    ),
    (
        "recolor_clipped",
        "max_recolor_clipped",
        "recolour: {v:.0%} of the object is blown-out white, which recolours to a flat panel (at most {t:.0%})",
    ),
    (
        "recolor_noise",
        "max_recolor_noise",
        "recolour: the object's fine detail grew {v:.1f}x, noise turned to glitter (at most {t:.1f}x)",
    ),
    ("trace", "max_trace", "trace: {v:.0%} of the original object's strong edges survive (at most {t:.0%})"),
    (
        "smear",
        "max_smear",
        "smear: {v:.0%} of the changed area is much smoother than its surroundings (at most {t:.0%})",
    ),
    (
        "fill_mismatch",
        "max_fill_mismatch",
        "removal fill: {v:.0%} of it has colours its surroundings lack (at most {t:.0%})",
    ),
    (
        "paste_edge",
        "max_paste_edge",
        "pasted rectangle: a straight new edge of strength {v:.2f} inside the box (at most {t:.2f})",
    ),
)
