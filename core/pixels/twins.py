"""Twins the graph missed: another region of the photo that looks like the target, at its scale.

A positive is unique among the *annotated* objects of its name. A second identical oven, the next trailer
of a road train, a faucet's reflection in a mirror, the other shoe: the photo shows them, the graph does
not. `find_twin(rgb, box, explained)` searches the photo for the region most like the target's box,
outside the target and outside every box in `explained` (the annotated objects that could carry the
target's name: the graph already accounts for those), and says how alike it is.

How (classical, no weights; OpenCV is imported when a search runs):
1. **Coarse search.** The target's lightness (CIELAB L) is shrunk to `COARSE_SIDE` px on its longer side and
   matched by normalised cross-correlation against the whole photo shrunk by the same factor, at the
   target's scale and at `SCALES` of it (a twin a little nearer or farther), as it is and mirrored left to
   right (a reflection). The best few peaks of each map that lie outside the target and the explained
   boxes are kept.
2. **Refinement.** Each peak is matched again at `FINE_SIDE` px within a margin of its place: the coarse
   grid cannot align two copies of one object to the pixel, the fine one can (an exact copy reads 0.93,
   where the coarse one reads 0.8).
3. **Colour.** Correlation ignores colour (a red and a white car of one model correlate), so the peak's
   chromaticity histogram (CIELAB a, b) is compared with the target's (histogram intersection, 1 = the
   same colours). Lightness is left to the correlation, so a reflection, darker than its object, still
   matches.

The score is the smaller of the two (structure, colour); `STRONG` and above is a twin (an exact copy, a
mirror image, a darker and smaller copy read 0.75 to 0.93), `POSSIBLE` a lookalike worth a person's look.
On the eight real photos of the tests, the strongest non-twin matches (a keyboard against a shelf, a
headlight against shadow) read 0.75-0.76 and the real unannotated twins (the other shoe, the next tree,
the upper pane of a window, a window's reflection on a polished floor) 0.73-0.85: a single threshold
cannot part them, so `STRONG` is set where the false matches stop.

What it cannot see: a twin in another pose (a second chair turned sideways), lit differently enough to
change its colours, or much nearer or farther (beyond `SCALES`), and a target with too little structure
to correlate (a plain wall: `MIN_CONTRAST`), for which it answers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hardneg.core.pixels.masks import clip_box

COARSE_SIDE = 16  # px: the template's longer side in the coarse search
FINE_SIDE = 32  # px: ... in the refinement
SCALES = (0.8, 1.0, 1.25)  # twin size / target size searched
PEAKS = 3  # peaks kept per map (scale, mirrored or not) outside the target and the explained boxes
MIN_COARSE = 0.5  # a coarse peak below this is not refined
MIN_CONTRAST = 6.0  # std of the coarse template's lightness (0-255): below it, a plain region, not searched
MIN_SIDE = 4  # px: a coarse template thinner than this is too small to search
MIN_BOX_SIDE = 12  # px: a box thinner than this is too small to tell a twin from texture
SELF_OVERLAP = 0.3  # a match whose area lies this much on the target is the target
EXPLAINED_INSIDE = 0.5  # a match this much inside an explained box is that annotated object
REFINE_MARGIN = 0.15  # the refinement searches this share of the match's size around it
AB_BINS = 8  # chromaticity histogram: AB_BINS x AB_BINS over a, b in [64, 192) (OpenCV's 8-bit Lab)
STRONG = 0.8
POSSIBLE = 0.7

Box = tuple[float, float, float, float]  # xywh


@dataclass(frozen=True, slots=True)
class TwinMatch:
    """The region most like the target: its box (xywh, image pixels), the score (the smaller of structure
    and colour), each part, its scale against the target's and whether it is mirrored."""

    box: tuple[int, int, int, int]
    score: float
    structure: float
    colour: float
    scale: float
    mirrored: bool

    @property
    def strong(self) -> bool:
        return self.score >= STRONG

    @property
    def possible(self) -> bool:
        return self.score >= POSSIBLE

    def describe(self) -> str:
        how = "a mirror image" if self.mirrored else "a region"
        x, y, w, h = self.box
        return (
            f"{how} at ({x}, {y}, {w}x{h}) looks like it: {self.score:.2f} (structure {self.structure:.2f}, "
            f"colour {self.colour:.2f}, scale {self.scale:g})"
        )


@dataclass(frozen=True, slots=True)
class TwinSearch:
    """What a search found: the best match (None when nothing came near), or why nothing was searched."""

    best: TwinMatch | None
    skipped: str | None = None


def _overlap(a: Box, b: Box) -> float:
    iw = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    ih = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0.0, iw) * max(0.0, ih)


def _ab_hist(lab: np.ndarray) -> np.ndarray:
    ab = lab[..., 1:].reshape(-1, 2).astype(np.int32)
    idx = np.clip((ab - 64) * AB_BINS // 128, 0, AB_BINS - 1)
    h = np.bincount(idx[:, 0] * AB_BINS + idx[:, 1], minlength=AB_BINS * AB_BINS).astype(np.float64)
    return h / max(1.0, h.sum())


def _shrink(a: np.ndarray, factor: float) -> np.ndarray:
    import cv2

    h, w = a.shape[:2]
    return cv2.resize(a, (max(1, round(w * factor)), max(1, round(h * factor))), interpolation=cv2.INTER_AREA)


def _refine(lightness: np.ndarray, template: np.ndarray, cand: Box, mirrored: bool) -> tuple[float, Box]:
    """The correlation at `FINE_SIDE` px around a coarse match, and the match's refined box."""
    import cv2

    height, width = lightness.shape
    x, y, w, h = cand
    f = min(1.0, FINE_SIDE / max(w, h))
    t = _shrink(template, f * w / template.shape[1]).astype(np.float32)
    if mirrored:
        t = np.ascontiguousarray(t[:, ::-1])
    mx, my = round(REFINE_MARGIN * w), round(REFINE_MARGIN * h)
    x0, y0 = max(0, round(x - mx)), max(0, round(y - my))
    x1, y1 = min(width, round(x + w + mx)), min(height, round(y + h + my))
    region = _shrink(lightness[y0:y1, x0:x1], f).astype(np.float32)
    th, tw = t.shape
    if th < MIN_SIDE or tw < MIN_SIDE or region.shape[0] < th or region.shape[1] < tw:
        return -1.0, cand
    scores = cv2.matchTemplate(region, t, cv2.TM_CCOEFF_NORMED)
    iy, ix = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return float(scores[iy, ix]), (x0 + ix / f, y0 + iy / f, w, h)


def find_twin(
    rgb: np.ndarray, box: Sequence[float], explained: Sequence[Sequence[float]] = (), *, mirrored: bool = True
) -> TwinSearch:
    """The region of the RGB uint8 photo most like the target's `box` (xywh), outside the target and the
    `explained` boxes (xywh), with its score (module docstring); `mirrored`: search mirror images too."""
    import cv2

    height, width = rgb.shape[:2]
    x0, y0, x1, y1 = clip_box(box, width, height)
    target: Box = (x0, y0, x1 - x0, y1 - y0)
    lab = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2LAB)
    lightness = lab[..., 0]
    patch = lightness[y0:y1, x0:x1]
    s = min(1.0, COARSE_SIDE / max(x1 - x0, y1 - y0))
    template = _shrink(patch, s).astype(np.float32)
    th, tw = template.shape
    if th < MIN_SIDE or tw < MIN_SIDE or min(x1 - x0, y1 - y0) < MIN_BOX_SIDE:
        return TwinSearch(None, f"the box is too small to search ({x1 - x0}x{y1 - y0} px)")
    if float(template.std()) < MIN_CONTRAST:
        return TwinSearch(None, "the box is too plain to search (no structure to correlate)")
    colours = _ab_hist(lab[y0:y1, x0:x1])
    boxes = [tuple(float(v) for v in b) for b in explained]
    best: TwinMatch | None = None
    for scale in SCALES:
        f = s / scale  # the photo shrunk so that a twin `scale` times the target's size matches the template
        image = lightness if f == 1.0 else _shrink(lightness, f)
        image = image.astype(np.float32)
        if th >= image.shape[0] or tw >= image.shape[1]:
            continue
        for mirror in (False, True) if mirrored else (False,):
            t = np.ascontiguousarray(template[:, ::-1]) if mirror else template
            scores = cv2.matchTemplate(image, t, cv2.TM_CCOEFF_NORMED)
            for cand in _peaks(scores, f, tw, th, target, boxes):
                fine, where = _refine(lightness, patch, cand, mirror)
                if _overlap(where, target) > SELF_OVERLAP * where[2] * where[3]:
                    continue
                wx, wy = int(max(0, where[0])), int(max(0, where[1]))
                region = lab[wy : int(min(height, where[1] + where[3])), wx : int(min(width, where[0] + where[2]))]
                if region.size == 0:
                    continue
                colour = float(np.minimum(colours, _ab_hist(region)).sum())
                score = min(fine, colour)
                if best is None or score > best.score:
                    found = (round(where[0]), round(where[1]), round(where[2]), round(where[3]))
                    best = TwinMatch(found, round(score, 3), round(fine, 3), round(colour, 3), scale, mirror)
    return TwinSearch(best)


def _peaks(scores: np.ndarray, f: float, tw: int, th: int, target: Box, explained: list[Box]) -> list[Box]:
    """The best `PEAKS` peaks of a correlation map (at least `MIN_COARSE`) outside the target and the
    explained boxes, each as a box in image pixels; each peak found blanks its neighbourhood."""
    out: list[Box] = []
    scores = scores.copy()
    rx, ry = max(1, tw // 2), max(1, th // 2)
    for _ in range(8 * PEAKS):
        iy, ix = np.unravel_index(int(np.argmax(scores)), scores.shape)
        if scores[iy, ix] < MIN_COARSE:
            break
        scores[max(0, iy - ry) : iy + ry + 1, max(0, ix - rx) : ix + rx + 1] = -1.0
        cand = (ix / f, iy / f, tw / f, th / f)
        area = cand[2] * cand[3]
        if _overlap(cand, target) > SELF_OVERLAP * area:
            continue
        if any(_overlap(cand, e) > EXPLAINED_INSIDE * area for e in explained):
            continue
        out.append(cand)
        if len(out) >= PEAKS:
            break
    return out
