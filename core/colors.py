"""The one colour table: every GQA colour name an edit may paint or a check may verify, with its sRGB
reference, its CIE LAB, and the rule that says whether a pixel "is" that colour.

- `COLORS`: GQA colour name -> a typical object's sRGB (0-255). The offline backend
  (`backends/inpaint_opencv.py`) paints these; the edit checks (`filters/scorers/edit_check.py`) verify them.
  Names that are not one colour ("dark", "light", "bright", "colorful", "transparent", "clear") are left
  out on purpose: the backend refuses them and the checks do not measure them.
- `reference_lab(name)`: the reference in CIE LAB (D65, L 0..100, a/b about -128..127), through OpenCV's
  float conversion, the same one the backend recolours with.
- `in_range(lab, name)`: the range rule, per pixel:
  * achromatic names (white, black, gray/grey, silver: reference chroma <= `ACHROMATIC_CHROMA`): the
    pixel's chroma is at most `NEUTRAL_MAX_CHROMA` and its lightness within `NEUTRAL_L_TOLERANCE` of
    the reference's (white: L >= 72.5; black: L <= 30.9; gray: 31.6..75.6; silver: L >= 55.8);
  * chromatic names: the pixel's chroma is at least `max(MIN_CHROMA, CHROMA_FRACTION x reference
    chroma)`, its hue (atan2(b, a)) within `HUE_TOLERANCE_DEG` of the reference's (`LOW_CHROMA_HUE_DEG`
    for references below 30 chroma: tan, beige, cream, khaki, teal, light blue, dark brown, whose hue is
    less certain), and its lightness within `L_TOLERANCE` of the reference's (shading keeps a red
    object red; the lightness band is what separates brown from orange and navy from blue).
  Ranges of related names overlap (brown / dark brown, gray / silver). `closer(lab, a, b)` breaks the
  tie between two names by a LAB distance with lightness at half weight (shading moves lightness most).

Colours, not objects: the rule knows nothing of a white plate's shadow, so a check measures the share of
an object's pixels in range, never a single pixel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import numpy as np

RGB = tuple[int, int, int]

COLORS: dict[str, RGB] = {
    "white": (240, 240, 236),
    "black": (25, 25, 28),
    "blue": (40, 80, 210),
    "green": (45, 150, 60),
    "red": (200, 35, 35),
    "brown": (125, 80, 45),
    "yellow": (240, 210, 40),
    "gray": (128, 128, 128),
    "grey": (128, 128, 128),
    "orange": (240, 135, 30),
    "pink": (240, 140, 180),
    "purple": (130, 55, 170),
    "silver": (192, 192, 198),
    "tan": (210, 180, 140),
    "gold": (212, 175, 55),
    "beige": (225, 210, 175),
    "cream colored": (245, 235, 200),
    "cream": (245, 235, 200),
    "maroon": (128, 20, 35),
    "khaki": (190, 180, 120),
    "navy": (25, 35, 110),
    "teal": (0, 128, 128),
    "turquoise": (64, 200, 200),
    "dark blue": (20, 40, 130),
    "light blue": (150, 195, 235),
    "dark brown": (80, 50, 25),
    "light brown": (180, 130, 80),
    "dark green": (20, 90, 35),
    "blond": (230, 200, 130),
}

ACHROMATIC_CHROMA = 8.0  # LAB chroma below which a reference colour has no hue (white, black, gray, silver)
NEUTRAL_MAX_CHROMA = 15.0  # a pixel of an achromatic colour: tinted white light still reads as white
NEUTRAL_L_TOLERANCE = 22.0  # LAB L either side of an achromatic reference
MIN_CHROMA = 10.0  # a chromatic pixel has at least this much chroma (below it, it reads grey)
CHROMA_FRACTION = 0.3  # ... and at least this share of its reference's chroma
HUE_TOLERANCE_DEG = 30.0  # hue either side of a chromatic reference
LOW_CHROMA_HUE_DEG = 40.0  # the same for references below LOW_CHROMA (their hue is less certain)
LOW_CHROMA = 30.0
L_TOLERANCE = 30.0  # LAB L either side of a chromatic reference


def colour_name(word: str | None) -> str | None:
    """`word` as a key of `COLORS` ("Cream Colored " -> "cream colored"), or None when it is no colour."""
    if word is None:
        return None
    key = word.strip().lower()
    return key if key in COLORS else None


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB uint8 (..., 3) -> CIE LAB float32 (L 0..100), OpenCV's conversion (the backend's)."""
    import cv2

    arr = np.asarray(rgb, np.float32).reshape(-1, 1, 3) / 255.0
    return cv2.cvtColor(arr, cv2.COLOR_RGB2LAB).reshape(np.shape(rgb))


@cache
def reference_lab(name: str) -> tuple[float, float, float]:
    """The CIE LAB of `COLORS[name]`."""
    lab = to_lab(np.array(COLORS[name], np.uint8))
    return float(lab[0]), float(lab[1]), float(lab[2])


def is_achromatic(name: str) -> bool:
    _, a, b = reference_lab(name)
    return float(np.hypot(a, b)) <= ACHROMATIC_CHROMA


def in_range(lab: np.ndarray, name: str) -> np.ndarray:
    """Whether each LAB pixel (..., 3) is the colour `name`, by the rule of the module docstring."""
    ref_l, ref_a, ref_b = reference_lab(name)
    lightness, chroma = lab[..., 0], np.hypot(lab[..., 1], lab[..., 2])
    if is_achromatic(name):
        return (chroma <= NEUTRAL_MAX_CHROMA) & (np.abs(lightness - ref_l) <= NEUTRAL_L_TOLERANCE)
    ref_chroma = float(np.hypot(ref_a, ref_b))
    hue = np.degrees(np.arctan2(lab[..., 2], lab[..., 1]))
    gap = np.abs((hue - np.degrees(np.arctan2(ref_b, ref_a)) + 180.0) % 360.0 - 180.0)
    tolerance = LOW_CHROMA_HUE_DEG if ref_chroma < LOW_CHROMA else HUE_TOLERANCE_DEG
    return (
        (chroma >= max(MIN_CHROMA, CHROMA_FRACTION * ref_chroma))
        & (gap <= tolerance)
        & (np.abs(lightness - ref_l) <= L_TOLERANCE)
    )


def distance(lab: np.ndarray, name: str) -> np.ndarray:
    """LAB distance of each pixel to `name`'s reference, lightness at half weight."""
    ref_l, ref_a, ref_b = reference_lab(name)
    return np.sqrt((0.5 * (lab[..., 0] - ref_l)) ** 2 + (lab[..., 1] - ref_a) ** 2 + (lab[..., 2] - ref_b) ** 2)


def closer(lab: np.ndarray, name: str, other: str) -> np.ndarray:
    """Whether each pixel is nearer `name`'s reference than `other`'s (ties go to `name`)."""
    return distance(lab, name) <= distance(lab, other)


# -- naming colours from pixels ----------------------------------------------------------------------------
#
# The range rule above answers "is this pixel the colour X?" for one X at a time; an edit check knows which
# X to ask about. A claim check must ask the other way round: "what colours does this object have, and in
# what shares?". For that every pixel gets one colour term, by a CIELAB naming model:
#
# - The terms are the eleven basic colour terms of English (black, white, gray, red, orange, yellow, green,
#   blue, purple, pink, brown) and "beige" for pale warm colours (light, low chroma, hue from red-orange to
#   yellow), where English speakers hesitate between white, cream, beige and tan: naming those pixels one
#   of the eleven would make a cream wall contradict "white" or "beige".
# - Neutral pixels, chroma below NAME_NEUTRAL_CHROMA + NAME_NEUTRAL_SLOPE x L (a tinted white keeps more
#   chroma than a tinted black; NEUTRAL_BLUE_STRETCH times more towards blue, the tint of a white in shade
#   or daylight; not towards yellow, where browns and beiges live), or too dark to show a hue (L below
#   VERY_DARK_L with chroma below VERY_DARK_CHROMA), are black, gray or white by lightness (BLACK_L,
#   WHITE_L).
# - Chromatic pixels fall in a hue sector (LAB hue angle, `SECTORS`); inside a sector, lightness and chroma
#   split the names: a dark orange is brown, a light red pink, a light purple pink, a dark yellow brown
#   (or green past OLIVE_HUE), a pale warm colour beige.
# - Lightness is what shading changes most. Naming an object (`read_colours`), the splits inside a sector
#   use the sector's *lit* lightness (the LIT_QUANTILE of its pixels' L) and its median chroma, not each
#   pixel's own: an orange shirt's shadowed folds stay orange, a brown chair's highlights stay brown. Hue
#   survives shading; only pixels that lose it (deep shadow) fall to black or gray.
# - Specular highlights (near-white pixels, L at least HIGHLIGHT_L, in spots each under HIGHLIGHT_SPOT of
#   the mask) are set aside: a red car's glints are not white paint. A white object's pixels form one large
#   part and are kept.

TERMS: tuple[str, ...] = (
    "black", "white", "gray", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "beige",
)  # fmt: skip
_TERM = {t: i for i, t in enumerate(TERMS)}

NAME_NEUTRAL_CHROMA = 6.0
NAME_NEUTRAL_SLOPE = 0.1
NEUTRAL_BLUE_STRETCH = 1.5
VERY_DARK_L = 18.0
VERY_DARK_CHROMA = 25.0
BLACK_L = 30.0  # neutral pixels darker than this are black
WHITE_L = 72.0  # ... and at least this light, white; gray between
PALE_L = 65.0  # beige: a warm sector at least this light ...
PALE_CHROMA = 28.0  # ... and with less chroma than this
ORANGE_RED_HUE = 42.0  # a light, strong red past this hue is orange (orange-red, sRGB 255 69 0, is at 43)
ORANGE_CHROMA = 50.0  # an orange-hued colour with less chroma than this is brown (coffee crema, wood)
OLIVE_HUE = 97.0  # a dark yellow is brown below this hue, green above it
LIT_QUANTILE = 75.0  # percentile of a sector's lightness that stands for its lit part
HIGHLIGHT_L = 88.0
HIGHLIGHT_SPOT = 0.02  # of the mask's pixels: near-white spots smaller than this are highlights

# Hue sectors of the LAB hue angle, degrees [start, end): the sector's name for reference lookups.
SECTORS: tuple[tuple[str, float, float], ...] = (
    ("rose", 345.0, 20.0),  # pink when light, else red (wraps through 0)
    ("red", 20.0, 50.0),  # orange past ORANGE_RED_HUE when light
    ("orange", 50.0, 80.0),
    ("yellow", 80.0, 110.0),
    ("green", 110.0, 190.0),
    ("blue", 190.0, 312.0),
    ("purple", 312.0, 345.0),
)


def lch(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lightness, chroma and hue angle (degrees, 0..360) of LAB pixels (..., 3)."""
    lightness, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    return lightness, np.hypot(a, b), np.degrees(np.arctan2(b, a)) % 360.0


def is_neutral(lab: np.ndarray) -> np.ndarray:
    """LAB pixels with no visible hue: low chroma for their lightness (more allowed towards blue, -b, the
    tint of whites in shade and daylight, by NEUTRAL_BLUE_STRETCH), or too dark to show one."""
    lightness, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    limit = NAME_NEUTRAL_CHROMA + NAME_NEUTRAL_SLOPE * lightness
    b_limit = np.where(b < 0, NEUTRAL_BLUE_STRETCH * limit, limit)
    flat = (a / limit) ** 2 + (b / b_limit) ** 2 < 1.0
    return flat | ((lightness < VERY_DARK_L) & (np.hypot(a, b) < VERY_DARK_CHROMA))


def sector_of(hue: np.ndarray) -> np.ndarray:
    """The index in SECTORS of each hue angle."""
    out = np.zeros(hue.shape, np.int8)  # sector 0 ("rose") wraps through 0 degrees
    for i, (_, start, end) in enumerate(SECTORS[1:], start=1):
        out[(hue >= start) & (hue < end)] = i
    return out


def _sector_terms(sector: int, hue: np.ndarray, ref_l: np.ndarray, ref_c: np.ndarray) -> np.ndarray:
    """The term index of chromatic pixels of one sector, from their hue and the (reference) lightness and
    chroma that split the sector's names."""
    pale = (ref_l >= PALE_L) & (ref_c < PALE_CHROMA)
    name = SECTORS[sector][0]
    if name == "rose":
        return np.where(ref_l >= 55.0, _TERM["pink"], _TERM["red"])
    if name == "red":
        light_orange = (ref_l >= 50.0) & (ref_c >= ORANGE_CHROMA) & (hue >= ORANGE_RED_HUE)
        out = np.where(light_orange, _TERM["orange"], _TERM["red"])
        out = np.where((ref_l >= 68.0) & (ref_c < 45.0), _TERM["pink"], out)
        out = np.where((ref_l < 40.0) & (ref_c < 35.0), _TERM["brown"], out)
        return np.where(pale, _TERM["beige"], out)
    if name == "orange":
        out = np.where((ref_l >= 55.0) & (ref_c >= ORANGE_CHROMA), _TERM["orange"], _TERM["brown"])
        return np.where(pale, _TERM["beige"], out)
    if name == "yellow":
        dark = np.where(hue < OLIVE_HUE, _TERM["brown"], _TERM["green"])
        out = np.where(ref_l >= 58.0, _TERM["yellow"], dark)
        return np.where(pale, _TERM["beige"], out)
    if name == "purple":
        return np.where(ref_l >= 62.0, _TERM["pink"], _TERM["purple"])
    return np.full(hue.shape, _TERM[name])  # green, blue


def name_pixels(lab: np.ndarray, *, by_sector: bool = False) -> np.ndarray:
    """The index in TERMS of each LAB pixel (..., 3), int8.

    by_sector: name the chromatic pixels of each hue sector with the sector's lit lightness and median
    chroma instead of their own (the shading-robust naming `read_colours` uses for one object)."""
    lab = np.asarray(lab, np.float32)
    lightness, chroma, hue = lch(lab)
    out = np.empty(lightness.shape, np.int8)
    neutral = is_neutral(lab)
    grey_l = lightness[neutral]
    light = np.where(grey_l >= WHITE_L, _TERM["white"], _TERM["gray"])
    out[neutral] = np.where(grey_l < BLACK_L, _TERM["black"], light)
    sectors = sector_of(hue)
    for s in range(len(SECTORS)):
        member = ~neutral & (sectors == s)
        if not member.any():
            continue
        ref_l, ref_c = lightness[member], chroma[member]
        if by_sector:
            ref_l = np.full(ref_l.shape, np.percentile(ref_l, LIT_QUANTILE), np.float32)
            ref_c = np.full(ref_c.shape, np.median(ref_c), np.float32)
        out[member] = _sector_terms(s, hue[member], ref_l, ref_c)
    return out


@dataclass(frozen=True, slots=True)
class ColourReading:
    """What colours an object's pixels show: the share of its named pixels per term (TERMS), the median
    lightness of each term's pixels, how many pixels were named and which share was set aside as specular
    highlights. Shares omit terms with no pixel and are ordered largest first."""

    shares: dict[str, float]
    lightness: dict[str, float]
    pixels: int
    highlights: float = 0.0

    def share(self, terms: Iterable[str]) -> float:
        """The summed share of `terms`."""
        return float(sum(self.shares.get(t, 0.0) for t in terms))

    @property
    def dominant(self) -> str | None:
        return next(iter(self.shares), None)

    def large(self, min_share: float = 0.25) -> tuple[str, ...]:
        """The terms covering at least `min_share` of the object, largest first."""
        return tuple(t for t, s in self.shares.items() if s >= min_share)

    def describe(self, top: int = 3) -> str:
        """ "red 62%, black 21%, gray 9%": the largest shares, for reasons a person reads."""
        return ", ".join(f"{t} {s:.0%}" for t, s in list(self.shares.items())[:top]) or "no pixels"


def read_colours(rgb: np.ndarray, mask: np.ndarray, *, robust: bool = True) -> ColourReading:
    """The colours of the object under `mask` (bool, the size of `rgb`'s first two axes; a box crop and
    its box-sized mask work as well as the image and an image-sized one).

    robust: name by sector (shading-robust) and set specular highlights aside; off, every pixel is named
    by its own lightness and nothing is set aside."""
    import cv2

    mask = np.asarray(mask, bool)
    if mask.shape != rgb.shape[:2]:
        raise ValueError(f"mask {mask.shape} does not match the image {rgb.shape[:2]}")
    ys, xs = np.nonzero(mask)
    if ys.size == 0:
        return ColourReading({}, {}, 0)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    crop, inside = rgb[y0:y1, x0:x1], mask[y0:y1, x0:x1]
    lab = to_lab(crop[inside])
    keep = np.ones(len(lab), bool)
    if robust:
        bright = np.zeros(inside.shape, np.uint8)
        bright[inside] = (lab[:, 0] >= HIGHLIGHT_L) & is_neutral(lab)
        if bright.any():
            _, labels, stats, _ = cv2.connectedComponentsWithStats(bright, connectivity=8)
            spot = stats[:, cv2.CC_STAT_AREA] < HIGHLIGHT_SPOT * len(lab)
            spot[0] = False
            keep = ~spot[labels[inside]]
    named = name_pixels(lab[keep], by_sector=robust)
    counts = np.bincount(named, minlength=len(TERMS))
    total = int(counts.sum())
    if total == 0:
        return ColourReading({}, {}, 0, 1.0)
    order = [int(i) for i in np.argsort(-counts, kind="stable") if counts[i] > 0]
    lightness = lab[keep][:, 0]
    return ColourReading(
        {TERMS[i]: float(counts[i] / total) for i in order},
        {TERMS[i]: float(np.median(lightness[named == i])) for i in order},
        total,
        float(1.0 - total / len(lab)),
    )


def distinct_rows(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of `cells` (n x 3 integers), in no particular order, and each row's index among
    them: the rows packed into one integer each, so that a flat unique does what `np.unique(axis=0)` does in
    a fraction of its time (it sorts the rows as opaque records)."""
    low = cells.min(axis=0)
    span = (cells.max(axis=0) - low + 1).astype(np.int64)
    shifted = (cells - low).astype(np.int64)
    keys = (shifted[:, 0] * span[1] + shifted[:, 1]) * span[2] + shifted[:, 2]
    _, first, back = np.unique(keys, return_index=True, return_inverse=True)
    return cells[first], back.ravel()
