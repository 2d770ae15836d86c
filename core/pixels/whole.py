"""Whether an object's mask is the whole object: what an edit of the object needs before it is made.

An edit that recolours or removes only the part of an object its mask found leaves the rest standing: the
lower half of a straw under a box drawn round its top, a glass's stem below a box round its bowl, a white
truck's shaded side when the mask took only its sunlit face. `whole_object(rgb, box)` takes the object's
mask (`core.pixels.masks.object_mask`, GrabCut inside the box) and adds to its own trust numbers the
question the mask alone cannot answer: does the object go on past its box?

A box is drawn round the whole object, so its mask reaches across it: a mask whose extent is under
`MIN_SPAN` of the box's width or height has missed part of the object (a clock's dial above the pole the
cut found), or found something else.

A side of the box **cuts** the object when, on that side (not at the photo's border):
- the mask runs along it: the mask's pixels in the `BAND_PX` rows (or columns) at the side span at least
  `CUT_CONTACT` of the mask's span a little inside (`INNER_DEPTH` of the box's depth from the side), and at
  least `MIN_CONTACT_PX` px; an object that ends inside its box touches the side at a point, or narrower
  than it is just inside;
- and the photo carries on across the side in the object's colours: the mean CIELAB colour of the
  `OUTSIDE_PX` px just beyond the side, along the contact, is within `CONTINUE_DE` of the mask's own along
  the side. A television whose bottom edge meets its box's bottom stands on something else; a straw cut by
  its box is straw on both sides.

`Whole.problems` lists the mask's own problems (`ObjectMask.problems`, the whole-box fallback among them)
and each cut side; an edit is made only on a mask with no problem (`Whole.usable`). `Whole.seeded` says
when only the centre-seeded cut found the object: its mask is a guess of what the box centre shows, which
a recolour may use when the colours agree (`core.pixels.recolour.refusal` checks them) and a removal not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hardneg.core.pixels.masks import GRABCUT_ITERS, ObjectMask, object_mask

BAND_PX = 2
INNER_DEPTH = 0.12
CUT_CONTACT = 0.5
MIN_CONTACT_PX = 3
OUTSIDE_PX = 4
CONTINUE_DE = 15.0
TIP_PX = 2  # px beyond a side where a thin part of the mask meets it: does the object go on?
MIN_SPAN = 0.85  # of the box's width and height: a box is drawn round the object, its mask reaches across it
RIM_PX = 8  # px: how far into a left-out object's cut the object's own pixels are looked for
LEAVE_OUT_PX = 2  # px an object annotated inside the box is grown by before it is left out of the mask
EDIT_MAX_SIDE = 256  # px: edits cut their masks finer than the checks' 128 (a recolour's edge is seen)

SIDES = ("top", "bottom", "left", "right")


@dataclass(frozen=True, slots=True)
class Whole:
    """An object's mask and whether it is the whole object (module docstring)."""

    mask: ObjectMask
    cut: tuple[str, ...]  # the sides of the box that cut the object

    @property
    def span(self) -> tuple[float, float]:
        """The mask's extent over the box's, across and down (a box is drawn round the whole object)."""
        rows, cols = self.mask.mask.any(axis=1), self.mask.mask.any(axis=0)
        if not rows.any():
            return 0.0, 0.0
        h, w = self.mask.mask.shape
        r, c = np.nonzero(rows)[0], np.nonzero(cols)[0]
        return (c[-1] - c[0] + 1) / w, (r[-1] - r[0] + 1) / h

    @property
    def problems(self) -> tuple[str, ...]:
        out = list(self.mask.problems)
        across, down = self.span
        if self.mask.method != "box" and min(across, down) < MIN_SPAN:
            out.append(
                f"spans {across:.0%} of its box's width and {down:.0%} of its height: part of the object is missed"
            )
        out += [f"the object goes on past its box's {side} side: the edit would leave that part" for side in self.cut]
        return tuple(out)

    @property
    def usable(self) -> bool:
        return not self.problems

    @property
    def seeded(self) -> str | None:
        """Why the mask is a guess, when only the centre-seeded cut found the object (it shows what the box
        centre holds: what a removal must not rely on), else None."""
        if self.mask.method != "seeded":
            return None
        return "only the centre-seeded cut found it: the mask is what the box centre shows, a guess"

    def dominant(self, rgb: np.ndarray) -> str | None:
        """The colour term most of the object shows in the photo `rgb` (its old colour when a graph names none)."""
        from hardneg.core.colors import read_colours

        x0, y0, x1, y1 = self.mask.box
        return read_colours(rgb[y0:y1, x0:x1], self.mask.mask).dominant


def _side_views(rgb: np.ndarray, rect: tuple[int, int, int, int], side: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The box's rows (or columns) at `side`, seen as (mask band index arrays), and the photo beyond it:
    returns (inside strip of the image, outside strip) oriented so axis 0 runs away from the side, or None
    when the side is at the photo's border."""
    x0, y0, x1, y1 = rect
    height, width = rgb.shape[:2]
    if side == "top":
        if y0 < OUTSIDE_PX:
            return None
        return rgb[y0 : y0 + OUTSIDE_PX, x0:x1], rgb[y0 - OUTSIDE_PX : y0, x0:x1][::-1]
    if side == "bottom":
        if y1 > height - OUTSIDE_PX:
            return None
        return rgb[y1 - OUTSIDE_PX : y1, x0:x1][::-1], rgb[y1 : y1 + OUTSIDE_PX, x0:x1]
    if side == "left":
        if x0 < OUTSIDE_PX:
            return None
        inside, outside = rgb[y0:y1, x0 : x0 + OUTSIDE_PX], rgb[y0:y1, x0 - OUTSIDE_PX : x0][:, ::-1]
    else:
        if x1 > width - OUTSIDE_PX:
            return None
        inside, outside = rgb[y0:y1, x1 - OUTSIDE_PX : x1][:, ::-1], rgb[y0:y1, x1 : x1 + OUTSIDE_PX]
    return inside.transpose(1, 0, 2), outside.transpose(1, 0, 2)


def _oriented(mask: np.ndarray, side: str) -> np.ndarray:
    """The box-sized mask turned so that row 0 is at `side` and rows run into the box."""
    if side == "top":
        return mask
    if side == "bottom":
        return mask[::-1]
    if side == "left":
        return mask.T
    return mask[:, ::-1].T


def cut_sides(rgb: np.ndarray, mask: ObjectMask) -> tuple[str, ...]:
    """The sides of the mask's box that cut the object (module docstring)."""
    from hardneg.core.colors import to_lab

    out = []
    for side in SIDES:
        views = _side_views(rgb, mask.box, side)
        if views is None:
            continue
        m = _oriented(mask.mask, side)
        depth = m.shape[0]
        contact = m[:BAND_PX].any(axis=0)
        inner = m[max(BAND_PX, round(INNER_DEPTH * depth)) : max(BAND_PX + 1, round(2 * INNER_DEPTH * depth))]
        span = inner.any(axis=0).sum() if inner.size else 0
        if not contact.any():
            continue
        inside, outside = views
        wide = contact.sum() >= max(MIN_CONTACT_PX, CUT_CONTACT * span)
        crossed = wide and _continues(inside, outside, m, np.nonzero(contact)[0], to_lab)
        if crossed or any(_tip_continues(inside, outside, m, cols, to_lab) for cols in _runs(contact)):
            out.append(side)
    return tuple(out)


def _runs(contact: np.ndarray) -> list[np.ndarray]:
    """The runs of touching columns along a side where a thin part of the mask meets it: each run is a
    point or a tip (a star's lowest point, a pole's end), checked on its own."""
    cols = np.nonzero(contact)[0]
    return [r for r in np.split(cols, np.nonzero(np.diff(cols) > 1)[0] + 1) if r.size]


def _continues(inside: np.ndarray, outside: np.ndarray, m: np.ndarray, cols: np.ndarray, to_lab) -> bool:
    """Whether the photo beyond the side, along `cols`, carries on in the mask's colour there."""
    own = m[:OUTSIDE_PX][:, cols]
    if not own.any():
        return False
    lab_in = to_lab(inside[:, cols][own])
    lab_out = to_lab(outside[:, cols].reshape(-1, 3))
    return float(np.linalg.norm(lab_in.mean(axis=0) - lab_out.mean(axis=0))) <= CONTINUE_DE


def _tip_continues(inside: np.ndarray, outside: np.ndarray, m: np.ndarray, cols: np.ndarray, to_lab) -> bool:
    """Whether a thin part of the mask that meets the side goes on past it: most of the `TIP_PX` rows just
    beyond the side, along the run, are within `CONTINUE_DE` of the mask's colour there, pixel by pixel (a
    tip narrows and may lean: the mean of the strip beyond is half ground), and more than that from the
    ground beyond the side away from the object (what lies beyond is the tip, not the ground it stands on)."""
    own = m[:OUTSIDE_PX][:, cols]
    if not own.any():
        return False
    ground = np.ones(m.shape[1], bool)
    ground[max(0, cols[0] - OUTSIDE_PX) : cols[-1] + 1 + OUTSIDE_PX] = False
    ground &= ~m[:BAND_PX].any(axis=0)
    if not ground.any():
        return False
    lab_in = to_lab(inside[:, cols][own]).mean(axis=0)
    lab_out = to_lab(outside[:TIP_PX, cols].reshape(-1, 3))
    lab_ground = to_lab(outside[:TIP_PX, ground].reshape(-1, 3))
    beyond = float(np.median(np.linalg.norm(lab_out - lab_in, axis=1)))
    apart = float(np.median(np.linalg.norm(lab_out - np.median(lab_ground, axis=0), axis=1)))
    return beyond <= CONTINUE_DE < apart


def whole_object(
    rgb: np.ndarray,
    box: Sequence[float],
    *,
    seed: int = 0,
    iters: int = GRABCUT_ITERS,
    max_side: int = EDIT_MAX_SIDE,
    inside: Sequence[Sequence[float]] = (),
) -> Whole:
    """The object in `box` (xywh) of the RGB uint8 photo, and whether its mask is all of it; the objects
    annotated `inside` its box (xywh each) are left out of the mask (`leave_out`)."""
    mask = object_mask(rgb, box, seed=seed, iters=iters, max_side=max_side)
    cut = cut_sides(rgb, mask) if mask.method != "box" else ()
    whole = Whole(mask, cut)
    if not inside:
        return whole
    return leave_out(rgb, whole, inside, seed=seed, iters=iters, max_side=max_side)


def leave_out(
    rgb: np.ndarray,
    whole: Whole,
    inside: Sequence[Sequence[float]],
    *,
    seed: int = 0,
    iters: int = GRABCUT_ITERS,
    max_side: int = EDIT_MAX_SIDE,
) -> Whole:
    """`whole` without the objects annotated inside its box: each one's own mask (`object_mask` in its
    box), grown by `LEAVE_OUT_PX`, or its whole box when no outline of it is found. A teddy bear sitting on
    a pillow is in the pillow's box, and a cut of the pillow takes it in (it stands out from the bed as the
    pillow does); recoloured with the pillow, it would be tinted too. A part annotated inside in the
    object's own colour (a white shirt's pocket) is left out too: it keeps the old colour, which the
    `edits` filter's own reading of the whole object sees. A cut of the object inside takes in a rim of
    what it sits on: the pixels of that rim, within `RIM_PX` of the rest, whose colour carries on the
    object's beside them with no edge between (`recolour.continues`) are given back to the object, so no
    halo of the old colour is left round what sits on it."""
    import cv2

    x0, y0, x1, y1 = whole.mask.box
    drop = np.zeros(rgb.shape[:2], bool)
    for b in inside:
        other = object_mask(rgb, b, seed=seed, iters=iters, max_side=max_side)
        ox0, oy0, ox1, oy1 = other.box
        drop[oy0:oy1, ox0:ox1] |= other.mask if other.usable else True
    if not drop[y0:y1, x0:x1].any():
        return whole
    k = np.ones((2 * LEAVE_OUT_PX + 1, 2 * LEAVE_OUT_PX + 1), np.uint8)
    grown = cv2.dilate(drop.astype(np.uint8), k).astype(bool)
    kept = whole.mask.mask & ~grown[y0:y1, x0:x1]
    if kept.any():  # the rim of the cut-out that is the object itself: no edge between it and the object
        from scipy import ndimage

        from hardneg.core.pixels.recolour import continues

        crop = np.ascontiguousarray(rgb[y0:y1, x0:x1])
        rim = whole.mask.mask & ~kept & (ndimage.distance_transform_edt(~kept) <= RIM_PX)
        kept = kept | continues(crop, rim, crop, kept)
    return Whole(replace(whole.mask, mask=kept), whole.cut)
