"""Recolour an object so that the photo still looks like a photo, and say whether it worked.

A recolour that paints a flat colour over a mask gives a glowing cut-out; one that moves only part of an
object leaves the rest in the old colour. Here an object is recoloured the way a dye would do it, in CIELAB:

- **Which pixels.** Those of the object's mask (`core.pixels.whole`) that carry its old colour: named (as
  `core.colors.read_colours` names them, shading-robust) in the old colour's terms or its neighbours (the
  grey shade of a white van, the brown shadow of a red shirt). Parts of other colours stay as they are: a
  red car's black tyres and chrome.
- **Lightness is kept**, pixel by pixel: shading, texture, print and highlights stay where they were. The
  object may be lightened or darkened as a whole by `shift` (at most `MAX_SHIFT` L), only as far as the new
  colour needs to be named so (a yellow is light; black is dark). A new colour that needs more is refused:
  a black sign does not turn yellow without looking painted.
- **Chroma and hue move** to a shade of the new colour: each pixel's chroma is the shade's, times its own
  share of the object's median chroma (so highlights and shadows keep less colour, as they had), or, for
  a white, grey or black object, the shade's chroma tapered towards the ends of the lightness scale
  (a white object's glints stay white). Hue keeps `HUE_KEEP` of its spread around the object's mean hue.
  Pixels whose new colour falls outside sRGB lose chroma until it fits (the hue and lightness stay).
- **White, grey and black** have no hue: the pixels lose their chroma (a faint tint of `Shade.chroma`
  remains) and the object's lightness is shifted into the range where the naming model calls it that
  colour (`ACHROMATIC_BANDS`: most of its pixels, by quantile), or the edit is refused.
- The edge is feathered (`FEATHER_SIGMA` px): no jagged staircase. Its soft rim past the mask (`RIM_PX`: an
  out-of-focus sweet on white) moves by its share of the object (`core.pixels.masks.blend_share`): no ring is left.

Each new colour has several **shades** (`shades(word)`): a candidate is one shade, so the candidates of
one edit are different edits, not near-copies.

`recolour(...)` returns the edited window and the verdict of the colour checks on it
(`core.pixels.evidence.verify_recolour` on the whole mask: at least 80% reads as the new colour, at most
5% as the old). `refusal(...)` says, from the source alone and one trial shade, why an object cannot be
recoloured convincingly: a mask that is not the whole object, a source that does not read as its old
colour, an object of several colours, the old colour going on outside the mask inside the box (the arm
a partial mask left red), or no shade that verifies within `MAX_SHIFT`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hardneg.core.colors import TERMS, distinct_rows, lch, name_pixels, read_colours, to_lab
from hardneg.core.pixels.evidence import (
    RECOLOUR_OLD,
    ColourVerdict,
    colour_word,
    judge_colour,
    multicoloured,
    verify_recolour,
)
from hardneg.core.pixels.masks import blend_share
from hardneg.core.pixels.whole import Whole

# The words an edit may paint: the basic colour terms (and grey), each a single term the checks can verify.
PAINTABLE = {t: t for t in TERMS if t != "beige"} | {"grey": "gray"}
MAX_SHIFT = 24.0  # L: how far the whole object may be lightened or darkened
SHIFT_STEP = 6.0
HUE_KEEP = 0.3
CHROMATIC_SOURCE = 10.0  # median chroma from which an object's own chroma pattern is kept
TAPER_L = 12.0  # L from the ends (0, 100) over which a neutral object's new chroma fades
FEATHER_SIGMA = 0.8
RIM_PX = 2  # px past the mask where a chromatic object's colour still tints its soft edge
OUTSIDE_LIKE = 0.3  # of the pixels just around the mask: more in the object's colours and the mask missed some
RING_PX = 3  # the ring around the mask where that is read (with the holes the mask encloses) ...
RING_GAP = 2  # ... starting this far out: the mask's outline is uncertain by a pixel or two
EDGE_DE = 10.0  # CIELAB distance past which a ring pixel is another surface than the object beside it ...
EDGE_L_WEIGHT = 0.3  # ... with lightness at this weight (shading moves it most)
EDGE_NEAR_PX = 3  # the object's colour beside a ring pixel: the mean of its pixels this near the nearest one
CLEAR_CHROMA = 15.0  # a chromatic colour's pixels with less chroma are not told from grey shadows
CORE_SHARE = 0.3  # of the mask: the old colour's own terms, below which its neighbours count too
HOLE_SHARE = 0.01  # of the mask: holes this small among the old colour's pixels are recoloured with them
LIKE_DE = 10.0  # CIELAB distance (lightness at half weight) to the nearest of the object's colours
LIKE_CELL = 1.0  # CIELAB units `like` rounds colours to
MIN_LIT_L = 30.0  # a darker object (its lit lightness, the 75th percentile) shows no new hue: black stays black
CLIPPED_LEVEL = 250
MAX_CLIPPED = 0.3  # share of the object blown out in some channel: no shading left to keep
MIN_MEMBERS = 0.5  # of the mask: the old colour's pixels, recoloured (a car's windows and tyres are the rest)
# Achromatic colours: the quantiles of the object's lightness that must fall inside the term's band.
ACHROMATIC_BANDS = {"white": (0.15, 74.0, 100.0), "black": (0.85, 0.0, 27.0), "gray": (0.1, 33.0, 69.0)}


@dataclass(frozen=True, slots=True)
class Shade:
    """One shade of a colour: its CIELAB hue angle (degrees) and chroma (a faint tint for white/grey/black)."""

    hue: float
    chroma: float


# Per colour term: shades as (hue, chroma) in CIELAB, spread over what English calls that colour.
_SHADES: dict[str, tuple[tuple[float, float], ...]] = {
    "red": ((35.0, 70.0), (28.0, 58.0), (40.0, 62.0), (25.0, 75.0)),
    "orange": ((60.0, 72.0), (55.0, 66.0), (66.0, 78.0)),
    "yellow": ((92.0, 78.0), (88.0, 68.0), (97.0, 72.0)),
    "green": ((140.0, 55.0), (128.0, 48.0), (155.0, 45.0), (135.0, 65.0)),
    "blue": ((290.0, 60.0), (280.0, 50.0), (298.0, 70.0), (270.0, 42.0)),
    "purple": ((318.0, 55.0), (322.0, 45.0), (314.0, 62.0)),
    "pink": ((355.0, 40.0), (0.0, 34.0), (350.0, 46.0)),
    "brown": ((62.0, 32.0), (58.0, 26.0), (68.0, 36.0)),
    "white": ((90.0, 1.5), (260.0, 1.5), (0.0, 0.0)),
    "gray": ((0.0, 0.0), (260.0, 2.0), (80.0, 2.0)),
    "black": ((0.0, 0.0), (260.0, 2.0), (60.0, 2.0)),
}


def paintable(word: str | None) -> str | None:
    """The colour term an edit paints for `word` ("Grey " -> "gray"), or None when it paints none."""
    return PAINTABLE.get((word or "").strip().lower())


def shades(word: str) -> tuple[Shade, ...]:
    term = paintable(word)
    if term is None:
        raise ValueError(f"{word!r} is not a colour an edit paints (one of {', '.join(sorted(PAINTABLE))})")
    return tuple(Shade(h, c) for h, c in _SHADES[term])


def members(rgb: np.ndarray, mask: np.ndarray, old: str) -> np.ndarray:
    """The mask's pixels that carry the old colour: those named (shading-robust) in its own terms, or, when
    they are under `CORE_SHARE` of the mask, in its terms or their neighbours (a white object in shade reads
    grey); then every mask pixel whose colour is within `LIKE_DE` of theirs (a shirt's darkest folds), and
    the small holes they enclose. A hand over a red car, or its black tyres, are other colours: they stay."""
    from hardneg.core.pixels.masks import fill_holes

    parts = colour_word(old)
    if parts is None:
        return mask.copy()
    named = np.full(mask.shape, -1, np.int16)
    named[mask] = name_pixels(to_lab(rgb[mask]), by_sector=True)
    core = mask & np.isin(named, [TERMS.index(t) for p in parts for t in p.terms])
    if core.sum() < CORE_SHARE * mask.sum():
        core = mask & np.isin(named, [TERMS.index(t) for p in parts for t in p.terms | p.near])
    near = mask & like(rgb, mask, clear(rgb, core, old))
    return fill_holes(core | near, max_hole=max(4, int(HOLE_SHARE * mask.sum()))) & mask


def clear(rgb: np.ndarray, where: np.ndarray, old: str) -> np.ndarray:
    """The pixels of `where` whose colour is unmistakable: for a chromatic old colour, those with at least
    `CLEAR_CHROMA` of chroma (a red car's near-black shadow is named red by its hue, but is as near to a
    black tyre's colour as to red)."""
    parts = colour_word(old)
    if not where.any() or parts is None or all(t in ACHROMATIC_BANDS for p in parts for t in p.terms):
        return where
    out = where.copy()
    out[where] = lch(to_lab(rgb[where]))[1] >= CLEAR_CHROMA
    return out if out.any() else where


def like(rgb: np.ndarray, where: np.ndarray, ref: np.ndarray, ref_rgb: np.ndarray | None = None) -> np.ndarray:
    """Which pixels of `where` (of `rgb`) have a colour within LIKE_DE (CIELAB, lightness at half weight) of
    one of `ref`'s (of `ref_rgb`, by default `rgb`); colours are rounded to `LIKE_CELL` units first."""
    from scipy.spatial import cKDTree

    out = np.zeros(where.shape, bool)
    if not ref.any() or not where.any():
        return out
    weight = np.array([0.5, 1.0, 1.0], np.float32)  # lightness at half weight: shading moves it most

    def cells(lab: np.ndarray) -> np.ndarray:
        return np.round(lab * weight / LIKE_CELL).astype(np.int32)

    own, _ = distinct_rows(cells(to_lab((rgb if ref_rgb is None else ref_rgb)[ref])))
    pixels, back = distinct_rows(cells(to_lab(rgb[where])))
    dist, _ = cKDTree(own * LIKE_CELL).query(pixels * LIKE_CELL, k=1, distance_upper_bound=LIKE_DE + 1e-6)
    out[where] = np.isfinite(dist)[back]
    return out


def _to_rgb(lab: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.cvtColor(lab.reshape(-1, 1, 3).astype(np.float32), cv2.COLOR_LAB2RGB).reshape(lab.shape)


def _fit_gamut(lightness: np.ndarray, chroma: np.ndarray, hue: np.ndarray) -> np.ndarray:
    """LAB pixels of the given L and hue with the largest chroma up to `chroma` that sRGB can show."""
    rad = np.radians(hue)
    lo, hi = np.zeros_like(chroma), chroma.copy()

    def lab_of(c: np.ndarray) -> np.ndarray:
        return np.stack([lightness, c * np.cos(rad), c * np.sin(rad)], axis=-1)

    rgb = _to_rgb(lab_of(hi))
    ok = np.all((rgb >= -1e-3) & (rgb <= 1.0 + 1e-3), axis=-1)
    lo[ok] = hi[ok]
    todo = ~ok
    for _ in range(7):  # bisection on the pixels out of gamut
        if not todo.any():
            break
        mid = (lo + hi) / 2
        rgb = _to_rgb(lab_of(np.where(todo, mid, lo)))
        fits = np.all((rgb >= -1e-3) & (rgb <= 1.0 + 1e-3), axis=-1) & todo
        lo = np.where(fits, mid, lo)
        hi = np.where(todo & ~fits, mid, hi)
    return lab_of(lo)


Rim = tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]  # `blend_share`: each pixel's share, its nearest object pixel


def paint(
    rgb: np.ndarray, where: np.ndarray, word: str, shade: Shade, shift: float, soft: Rim | None = None
) -> np.ndarray:
    """`rgb` (uint8) with the pixels `where` (bool) recoloured to `shade` of `word`, their lightness kept
    but for `shift`; the edge feathered, and the object's soft rim (`soft`), where given, moved with it."""
    import cv2

    term = paintable(word)
    assert term is not None
    if not where.any():
        return rgb.copy()
    lab = to_lab(rgb)
    lightness, chroma, hue = lch(lab)
    sel = where
    new_l = np.clip(lightness[sel] + shift, 0.0, 100.0)
    if term in ACHROMATIC_BANDS:
        new_c = np.full(new_l.shape, shade.chroma, np.float32)
        new_h = np.full(new_l.shape, shade.hue, np.float32)
    else:
        c_src, h_src = chroma[sel], hue[sel]
        median = float(np.median(c_src)) if c_src.size else 0.0
        if median >= CHROMATIC_SOURCE:
            rel = np.clip(c_src / median, 0.2, 1.4)
            rad = np.radians(h_src)
            mean = np.degrees(np.arctan2((c_src * np.sin(rad)).sum(), (c_src * np.cos(rad)).sum()))
            spread = (h_src - mean + 180.0) % 360.0 - 180.0
            new_h = (shade.hue + HUE_KEEP * np.clip(spread, -30.0, 30.0)) % 360.0
        else:
            rel = np.clip(np.minimum(new_l, 100.0 - new_l) / TAPER_L, 0.15, 1.0)
            new_h = np.full(new_l.shape, shade.hue, np.float32)
        new_c = shade.chroma * rel
    new_lab = _fit_gamut(new_l.astype(np.float32), new_c.astype(np.float32), new_h.astype(np.float32))
    out_lab = lab.copy()
    out_lab[sel] = new_lab
    rim = np.zeros_like(sel)
    if soft is not None and (rim := soft[0] > 0).any():  # a rim pixel moves by its share of the object's change
        share, (ny, nx) = soft
        oy, ox = ny[rim], nx[rim]
        ab = lab[rim, 1:] + share[rim, None] * (out_lab[oy, ox, 1:] - lab[oy, ox, 1:])
        r_l = np.clip(lightness[rim] + shift * share[rim], 0.0, 100.0).astype(np.float32)  # its lightness kept
        r_lab = np.concatenate([r_l[:, None], ab], axis=-1).astype(np.float32)
        out_lab[rim] = _fit_gamut(*(np.asarray(v, np.float32) for v in lch(r_lab)))
    painted = np.clip(_to_rgb(out_lab) * 255.0, 0.0, 255.0)
    blur = cv2.GaussianBlur(sel.astype(np.float32), (0, 0), FEATHER_SIGMA)
    alpha = np.where(sel, np.clip((blur - 0.2) / 0.6, 0.5, 1.0), 0.0)  # the mask's edge half-blended ...
    alpha = np.where(rim | (sel & rim.any()), 1.0, alpha)[..., None]  # ... unless the rim blends it outward
    return np.clip(alpha * painted + (1.0 - alpha) * rgb + 0.5, 0, 255).astype(np.uint8)


def _shifts(word: str, lightness: np.ndarray) -> list[float]:
    """The lightness shifts to try, smallest first; for white, grey and black the one(s) that put the
    object's quantile into the band."""
    term = paintable(word)
    steps = np.arange(0.0, MAX_SHIFT + 1e-6, SHIFT_STEP)
    if term in ACHROMATIC_BANDS and lightness.size:
        q, lo, hi = ACHROMATIC_BANDS[term]
        at = float(np.quantile(lightness, q))
        need = (lo + 1.0 - at) if at < lo else (hi - 1.0 - at) if at > hi else 0.0
        if abs(need) > MAX_SHIFT:
            return []
        return [need] + [need + s * np.sign(need or (1.0 if term == "white" else -1.0)) for s in steps[1:2]]
    return [s * d for s in steps for d in ((1.0,) if s == 0 else (1.0, -1.0))]


@dataclass(frozen=True, slots=True)
class Recoloured:
    """A recoloured window, the shade and shift that made it, and the colour checks' verdict on it."""

    rgb: np.ndarray
    shade: Shade
    shift: float
    verdict: ColourVerdict

    @property
    def verified(self) -> bool:
        return self.verdict.verdict == "supported"


def verify(after: np.ndarray, mask: np.ndarray, carry: np.ndarray, old: str, new: str) -> ColourVerdict:
    """The colour checks on an edited window: `verify_recolour` on the pixels that carried the old colour
    (`carry`: at least RECOLOUR_NEW of them read as the new colour, at most RECOLOUR_OLD as the old), and
    not supported when the old colour's own terms still cover more than RECOLOUR_OLD of the whole mask."""
    verdict = verify_recolour(read_colours(after, carry), old, new)
    target, parts = colour_word(new), colour_word(old)
    if verdict.verdict != "supported" or not target or not parts:
        return verdict
    own = set().union(*(p.terms for p in parts)) - target[0].terms - target[0].near
    left = read_colours(after, mask).share(own)
    if left > RECOLOUR_OLD:
        why = f"{verdict.reason}; {left:.0%} of the whole mask still reads {old}"
        return replace(verdict, verdict="unknown", reason=why)
    return verdict


def recolour(rgb: np.ndarray, mask: np.ndarray, old: str, new: str, k: int = 0) -> Recoloured | None:
    """`rgb` (a window, uint8) with the object under `mask` (the window's size) recoloured from `old` to
    shade `k` of `new` (taken modulo the shades): the first lightness shift whose result verifies, or the
    last tried; None when no shift is possible (module docstring)."""
    pal = shades(new)
    shade = pal[k % len(pal)]
    where = members(rgb, mask, old)
    lightness, chroma, _ = lch(to_lab(rgb[where])) if where.any() else (np.zeros(0),) * 3
    hue = paintable(new) not in ACHROMATIC_BANDS and chroma.size and np.median(chroma) >= CHROMATIC_SOURCE
    last, soft = None, blend_share(to_lab(rgb), where, mask, RIM_PX) if hue else None  # once for every shift
    for shift in _shifts(new, lightness):
        out = paint(rgb, where, new, shade, shift, soft)
        last = Recoloured(out, shade, shift, verify(out, mask, where, old, new))
        if last.verified:
            return last
    return last


def refusal(rgb: np.ndarray, whole: Whole, old: str, new: str) -> str | None:
    """Why the object `whole` of the RGB uint8 photo cannot be recoloured from `old` to `new` convincingly,
    from the source alone (module docstring), or None."""
    if paintable(new) is None:
        return f"{new!r} is not a colour an edit paints"
    if colour_word(old) is None:
        return f"{old!r} is not a colour the pixels can judge"
    if not whole.usable:
        return "its mask is not the whole object: " + "; ".join(whole.problems)
    x0, y0, x1, y1 = whole.mask.box
    crop, mask = rgb[y0:y1, x0:x1], whole.mask.mask
    reading = read_colours(crop, mask)
    verdict = judge_colour(reading, old, whole.mask)
    if verdict.verdict == "contradicted":
        return f"it does not read as {old} ({verdict.reason})"
    many = multicoloured(reading)
    if many:
        return f"it is not one colour ({reading.describe()})"
    carry = members(crop, mask, old)
    if carry.sum() < MIN_MEMBERS * mask.sum():
        return f"only {carry.sum() / max(1, mask.sum()):.0%} of it carries {old}: the rest would stay as it is"
    lit = float(np.percentile(lch(to_lab(crop[carry]))[0], 75))
    if paintable(new) not in ACHROMATIC_BANDS and lit < MIN_LIT_L:
        return f"it is too dark to show a new hue (lit lightness L {lit:.0f}, needs {MIN_LIT_L:.0f})"
    clipped = float((crop[carry].max(axis=1) >= CLIPPED_LEVEL).mean())
    if clipped > MAX_CLIPPED:
        return f"{clipped:.0%} of it is blown-out white: it has no shading to keep"
    if (share := like_outside(crop, mask, carry, old)) > OUTSIDE_LIKE:
        return f"{share:.0%} of the box just around its mask has its colours: the mask may have missed part of it"
    trial = recolour(crop, mask, old, new)
    if trial is None or not trial.verified:
        why = "its lightness is far from any " + new if trial is None else trial.verdict.reason
        return f"no shade of {new} within {MAX_SHIFT:.0f} L of its lightness reads as {new} ({why})"
    return None


def around(mask: np.ndarray, box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The pixels just around the mask: a ring `RING_PX` wide, `RING_GAP` out (the mask's outline is
    uncertain by a pixel or two), and the holes the mask encloses; inside `box` (x0, y0, x1, y1) if given."""
    import cv2

    from hardneg.core.pixels.masks import fill_holes

    def grown(px: int) -> np.ndarray:
        return cv2.dilate(mask.astype(np.uint8), np.ones((2 * px + 1, 2 * px + 1), np.uint8)).astype(bool)

    out = ((grown(RING_GAP + RING_PX) & ~grown(RING_GAP)) | fill_holes(mask)) & ~mask
    if box is not None:
        x0, y0, x1, y1 = box
        inside = np.zeros(mask.shape, bool)
        inside[y0:y1, x0:x1] = True
        out &= inside
    return out


def continues(img: np.ndarray, ring: np.ndarray, src: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Which pixels of `ring` (in `img`) carry on the colour of the object beside them: within `EDGE_DE`
    (CIELAB, lightness at `EDGE_L_WEIGHT`) of the mean colour of the object's pixels (in `src`, the mask
    eroded by `RING_GAP`) nearest them. Where the mask's outline runs along an edge of the photo, what lies
    past it is another surface, even in the object's colours (a white rocket against a pale sky, a grey
    name tag on a black jacket); a part of the object the mask missed has no edge there: its colour goes on
    across the outline (shading moves the lightness most, so lightness counts for less)."""
    import cv2
    from scipy import ndimage

    out = np.zeros(ring.shape, bool)
    core = cv2.erode(mask.astype(np.uint8), np.ones((2 * RING_GAP + 1,) * 2, np.uint8)).astype(bool)
    if not core.any():
        core = mask
    if not ring.any() or not core.any():
        return out
    weight = np.array([EDGE_L_WEIGHT, 1.0, 1.0], np.float32)
    lab_src = to_lab(cv2.blur(src, (3, 3))).reshape(*src.shape[:2], 3) * weight
    sums = np.where(core[..., None], lab_src, 0.0)
    k = 2 * EDGE_NEAR_PX + 1
    mean = (
        cv2.blur(sums.astype(np.float32), (k, k))
        / np.maximum(cv2.blur(core.astype(np.float32), (k, k)), 1e-6)[..., None]
    )
    _, (iy, ix) = ndimage.distance_transform_edt(~core, return_indices=True)
    ys, xs = np.nonzero(ring)
    near = mean[iy[ys, xs], ix[ys, xs]]
    here = to_lab(cv2.blur(img, (3, 3))[ys, xs]) * weight
    out[ys, xs] = np.linalg.norm(here - near, axis=-1) <= EDGE_DE
    return out


def like_outside(crop: np.ndarray, mask: np.ndarray, carry: np.ndarray, old: str) -> float:
    """The share of the pixels `around` the mask whose colour is one the object's old-coloured pixels have
    (`like`) and carries on the object's colour beside it (`continues`): the part of the object a partial
    mask left out, which would keep the old colour (an arm, a shaded side)."""
    ring = around(mask)
    if ring.sum() < 10 or not carry.any():
        return 0.0
    return float((like(crop, ring, clear(crop, carry, old)) & continues(crop, ring, crop, mask))[ring].mean())


def like_around(
    src: np.ndarray, cand: np.ndarray, mask: np.ndarray, carry: np.ndarray, old: str, box: tuple[int, int, int, int]
) -> float:
    """After an edit: the share of the pixels `around` the mask, inside the box, that still have the
    object's old colours (those of the source's old-coloured pixels) and carry on the source object's colour
    beside them (`continues`): what a partial mask left unrecoloured."""
    ring = around(mask, box)
    if ring.sum() < 10 or not carry.any():
        return 0.0
    kept = like(cand, ring, clear(src, carry, old), src) & continues(cand, ring, src, mask)
    return float(kept[ring].mean())
