"""`OpenCVInpainter`: the offline inpainting backend ("classical edits that need no weights").

- "recolor": the object's mask is cut inside its box (`core.pixels.whole`: GrabCut, with its trust and the
  check that the box does not cut the object) and the pixels that carry its old colour are dyed in CIELAB
  (`core.pixels.recolour`): lightness kept pixel by pixel (shading, texture, print), chroma and hue moved to
  a shade of the new colour, white / grey / black by lightness bands. Before painting, `refusal` says why an
  object cannot be recoloured convincingly (a mask that is not the whole object, a source that does not read
  as its old colour, several colours, its colours just outside the mask, no shade that verifies).
- "remove": `cv2.inpaint` over the object's whole mask, grown a few pixels; refused before painting unless
  the mask is a real outline (not the centre-seeded guess) of a whole, small object on plain surroundings:
  anything else becomes a smooth blob, streaks, or leaves part of the object standing.
- "replace": copy-paste of a `donor` crop (a real object of the new kind from another image): the old
  object is removed first (Telea inpainting over its GrabCut mask), then the donor's GrabCut mask is
  fitted inside the box (aspect kept, bottom-centred, feathered) and alpha-blended in. On real photos this
  never looked like a photograph (docs/image_negatives.md): the kinds that need it are off by default
  offline and made only when `images.types` names them.

The N candidates of a job are N different edits, seeded by (job.seed, job.key, k): a recolour's candidate k
is shade k of the new colour (and, past the shades, its mask one pixel smaller or larger); a removal's
fills with another method, radius and mask margin; a replacement jitters the donor's scale, offset and
feathering. Masks are computed once per region on the source (the object to edit is the source's).
Every candidate is the source outside the union of the job's boxes dilated by `dilate_px`, bit for bit.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintJob, Rect
from hardneg.core.errors import MissingDependency
from hardneg.core.pixels import recolour as dye
from hardneg.core.pixels.masks import grabcut
from hardneg.core.pixels.whole import Whole, whole_object
from hardneg.core.plugins import INPAINT_BACKENDS

if TYPE_CHECKING:
    from hardneg.backends.requirements import Requirement
    from hardneg.core.config import RunConfig


logger = logging.getLogger(__name__)

RGB = tuple[int, int, int]

# GrabCut itself (its working size, and the least share of the box a cut must keep, below which the whole
# box is used) is core/pixels/masks.py's, shared with the pixel evidence checks.
# A replacement's donor must hide at least this share of the old object's pixels: the rest is Telea fill,
# which over a large area is a smear a person sees at once (a window frame in a streaked plate's place).
MIN_DONOR_COVER = 0.75
# What a removal needs to look like a photograph (docs/image_negatives.md has what was measured):
MAX_REMOVE_AREA = 0.04  # of the photo: the box of an object to remove (a large fill is a visible smear)
PLAIN_TEXTURE = 0.012  # the surroundings' median fine detail (local texture, 0..1): plain, not grass or gravel
PLAIN_SPREAD = 10.0  # CIELAB: the surroundings' median distance to their median colour: one surface
# A removal's fills: (method, radius, mask margin); candidates past the list draw their own.
FILLS = (("INPAINT_TELEA", 5, 3), ("INPAINT_NS", 5, 4), ("INPAINT_TELEA", 9, 5), ("INPAINT_NS", 3, 2))


def _clip_box(box: tuple[int, int, int, int], width: int, height: int) -> Rect:
    """GQA boxes can spill past the image edge: clip; an empty result is an error."""
    x, y, w, h = (int(v) for v in box)
    r = Rect(max(0, x), max(0, y), min(width, x + w), min(height, y + h))
    if r.w < 1 or r.h < 1:
        raise ValueError(f"edit box {box} is empty inside the {width}x{height} image")
    return r


def _object(src: np.ndarray, region: EditRegion, seed: int, digest: bytes | None) -> tuple[Any, ...]:
    inside = region.inside if region.op == "recolor" else ()
    return (digest or hashlib.blake2b(src.data, digest_size=16).digest(), tuple(region.box), seed, inside)


def _candidate_seed(seed: int, key: str, k: int) -> int:
    """A 63-bit seed from (job seed, job key, candidate index): stable across runs and platforms."""
    digest = hashlib.blake2b(f"{seed}\x1f{key}\x1f{k}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _grabcut(rgb: np.ndarray, rect: Rect, iters: int, seed: int) -> np.ndarray | None:
    """GrabCut's foreground inside `rect` of `rgb` (bool, rgb-sized), or None when it finds nothing usable:
    the box-initialised cut of `core/pixels/masks.py`."""
    return grabcut(rgb, (rect.x0, rect.y0, rect.x1, rect.y1), iters, seed)


def _morph(mask: np.ndarray, px: int) -> np.ndarray:
    """Dilate (px > 0) or erode (px < 0) a bool mask by |px| pixels."""
    import cv2

    if px == 0:
        return mask
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * abs(px) + 1, 2 * abs(px) + 1))
    op = cv2.dilate if px > 0 else cv2.erode
    return op(mask.astype(np.uint8), kernel).astype(bool)


def _feather(mask: np.ndarray, sigma: float) -> np.ndarray:
    """A soft alpha (float32, HxWx1) from a bool mask (the probes' backgrounds blend with it)."""
    import cv2

    alpha = mask.astype(np.float32)
    if sigma > 0:
        alpha = cv2.GaussianBlur(alpha, (0, 0), sigma)
    return alpha[..., None]


@INPAINT_BACKENDS.add("opencv", order=10)
class OpenCVInpainter:
    """Classical edits for FineCops-Ref negative images: GrabCut recolouring, copy-paste
    of a donor object, Telea removal. Deterministic, CPU-only, no weights."""

    version = "opencv-inpaint@v1"
    copies_donors = True  # a "replace" pastes its donor crop: the crop's looks are what the picture shows
    generative = False  # makes by default only the kinds whose offline edits are verified (`ImageType.offline`)

    @classmethod
    def from_config(cls, cfg: RunConfig) -> OpenCVInpainter:
        return cls(dilate_px=cfg.images.opencv_dilate_px)

    @classmethod
    def requirements(cls, cfg: RunConfig) -> list[Requirement]:
        return []  # OpenCV is a dependency of the package

    def __init__(self, dilate_px: int = 6, grabcut_iters: int = 5) -> None:
        """
        dilate_px: px the union of edit boxes grows by before the source is pasted back outside it; edits
            (feathering, removal rings) stay inside this margin.
        grabcut_iters: GrabCut iterations per object mask (more: tighter masks, slower).
        """
        if dilate_px < 0:
            raise ValueError(f"dilate_px must be >= 0, got {dilate_px}")
        if grabcut_iters < 1:
            raise ValueError(f"grabcut_iters must be >= 1, got {grabcut_iters}")
        if importlib.util.find_spec("cv2") is None:  # imported where it is used: the registry loads no library
            raise MissingDependency("OpenCVInpainter needs OpenCV: pip install 'opencv-python-headless>=4.8'")
        self.dilate_px = dilate_px
        self.grabcut_iters = grabcut_iters
        self._wholes: dict[tuple[Any, ...], Whole] = {}
        self._recolours: dict[tuple[Any, ...], str | None] = {}  # (object, old colour, new colour) -> refusal
        self._last: tuple[Image.Image, np.ndarray, bytes] | None = None  # the photo `refusal` last read

    def supports(self, region: EditRegion) -> bool:
        if region.op == "recolor":
            return dye.paintable(region.color) is not None
        if region.op == "replace":
            return region.donor is not None  # copy-paste only: opencv cannot draw "a wooden cup"
        return region.op == "remove"

    def whole(self, src: np.ndarray, region: EditRegion, seed: int = 0, digest: bytes | None = None) -> Whole:
        """The object's mask in `region`'s box, with its trust (`core.pixels.whole`), kept for the next word."""
        return self._whole(_object(src, region, seed, digest), src, region, seed)

    def _photo(self, image: Image.Image) -> tuple[np.ndarray, bytes]:
        """The photo's RGB pixels and digest, kept while a search asks about one image (many times in a row)."""
        last = self._last  # one read: a thread asking about another photo meanwhile cannot swap it under us
        if last is None or last[0] is not image:
            src = np.asarray(image.convert("RGB"))
            last = self._last = (image, src, hashlib.blake2b(src.data, digest_size=16).digest())
        return last[1], last[2]

    def _whole(self, key: tuple[Any, ...], src: np.ndarray, region: EditRegion, seed: int) -> Whole:
        if key not in self._wholes:
            if len(self._wholes) >= 32:
                self._wholes.pop(next(iter(self._wholes)))
            self._wholes[key] = whole_object(src, region.box, seed=seed, iters=self.grabcut_iters, inside=key[3])
        return self._wholes[key]

    def refusal(self, image: Image.Image, region: EditRegion, seed: int = 0) -> str | None:
        """Why this region would not look like a photograph, or would not be the edit it claims, known
        before painting, or None:
        - a recolour: `core.pixels.recolour.refusal` (its mask is not the whole object, it does not read as
          its old colour, it has several, its colours go on outside the mask, no shade verifies);
        - a removal: the mask is not a real outline of the whole object, or the object is large, or its
          surroundings are textured or of several colours (`removal_refusal`);
        - a replacement: no object outline in the box (the whole box would be smeared), a donor whose own
          outline is not found (pasted as a rectangle), or one that, fitted into the box as candidate 0
          places it, hides less than `MIN_DONOR_COVER` of the old object (the rest would be smeared)."""
        import cv2

        if not self.supports(region):
            return None
        src, digest = self._photo(image)
        height, width = src.shape[:2]
        box = _clip_box(region.box, width, height)
        if region.op == "recolor":  # a search asks about one object for every colour it tries, often again
            obj = _object(src, region, seed, digest)
            whole = self._whole(obj, src, region, seed)
            old = region.source_color or whole.dominant(src)
            if old is None:
                return "its colour cannot be read: the recolour could not be checked"
            if (key := (obj, old, region.color)) not in self._recolours:
                if len(self._recolours) >= 1024:
                    self._recolours.pop(next(iter(self._recolours)))
                self._recolours[key] = dye.refusal(src, whole, old, region.color)  # type: ignore[arg-type]
            return self._recolours[key]
        if region.op == "remove":
            return removal_refusal(src, self.whole(src, region, seed, digest))
        margin = max(self.dilate_px + 10, round(0.2 * max(box.w, box.h)))
        win = box.grow(margin, width, height)
        rect = Rect(box.x0 - win.x0, box.y0 - win.y0, box.x1 - win.x0, box.y1 - win.y0)
        fg = _grabcut(src[win.slices()], rect, self.grabcut_iters, seed)
        if fg is None:
            return "no object outline found in its box: the whole box would be smeared"
        d_rgb, d_mask = self._donor_cut(region.donor, seed)  # type: ignore[arg-type]
        if d_mask is None:
            return "the donor's outline is not found in its crop: it would be pasted as a rectangle"
        dh, dw = d_rgb.shape[:2]
        s = min(rect.w / dw, rect.h / dh)
        nw, nh = max(1, min(rect.w, round(dw * s))), max(1, min(rect.h, round(dh * s)))
        x, y = rect.x0 + (rect.w - nw) // 2, rect.y1 - nh  # where candidate 0 puts it: bottom-centred
        placed = np.zeros(fg.shape, bool)
        placed[y : y + nh, x : x + nw] = (
            cv2.resize(d_mask.astype(np.uint8), (nw, nh), interpolation=cv2.INTER_NEAREST) > 0
        )
        cover = float((fg & placed).sum()) / max(int(fg.sum()), 1)
        if cover < MIN_DONOR_COVER:
            need = f"{MIN_DONOR_COVER:.0%}"
            return f"the donor hides {cover:.0%} of the object it replaces (needs {need}): the rest would be smeared"
        return None

    def run(self, jobs: Sequence[InpaintJob]) -> list[list[Image.Image]]:
        out = []
        for job in jobs:
            t0 = time.perf_counter()
            out.append(self._run_job(job))
            logger.debug("%s: %d candidates in %.3fs", job.key, job.n, time.perf_counter() - t0)
        return out

    # -- one job ---------------------------------------------------------------------------------------

    def _run_job(self, job: InpaintJob) -> list[Image.Image]:
        if job.n < 0:
            raise ValueError(f"job {job.key}: n must be >= 0, got {job.n}")
        if not job.regions:
            raise ValueError(f"job {job.key}: no regions to edit")
        for region in job.regions:
            if not self.supports(region):
                raise ValueError(f"job {job.key}: {self.version} cannot {region.op} {region.box} ({region.color=})")
        src = np.asarray(job.image.convert("RGB"))
        height, width = src.shape[:2]
        boxes = [_clip_box(r.box, width, height) for r in job.regions]
        # Per region, computed once on the source: the working window and the object's mask inside it.
        windows, masks, olds = [], [], []
        for i, (region, box) in enumerate(zip(job.regions, boxes, strict=True)):
            margin = max(self.dilate_px + 10, round(0.2 * max(box.w, box.h)))  # context for GrabCut and Telea
            win = box.grow(margin, width, height)
            rect = Rect(box.x0 - win.x0, box.y0 - win.y0, box.x1 - win.x0, box.y1 - win.y0)
            old = None
            if region.op == "replace":  # the copy-paste backend's own cut, as before
                fg = _grabcut(src[win.slices()], rect, self.grabcut_iters, _candidate_seed(job.seed, job.key, -1 - i))
                if fg is None:
                    logger.debug("%s: no GrabCut mask for %s, using the whole box", job.key, region.box)
                    fg = np.zeros((win.h, win.w), bool)
                    fg[rect.slices()] = True
            else:  # the same cut `refusal` judged (seed 0): what was checked is what is painted
                whole = self.whole(src, region)
                fg = whole.mask.full(src.shape)[win.slices()]
                if region.op == "recolor":
                    old = region.source_color or whole.dominant(src) or "white"
            windows.append((win, rect))
            masks.append(fg)
            olds.append(old)
        donors = [
            self._donor(r.donor, job.seed, job.key, i) if r.op == "replace" else None for i, r in enumerate(job.regions)
        ]

        keep = np.zeros((height, width), bool)  # union of dilated boxes: the only pixels a candidate may change
        for box in boxes:
            keep[box.grow(self.dilate_px, width, height).slices()] = True

        candidates = []
        removed: dict[bytes, np.ndarray] = {}  # this job's removals, shared by its candidates
        for k in range(job.n):
            rng = np.random.default_rng(_candidate_seed(job.seed, job.key, k))
            img = src.copy()
            for region, (win, rect), fg, donor, old in zip(job.regions, windows, masks, donors, olds, strict=True):
                view = img[win.slices()]
                if region.op == "recolor":
                    view[:] = self._recolor(view, fg, old, region.color, k)  # type: ignore[arg-type]
                elif region.op == "replace":
                    view[:] = self._replace(view, fg, rect, donor, rng, k, removed)  # type: ignore[arg-type]
                else:
                    view[:] = self._remove(view, fg, rng, k)
            out = src.copy()
            out[keep] = img[keep]  # the source, bit for bit, outside the dilated boxes
            candidates.append(Image.fromarray(out, "RGB"))
        return candidates

    # -- edits on a window (uint8 RGB in, uint8 RGB out) ------------------------------------------------

    def _recolor(self, win: np.ndarray, fg: np.ndarray, old: str, new: str, k: int) -> np.ndarray:
        """Candidate k of a recolour: shade k of the new colour; past the shades, the mask a pixel smaller,
        then larger (`core.pixels.recolour.recolour` picks the lightness shift that verifies)."""
        n = len(dye.shades(new))
        variant = (k // n) % 3
        mask = fg if variant == 0 else _morph(fg, -1 if variant == 1 else 1) & (fg if variant == 1 else True)
        done = dye.recolour(win, mask if mask.any() else fg, old, new, k)
        if done is None:  # no lightness shift is possible: the plain dye, which the edit checks will reject
            return dye.paint(win, dye.members(win, fg, old), new, dye.shades(new)[k % n], 0.0)
        return done.rgb

    def _remove(self, win: np.ndarray, fg: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
        """Candidate k of a removal: fill k of `FILLS` (method, radius, margin), or one drawn past them."""
        import cv2

        if k < len(FILLS):
            name, radius, grow = FILLS[k]
            method = getattr(cv2, name)
        else:
            method = (cv2.INPAINT_TELEA, cv2.INPAINT_NS)[int(rng.integers(0, 2))]
            radius, grow = int(rng.integers(3, 10)), int(rng.integers(2, 6))
        hole = _morph(fg, min(grow, self.dilate_px)).astype(np.uint8) * 255  # the ring hides the outline
        bgr = np.ascontiguousarray(win[..., ::-1])
        return cv2.inpaint(bgr, hole, radius, method)[..., ::-1]

    def _replace(
        self,
        win: np.ndarray,
        fg: np.ndarray,
        rect: Rect,
        donor: tuple[np.ndarray, np.ndarray],
        rng: np.random.Generator,
        k: int,
        removed: dict[bytes, np.ndarray],
    ) -> np.ndarray:
        # Remove first, so old parts the donor does not cover vanish. The removal is the same for every
        # candidate (they differ in how the donor is placed), so it is computed once per window.
        import cv2

        key = hashlib.blake2b(win.tobytes() + fg.tobytes(), digest_size=16).digest()
        base = removed.get(key)
        if base is None:
            base = removed.setdefault(key, self._remove(win, fg, rng, 0))
        d_rgb, d_mask = donor
        if k > 0:
            scale, shift, sigma = rng.uniform(0.85, 1.0), rng.uniform(-0.06, 0.06), rng.uniform(0.8, 2.0)
        else:
            scale, shift, sigma = 1.0, 0.0, 1.2
        dh, dw = d_rgb.shape[:2]
        s = min(rect.w / dw, rect.h / dh) * scale  # fit inside the box, aspect kept
        nw, nh = max(1, min(rect.w, round(dw * s))), max(1, min(rect.h, round(dh * s)))
        interp = cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR
        patch = cv2.resize(d_rgb, (nw, nh), interpolation=interp).astype(np.float32)
        alpha = cv2.resize(d_mask.astype(np.float32), (nw, nh), interpolation=cv2.INTER_LINEAR)
        slack = rect.w - nw
        x = rect.x0 + int(np.clip(round(slack / 2 + shift * rect.w), 0, slack))  # bottom-centred, nudged
        y = rect.y1 - nh
        full = np.zeros(win.shape[:2], np.float32)
        full[y : y + nh, x : x + nw] = alpha
        layer = np.zeros(win.shape, np.float32)
        layer[y : y + nh, x : x + nw] = patch
        a = cv2.GaussianBlur(full, (0, 0), sigma)[..., None] if sigma > 0 else full[..., None]
        a = np.minimum(a, full[..., None] > 0)  # feather inwards only: never paint donor-crop background
        return np.clip(a * layer + (1.0 - a) * base + 0.5, 0, 255).astype(np.uint8)

    def _donor(self, donor: Image.Image | None, seed: int, key: str, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The donor crop and its object mask. The crop is usually tight around the object, so GrabCut gets
        a replicated border as the background sample; a failed cut keeps the whole crop."""
        if donor is None:
            raise ValueError(f"job {key}: replace region {i} has no donor")
        if donor.width < 1 or donor.height < 1:
            raise ValueError(f"job {key}: empty donor crop in region {i}")
        rgb, mask = self._donor_cut(donor, _candidate_seed(seed, key, -100 - i))
        return rgb, mask if mask is not None else np.ones(rgb.shape[:2], bool)

    def _donor_cut(self, donor: Image.Image, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The donor crop and GrabCut's object mask in it (None when it finds none)."""
        import cv2

        rgb = np.asarray(donor.convert("RGB"))
        h, w = rgb.shape[:2]
        pad = max(4, round(0.1 * max(h, w)))
        padded = cv2.copyMakeBorder(rgb, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        fg = _grabcut(padded, Rect(pad, pad, pad + w, pad + h), self.grabcut_iters, seed)
        return rgb, fg[pad : pad + h, pad : pad + w] if fg is not None else None


def removal_refusal(src: np.ndarray, whole: Whole) -> str | None:
    """Why removing the object `whole` would not look like a photograph, or would leave it standing, or
    None: its mask is not a real outline of all of it (`Whole.problems`, or the centre-seeded guess), its
    box is more than `MAX_REMOVE_AREA` of the photo, or its surroundings (a ring around the box) are not
    one plain surface (fine detail above `PLAIN_TEXTURE`, colours spread beyond `PLAIN_SPREAD`)."""
    import cv2

    from hardneg.core.colors import to_lab

    if not whole.usable:
        return "its mask is not the whole object: " + "; ".join(whole.problems)
    if whole.seeded:
        return whole.seeded
    height, width = src.shape[:2]
    x0, y0, x1, y1 = whole.mask.box
    if (x1 - x0) * (y1 - y0) > MAX_REMOVE_AREA * height * width:
        return f"it covers {(x1 - x0) * (y1 - y0) / (height * width):.0%} of the photo: a fill that large is a smear"
    pad = max(8, round(0.25 * max(x1 - x0, y1 - y0)))
    wx0, wy0, wx1, wy1 = max(0, x0 - pad), max(0, y0 - pad), min(width, x1 + pad), min(height, y1 + pad)
    ring = np.ones((wy1 - wy0, wx1 - wx0), bool)
    ring[max(0, y0 - 3 - wy0) : y1 + 3 - wy0, max(0, x0 - 3 - wx0) : x1 + 3 - wx0] = False
    window = src[wy0:wy1, wx0:wx1]
    if ring.sum() < 32:
        return "no surroundings to fill it from"
    grey = cv2.cvtColor(np.ascontiguousarray(window), cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
    detail = cv2.blur(np.abs(grey - cv2.GaussianBlur(grey, (0, 0), 2.0)), (7, 7))
    texture = float(np.median(detail[ring]))
    if texture > PLAIN_TEXTURE:
        return f"its surroundings are textured (fine detail {texture:.3f}, at most {PLAIN_TEXTURE}): a fill is a blob"
    lab = to_lab(window[ring])
    spread = float(np.median(np.linalg.norm(lab - np.median(lab, axis=0), axis=1)))
    if spread > PLAIN_SPREAD:
        return f"its surroundings are not one surface (colour spread {spread:.0f}, at most {PLAIN_SPREAD:.0f})"
    return None
