"""Print in a photo: lines of letters or digits found in the pixels, with no model weights.

A mirrored photo gives itself away wherever it shows print (a shop sign, a cereal box, a licence plate, the
lettering on a counter's edge reads backwards), and scene graphs name only some of it. `find_print(rgb)`
looks for it the classical way:

1. **Candidate glyphs**: ink told from its ground locally: the grey image is thresholded against the mean
   of a window around each pixel (`BLOCKS` px wide, `INK` grey levels darker, and separately lighter), on
   the photo scaled to at most `MAX_SIDE` px; each 8-connected part of ink is a candidate.
2. **Glyph shape**: a candidate is kept when it looks like a letter, not a leaf, a pebble or a window:
   - `GLYPH_MIN_H`..`GLYPH_MAX_H` px tall (and no taller than its window), width over height
     `MIN_ASPECT`..`MAX_ASPECT`;
   - it fills `MIN_FILL`..`MAX_FILL` of its bounding box (a solid square or disc fills all of it);
   - its **strokes** are thin and even: twice the distance transform on the region's ridge (the stroke
     width) has a coefficient of variation at most `MAX_STROKE_CV` and a mean at most `MAX_STROKE_H` of
     the region's height (a letter's strokes are a fraction of its height; a blob's "stroke" is its width);
   - it stands out from a plain ground: its mean grey differs from the median of the ring just around its
     box by at least `MIN_CONTRAST`, and that ring's median absolute deviation is at most `GROUND_MAD`
     (print sits on a label, a sign, a box; gravel, grass and foliage are ink on ink).
   Overlapping duplicates (the same glyph found in both windows) keep the largest.
3. **Lines**: glyphs link when they are of like height (ratio at most `LINK_HEIGHT`), their vertical centres
   within `LINK_DY` of the taller's height, their bottoms (a baseline) or tops within `LINK_ALIGN` of it,
   their horizontal gap at most `LINK_GAP` of it, their stroke widths within `LINK_STROKE` of each other,
   and their ink and ground greys within `LINK_GREY`. A connected group of at least `MIN_GLYPHS` glyphs whose extent
   is at least `MIN_LINE_ASPECT` times its height is a line of print.

What it finds (`PrintLine`): the line's box in the photo's pixels, how many glyphs, their mean height.
What it cannot see: print smaller than `GLYPH_MIN_H` px (a licence plate across the street, the lit WALK of
a crossing signal), letters printed straight onto a busy background, script letters that join, print on a
strong slant (lines are linked horizontally), single letters and logos without letters. What fools it:
regular fine marks of letter size in a row on a plain ground (a keyboard's keys are print in this sense
anyway). A caller that
must not show mirrored print treats any line as print in view; docs/image_negatives.md has what it found
on real photos.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_SIDE = 1024  # px: larger photos are scaled down first (glyph sizes below are of the scaled photo)
GLYPH_MIN_H = 7
GLYPH_MAX_H = 80
MIN_ASPECT = 0.08
MAX_ASPECT = 1.3
MIN_FILL = 0.15
MAX_FILL = 0.85
MAX_STROKE_CV = 0.55
MAX_STROKE_H = 0.3
MIN_CONTRAST = 30.0  # grey levels
LINK_HEIGHT = 1.5
LINK_DY = 0.35
LINK_GAP = 1.0
LINK_STROKE = 2.0  # the thicker stroke at most this many times the thinner
LINK_ALIGN = 0.2  # of the taller glyph: bottoms (a baseline) or tops (a cap line) this close
LINK_GREY = 30.0  # grey levels: the ink, and the ground around it, alike
MIN_GLYPHS = 3
MIN_LINE_ASPECT = 1.8
BLOCKS = (15, 41)  # px: the local windows ink is told from its ground in (a glyph is at most as tall)
GROUND_MAD = 12.0  # grey levels: the ground around a glyph is plain (median absolute deviation)
INK = 20  # grey levels darker (or lighter) than the window's mean


@dataclass(frozen=True, slots=True)
class Glyph:
    box: tuple[int, int, int, int]  # x, y, w, h in the scaled photo
    stroke: float
    grey: float  # mean grey of the region
    ground: float  # mean grey of the ring around its box

    @property
    def cy(self) -> float:
        return self.box[1] + self.box[3] / 2


@dataclass(frozen=True, slots=True)
class PrintLine:
    """A line of print: its box (x, y, w, h, the photo's pixels), its glyphs and their mean height (px)."""

    box: tuple[int, int, int, int]
    glyphs: int
    height: float


def _stroke(region: np.ndarray) -> tuple[float, float]:
    """The mean stroke width of a binary region and its coefficient of variation, from the distance
    transform on its ridge (pixels at least as far from the outline as their 8 neighbours)."""
    import cv2

    padded = np.pad(region.astype(np.uint8), 1)
    dist = cv2.distanceTransform(padded, cv2.DIST_L2, 3)
    ridge = (dist > 0) & (dist >= cv2.dilate(dist, np.ones((3, 3), np.uint8)))
    widths = 2.0 * dist[ridge]
    if widths.size == 0:
        return 0.0, 1.0
    mean = float(widths.mean())
    return mean, float(widths.std() / mean) if mean > 0 else 1.0


def glyphs(grey: np.ndarray) -> list[Glyph]:
    """Letter-like regions of a grey uint8 image (module docstring, steps 1-2)."""
    import cv2

    height, width = grey.shape
    found: list[tuple[int, Glyph]] = []
    for block in BLOCKS:
        for dark in (True, False):  # dark ink on a light ground, and light on dark
            kind = cv2.THRESH_BINARY_INV if dark else cv2.THRESH_BINARY
            ink = cv2.adaptiveThreshold(grey, 255, cv2.ADAPTIVE_THRESH_MEAN_C, kind, block, INK if dark else -INK)
            count, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
            for i in range(1, count):
                x, y, w, h, area = (int(v) for v in stats[i])
                if not (GLYPH_MIN_H <= h <= min(GLYPH_MAX_H, block)) or not (MIN_ASPECT <= w / h <= MAX_ASPECT):
                    continue
                fill = area / float(w * h)
                if not (MIN_FILL <= fill <= MAX_FILL):
                    continue
                region = labels[y : y + h, x : x + w] == i
                stroke, cv = _stroke(region)
                if cv > MAX_STROKE_CV or stroke > MAX_STROKE_H * h or stroke <= 0:
                    continue
                pad = max(2, h // 4)
                x0, y0, x1, y1 = max(0, x - pad), max(0, y - pad), min(width, x + w + pad), min(height, y + h + pad)
                ring = np.ones((y1 - y0, x1 - x0), bool)
                ring[y - y0 : y - y0 + h, x - x0 : x - x0 + w] = False
                inside = float(grey[y : y + h, x : x + w][region].mean())
                around = grey[y0:y1, x0:x1][ring].astype(np.float32) if ring.any() else np.array([inside])
                ground = float(np.median(around))
                if abs(inside - ground) < MIN_CONTRAST or float(np.median(np.abs(around - ground))) > GROUND_MAD:
                    continue
                found.append((area, Glyph((x, y, w, h), stroke, inside, ground)))
    found.sort(key=lambda t: -t[0])
    kept: list[Glyph] = []
    for _, g in found:  # the largest of overlapping duplicates
        if not any(_overlap(g.box, k.box) > 0.5 for k in kept):
            kept.append(g)
    return kept


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """The shared area over the smaller box's."""
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    return ix * iy / max(1, min(a[2] * a[3], b[2] * b[3]))


def _linked(a: Glyph, b: Glyph) -> bool:
    ha, hb = a.box[3], b.box[3]
    tall = max(ha, hb)
    if tall / min(ha, hb) > LINK_HEIGHT or abs(a.cy - b.cy) > LINK_DY * tall:
        return False
    bottom = abs((a.box[1] + ha) - (b.box[1] + hb))
    if min(bottom, abs(a.box[1] - b.box[1])) > LINK_ALIGN * tall:  # a shared baseline or cap line
        return False
    if abs(a.grey - b.grey) > LINK_GREY or abs(a.ground - b.ground) > LINK_GREY:  # one ink on one ground
        return False
    gap = max(a.box[0], b.box[0]) - min(a.box[0] + a.box[2], b.box[0] + b.box[2])
    if gap > LINK_GAP * tall:
        return False
    return max(a.stroke, b.stroke) <= LINK_STROKE * min(a.stroke, b.stroke)


def lines(found: list[Glyph]) -> list[tuple[list[Glyph], tuple[int, int, int, int]]]:
    """Groups of linked glyphs that make a line of print (module docstring, step 3), with their box."""
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = sorted(range(len(found)), key=lambda i: found[i].box[0])
    for n, i in enumerate(order):  # sweep by x: only glyphs starting within reach can link
        gi = found[i]
        for j in order[n + 1 :]:
            gj = found[j]
            if gj.box[0] - (gi.box[0] + gi.box[2]) > LINK_GAP * max(gi.box[3], GLYPH_MAX_H):
                break
            if _linked(gi, gj):
                parent[root(i)] = root(j)
    groups: dict[int, list[Glyph]] = {}
    for i, g in enumerate(found):
        groups.setdefault(root(i), []).append(g)
    out = []
    for members in groups.values():
        if len(members) < MIN_GLYPHS:
            continue
        x0 = min(g.box[0] for g in members)
        y0 = min(g.box[1] for g in members)
        x1 = max(g.box[0] + g.box[2] for g in members)
        y1 = max(g.box[1] + g.box[3] for g in members)
        if (x1 - x0) < MIN_LINE_ASPECT * (y1 - y0):
            continue
        out.append((members, (x0, y0, x1 - x0, y1 - y0)))
    return out


def find_print(rgb: np.ndarray) -> list[PrintLine]:
    """The lines of print in an RGB uint8 photo, largest first (module docstring)."""
    import cv2

    height, width = rgb.shape[:2]
    scale = min(1.0, MAX_SIDE / max(height, width))
    grey = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
    if scale < 1.0:
        grey = cv2.resize(grey, (round(width * scale), round(height * scale)), interpolation=cv2.INTER_AREA)
    out = []
    for members, (x, y, w, h) in lines(glyphs(grey)):
        box = (round(x / scale), round(y / scale), round(w / scale), round(h / scale))
        out.append(PrintLine(box, len(members), float(np.mean([g.box[3] for g in members])) / scale))
    return sorted(out, key=lambda p: -p.box[2] * p.box[3])
