"""`OpenCVInpainter`: the offline inpainting backend ("classical edits that need no weights").

- "recolor": the object is segmented inside its box by GrabCut (`cv2.grabCut`, GC_INIT_WITH_RECT) and
  recoloured in CIE LAB: lightness is moved to the target colour's while keeping the object's own
  lightness variation (shading, pattern, grain), and chroma is set to the target's, scaled per pixel by
  the object's relative chroma so highlights and dark outlines stay neutral. Achromatic targets (white,
  black, gray, silver) have no hue and change lightness only.
- "replace": copy-paste of a `donor` crop (a real object of the new kind from another image): the old
  object is removed first (Telea inpainting over its GrabCut mask), then the donor's GrabCut mask is
  fitted inside the box (aspect kept, bottom-centred, feathered) and alpha-blended in.
- "remove": `cv2.inpaint` (Telea) over the dilated GrabCut mask.

The N candidates of a job are variations seeded by (job.seed, job.key, k): candidate 0 is the plain edit,
the others jitter hue / chroma / lightness and edge feathering (recolor), donor scale and offset
(replace), mask dilation and inpainting radius (remove). Object masks are computed once per region on the
source image (the object to edit is the source's), so candidates differ by the edit, not the segmentation.
Every candidate is the source outside the union of the job's boxes dilated by `dilate_px`, bit for bit.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence

import numpy as np
from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintJob, Rect
from hardneg.core.colors import COLORS
from hardneg.core.errors import MissingDependency
from hardneg.core.pixels.masks import fill_holes, grabcut

try:
    import cv2
except ImportError as e:  # pragma: no cover - depends on the environment
    raise MissingDependency("OpenCVInpainter needs OpenCV: pip install 'opencv-python-headless>=4.8'") from e

logger = logging.getLogger(__name__)

RGB = tuple[int, int, int]

# The colour table (GQA colour name -> a typical object RGB) lives in core/colors.py, shared with the
# edit checks that verify a recolour; re-exported here under its old name.

ACHROMATIC_CHROMA = 8.0  # LAB chroma below which a colour (or an object) counts as having no hue
HUE_TOLERANCE_DEG = 35.0  # pixels this far from the object's dominant hue are other parts (a flower's stem)
NEUTRAL_L_TOLERANCE = 25.0  # LAB L; for a neutral object, pixels this far from its lightness are other parts
# GrabCut itself (its working size, and the least share of the box a cut must keep, below which the whole
# box is used) is core/pixels/masks.py's, shared with the pixel evidence checks.
# A replacement's donor must hide at least this share of the old object's pixels: the rest is Telea fill,
# which over a large area is a smear a person sees at once (a window frame in a streaked plate's place).
MIN_DONOR_COVER = 0.75


def _clip_box(box: tuple[int, int, int, int], width: int, height: int) -> Rect:
    """GQA boxes can spill past the image edge: clip; an empty result is an error."""
    x, y, w, h = (int(v) for v in box)
    r = Rect(max(0, x), max(0, y), min(width, x + w), min(height, y + h))
    if r.w < 1 or r.h < 1:
        raise ValueError(f"edit box {box} is empty inside the {width}x{height} image")
    return r


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
    if px == 0:
        return mask
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * abs(px) + 1, 2 * abs(px) + 1))
    op = cv2.dilate if px > 0 else cv2.erode
    return op(mask.astype(np.uint8), kernel).astype(bool)


def _feather(mask: np.ndarray, sigma: float) -> np.ndarray:
    """A soft alpha (float32, HxWx1) from a bool mask."""
    alpha = mask.astype(np.float32)
    if sigma > 0:
        alpha = cv2.GaussianBlur(alpha, (0, 0), sigma)
    return alpha[..., None]


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    """`mask` with every enclosed hole filled (highlights, patterns and outlines inside an object)."""
    return fill_holes(mask)


def _colour_core(lab: np.ndarray, fg: np.ndarray, source: RGB | None = None) -> np.ndarray:
    """The part of the GrabCut mask that carries the object's colour: pixels of its dominant hue (or, for a
    white / black / grey object, neutral pixels of its dominant lightness), plus the holes inside them that
    are neutral or of that hue (highlights, stripes, outlines). A "red flower" has red petals: its yellow
    centre and green stem, or a black book resting on a red chair's seat, are not the colour to change."""
    lightness, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    chroma = np.hypot(a, b)
    neutral = chroma <= ACHROMATIC_CHROMA
    chromatic = fg & ~neutral
    # The colour the graph says the object has, when known, decides which part carries it: a white
    # flower's petals, not its yellow centre.
    src = _to_lab(np.array([[source]], np.uint8))[0, 0] if source is not None else None
    src_neutral = src is not None and float(np.hypot(src[1], src[2])) <= ACHROMATIC_CHROMA
    if (src is None and chromatic.sum() < 0.3 * fg.sum()) or (src_neutral and (fg & neutral).any()):
        member = neutral  # a neutral object: a grey house body, not its brown roof
        pool = lightness[fg & neutral]
        if src is not None:  # the neutral pixels nearest the named lightness (white petals, not a black outline)
            near_l = pool[np.abs(pool - src[0]) < 2 * NEUTRAL_L_TOLERANCE]
            pool = near_l if near_l.size else pool
        median_l = float(np.median(pool))
        core = fg & neutral & (np.abs(lightness - median_l) < NEUTRAL_L_TOLERANCE)
    elif not chromatic.any():
        return fg
    else:
        hue = np.degrees(np.arctan2(b, a)) % 360.0
        weights = chroma[chromatic]
        hist, _ = np.histogram(hue[chromatic], bins=36, range=(0.0, 360.0), weights=weights)
        peak = (np.argmax(hist) + 0.5) * 10.0
        if src is not None and not src_neutral:
            peak = float(np.degrees(np.arctan2(src[2], src[1])) % 360.0)
        near = np.abs((hue[chromatic] - peak + 180.0) % 360.0 - 180.0) < HUE_TOLERANCE_DEG
        # Refine the histogram peak to the chroma-weighted circular mean of the pixels around it.
        rad, w = np.radians(hue[chromatic][near]), weights[near]
        mean = np.degrees(np.arctan2((w * np.sin(rad)).sum(), (w * np.cos(rad)).sum()))
        same_hue = np.abs((hue - mean + 180.0) % 360.0 - 180.0) < HUE_TOLERANCE_DEG
        member = same_hue | neutral
        core = chromatic & same_hue
    if core.sum() < 0.1 * fg.sum():
        return fg
    return fg & member & _morph(_fill_holes(core), 1)  # 1 px: the outlined rim goes with the object


def _to_lab(rgb: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(rgb.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)  # L 0..100, a/b about -128..127


def _from_lab(lab: np.ndarray) -> np.ndarray:
    return np.clip(cv2.cvtColor(lab, cv2.COLOR_LAB2RGB) * 255.0, 0.0, 255.0)


class OpenCVInpainter:
    """Classical edits for FineCops-Ref negative images: GrabCut recolouring, copy-paste
    of a donor object, Telea removal. Deterministic, CPU-only, no weights."""

    version = "opencv-inpaint@v1"
    copies_donors = True  # a "replace" pastes its donor crop: the crop's looks are what the picture shows

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
        self.dilate_px = dilate_px
        self.grabcut_iters = grabcut_iters

    def supports(self, region: EditRegion) -> bool:
        if region.op == "recolor":
            return region.color is not None and region.color.strip().lower() in COLORS
        if region.op == "replace":
            return region.donor is not None  # copy-paste only: opencv cannot draw "a wooden cup"
        return region.op == "remove"

    def refusal(self, image: Image.Image, region: EditRegion, seed: int = 0) -> str | None:
        """Why this region would not look like a photograph, known before painting, or None:
        - no object outline in the box (GrabCut finds none): a recolour would paint the whole box, a
          replacement would smear all of it;
        - a donor whose own outline is not found: it would be pasted as a rectangle;
        - a donor that, fitted into the box as candidate 0 places it, hides less than `MIN_DONOR_COVER` of
          the old object: the rest would be inpainted, a smear."""
        if region.op == "remove" or not self.supports(region):
            return None
        src = np.asarray(image.convert("RGB"))
        height, width = src.shape[:2]
        box = _clip_box(region.box, width, height)
        margin = max(self.dilate_px + 10, round(0.2 * max(box.w, box.h)))
        win = box.grow(margin, width, height)
        rect = Rect(box.x0 - win.x0, box.y0 - win.y0, box.x1 - win.x0, box.y1 - win.y0)
        fg = _grabcut(src[win.slices()], rect, self.grabcut_iters, seed)
        what = "recoloured" if region.op == "recolor" else "smeared"
        if fg is None:
            return f"no object outline found in its box: the whole box would be {what}"
        if region.op == "recolor":
            return None
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
        windows, masks = [], []
        for i, (region, box) in enumerate(zip(job.regions, boxes, strict=True)):
            margin = max(self.dilate_px + 10, round(0.2 * max(box.w, box.h)))  # context for GrabCut and Telea
            win = box.grow(margin, width, height)
            rect = Rect(box.x0 - win.x0, box.y0 - win.y0, box.x1 - win.x0, box.y1 - win.y0)
            fg = _grabcut(src[win.slices()], rect, self.grabcut_iters, _candidate_seed(job.seed, job.key, -1 - i))
            if fg is None:
                logger.debug("%s: no GrabCut mask for %s, using the whole box", job.key, region.box)
                fg = np.zeros((win.h, win.w), bool)
                fg[rect.slices()] = True
            if region.op == "recolor":  # only the part that carries the object's colour changes colour
                source = COLORS.get((region.source_color or "").strip().lower())
                fg = _colour_core(_to_lab(src[win.slices()]), fg, source)
            windows.append((win, rect))
            masks.append(fg)
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
            for region, (win, rect), fg, donor in zip(job.regions, windows, masks, donors, strict=True):
                view = img[win.slices()]
                if region.op == "recolor":
                    view[:] = self._recolor(view, fg, COLORS[region.color.strip().lower()], rng, k)  # type: ignore[union-attr]
                elif region.op == "replace":
                    view[:] = self._replace(view, fg, rect, donor, rng, k, removed)  # type: ignore[arg-type]
                else:
                    view[:] = self._remove(view, fg, rng, k)
            out = src.copy()
            out[keep] = img[keep]  # the source, bit for bit, outside the dilated boxes
            candidates.append(Image.fromarray(out, "RGB"))
        return candidates

    # -- edits on a window (uint8 RGB in, uint8 RGB out) ------------------------------------------------

    def _recolor(self, win: np.ndarray, fg: np.ndarray, target: RGB, rng: np.random.Generator, k: int) -> np.ndarray:
        if k > 0:  # candidate 0 is the plain edit; others jitter within the same colour name
            hue_deg, chroma_scale, dl = rng.uniform(-4, 4), rng.uniform(0.85, 1.15), rng.uniform(-6, 6)
            sigma = rng.uniform(0.5, 1.5)
        else:
            hue_deg, chroma_scale, dl, sigma = 0.0, 1.0, 0.0, 1.0
        lab = _to_lab(win)
        mask = fg
        t_l, t_a, t_b = _to_lab(np.array([[target]], np.uint8))[0, 0]
        theta = np.deg2rad(hue_deg)
        t_a, t_b = (
            chroma_scale * (t_a * np.cos(theta) - t_b * np.sin(theta)),
            chroma_scale * (t_a * np.sin(theta) + t_b * np.cos(theta)),
        )
        t_l = float(np.clip(t_l + dl, 3.0, 97.0))

        obj = lab[mask]
        dev = obj[:, 0] - obj[:, 0].mean()
        # Keep the object's lightness variation, compressed only as far as the target's headroom needs
        # (a white or black target has little room on one side); never flatten it completely.
        lo, hi = np.percentile(dev, [5, 95]) if dev.size else (0.0, 0.0)
        room = min((100.0 - t_l) / hi if hi > 1e-3 else np.inf, t_l / -lo if lo < -1e-3 else np.inf, 1.0)
        new_l = np.clip(t_l + max(room, 0.35) * dev, 0.0, 100.0)
        chroma = np.hypot(obj[:, 1], obj[:, 2])
        med = float(np.median(chroma)) if chroma.size else 0.0
        # Relative chroma keeps specular highlights and outlines neutral; a grey object has no hue to follow.
        ratio = np.clip(chroma / med, 0.0, 1.25) if med > ACHROMATIC_CHROMA else np.ones_like(chroma)
        new = lab.copy()
        new[mask] = np.stack([new_l, t_a * ratio, t_b * ratio], axis=1)
        alpha = np.maximum(_feather(mask, sigma), mask[..., None])  # feather outwards: no old-colour fringe
        return np.clip(alpha * _from_lab(new) + (1.0 - alpha) * win + 0.5, 0, 255).astype(np.uint8)

    def _remove(self, win: np.ndarray, fg: np.ndarray, rng: np.random.Generator, k: int) -> np.ndarray:
        grow, radius = (int(rng.integers(2, 6)), int(rng.integers(3, 10))) if k > 0 else (3, 5)
        hole = _morph(fg, min(grow, self.dilate_px)).astype(np.uint8) * 255  # the ring hides the outline
        bgr = np.ascontiguousarray(win[..., ::-1])
        return cv2.inpaint(bgr, hole, radius, cv2.INPAINT_TELEA)[..., ::-1]

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
        rgb = np.asarray(donor.convert("RGB"))
        h, w = rgb.shape[:2]
        pad = max(4, round(0.1 * max(h, w)))
        padded = cv2.copyMakeBorder(rgb, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
        fg = _grabcut(padded, Rect(pad, pad, pad + w, pad + h), self.grabcut_iters, seed)
        return rgb, fg[pad : pad + h, pad : pad + w] if fg is not None else None
