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
