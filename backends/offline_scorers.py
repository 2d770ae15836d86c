"""Offline image scorers with real, documented semantics: no weights, CPU only (SPEC 1.5-1.6, 7).

- `SSIMSimilarity` (an `ImageSimilarity`): structural similarity (Wang, Bovik, Sheikh & Simoncelli,
  2004) of the original and a candidate, the stand-in for DINOv2 best-of-N: "keep the candidate most
  like the original".
- `SeamScore` (a `RealismScorer`): strength of the straight, new edges an edit leaves along the outline
  of its box, squashed to [0, 1], the stand-in for DIRE: higher = more visibly edited.

Both need scikit-image (`pip install 'scikit-image>=0.22'`); it is imported on first use.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from backends.image_scorers import Box

logger = logging.getLogger(__name__)

SKIMAGE_HINT = "pip install 'scikit-image>=0.22'"

# skimage's `sobel` gives 1/sqrt(2) at a unit step edge; this factor makes a unit step read 1.0, so
# gradient values are in "step units": the fraction of the full intensity range the edge jumps.
SOBEL_TO_STEP = math.sqrt(2.0)


def _skimage() -> Any:
    try:
        import skimage.filters
        import skimage.metrics
    except ImportError as e:
        raise ImportError(f"offline image scorers need scikit-image: {SKIMAGE_HINT}") from e
    return skimage


def _same_size(a: Image.Image, b: Image.Image, what: str) -> None:
    if a.size != b.size:
        raise ValueError(f"{what}: original is {a.size[0]}x{a.size[1]} but candidate is {b.size[0]}x{b.size[1]}")


# --------------------------------------------------------------------------------------------------
# SSIM


class SSIMSimilarity:
    """SSIM of (original, candidate) in [-1, 1], 1 = identical (Wang et al., 2004).

    The offline stand-in for DINOv2 best-of-N (SPEC 1.6): among candidates that pass the filters, the
    one with the highest score changed the least of the original's structure. Computed with
    scikit-image's `structural_similarity` on 8-bit luma (PIL "L") or, with `color=True`, per RGB
    channel and averaged; Gaussian 11x11 window with sigma 1.5 and population covariances, the
    paper's settings. `max_side` downscales both images the same way (bilinear) so the longest side is
    at most that many px, for speed; None keeps the original resolution. Deterministic.
    """

    def __init__(self, color: bool = False, max_side: int | None = None) -> None:
        if max_side is not None and max_side < 11:
            raise ValueError(f"max_side must be >= 11 (the SSIM window) or None, got {max_side}")
        self.color, self.max_side = color, max_side
        self.version = f"ssim@v1:{'rgb' if color else 'luma'}:{max_side or 'full'}"

    def _array(self, image: Image.Image) -> np.ndarray:
        image = image.convert("RGB" if self.color else "L")
        if self.max_side is not None and max(image.size) > self.max_side:
            scale = self.max_side / max(image.size)
            size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
            image = image.resize(size, Image.Resampling.BILINEAR)
        return np.asarray(image)

    def similarity(self, pairs: Sequence[tuple[Image.Image, Image.Image]]) -> list[float]:
        if not pairs:
            return []
        ssim = _skimage().metrics.structural_similarity
        out: list[float] = []
        for original, candidate in pairs:
            _same_size(original, candidate, "SSIMSimilarity")
            a, b = self._array(original), self._array(candidate)
            if min(a.shape[:2]) < 11:
                raise ValueError(f"SSIMSimilarity needs images of at least 11x11 px, got {a.shape[1]}x{a.shape[0]}")
            value = ssim(
                a,
                b,
                data_range=255,
                gaussian_weights=True,
                sigma=1.5,
                use_sample_covariance=False,
                channel_axis=2 if self.color else None,
            )
            out.append(float(value))
        return out


# --------------------------------------------------------------------------------------------------
# Seam score


def color_gradient(image: Image.Image) -> np.ndarray:
    """Per-pixel Sobel gradient magnitude, the maximum over R, G, B, in step units (a unit step = 1).

    The maximum over channels sees a seam between regions of equal brightness but different hue,
    which a luma gradient misses.
    """
    sobel = _skimage().filters.sobel
    rgb = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    mags = [sobel(rgb[..., c]) for c in range(3)]
    return np.maximum.reduce(mags) * SOBEL_TO_STEP


class SeamScore:
    """Visibility of the edit's seam along its box outline, in [0, 1]: the offline stand-in for DIRE.

    DIRE (SPEC 7) estimates the probability that the edited region is generated. Without a trained
    detector, the clearest sign of a pasted or inpainted region is its seam: a straight edge along
    the mask outline, where new content meets the untouched image. The score, exactly:

    1. `G_o`, `G_c`: the colour gradient magnitude of the original and the candidate (`color_gradient`:
       Sobel per RGB channel, maximum over channels, in step units, so 0.1 is an edge jumping 10% of
       the full range).
    2. `E = max(0, G_c - 2 * G_o)`: new edge strength, where the candidate has an edge the original
       lacked. Subtracting twice the original keeps edges that were already there (the object's own
       outline, texture, tile lines) from counting when an edit only changes their contrast; it is
       also the texture masking: a seam hidden in texture scores less.
    3. For each side of the box (clipped to the image) and each offset `d` = 1..`outer` px outside it,
       average `E` along the line parallel to that side, over the side's length; the side's seam
       strength is the maximum over `d`. A straight seam anywhere in that band (the inpainters'
       dilated mask edge lies 6-8 px out) gives a full-length line; natural curved edges crossing the
       band only a few pixels of it. Offsets start 1 px out so the object's own tight edge is not
       read as a seam. Sides with no line inside the image (the box touches the border) are skipped.
    4. `seam` = the mean over the remaining sides (0 when none remain: an edit covering the whole
       image has no outline to check).
    5. `score = 1 - exp(-seam / scale)`: 0 for no new edge, rising to 1. With the default
       `scale = 0.36`, a seam of 0.08 (about 20 grey levels jumped along the whole outline) scores 0.2,
       SPEC 1.6's realism threshold; 0.25 scores 0.5.

    Calibration on the demo world (the first 4 objects of 30 scenes, seed 1): an object re-rendered
    in another colour (a seamless edit: only its pixels change) scores at most 0.14, a hue rotation
    through a feathered mask at most 0.15; a patch of the image pasted into the 6 px-dilated box
    scores above 0.2 in 93% of cases (median 0.60; the rest pasted matching background texture).
    Original and candidate must be the same size. The score orders edits by seam visibility; it is
    not a probability of anything (docs/realism.md).
    Deterministic.
    """

    def __init__(self, outer: int = 12, scale: float = 0.36) -> None:
        if outer < 1:
            raise ValueError(f"outer must be >= 1 px, got {outer}")
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.outer = outer  # px beyond the box; covers the inpainters' 6-8 px mask dilation and blending
        self.scale = scale  # step units; sets which seam strength reaches SPEC 1.6's 0.2
        self.version = f"seam@v1:outer={outer}:scale={scale}"

    def seam_strength(self, original: Image.Image, candidate: Image.Image, box: Box) -> float:
        """Step 1-4 of the class docstring: the mean over box sides of the strongest new straight edge."""
        _same_size(original, candidate, "SeamScore")
        return self._seam(color_gradient(original), color_gradient(candidate), box)

    def _seam(self, grad_original: np.ndarray, grad_candidate: np.ndarray, box: Box) -> float:
        new_edges = np.maximum(0.0, grad_candidate - 2.0 * grad_original)
        height, width = new_edges.shape
        x, y, w, h = box
        if w <= 0 or h <= 0:
            raise ValueError(f"SeamScore: empty box {box}")
        x0, y0, x1, y1 = max(0, x), max(0, y), min(width, x + w), min(height, y + h)
        if x0 >= x1 or y0 >= y1:
            raise ValueError(f"SeamScore: box {box} lies outside the {width}x{height} image")
        sides: list[float] = []
        for side in ("top", "bottom", "left", "right"):
            lines: list[float] = []
            for d in range(1, self.outer + 1):
                if side in ("top", "bottom"):
                    row = y0 - d if side == "top" else y1 - 1 + d
                    if 0 <= row < height:
                        lines.append(float(new_edges[row, x0:x1].mean()))
                else:
                    col = x0 - d if side == "left" else x1 - 1 + d
                    if 0 <= col < width:
                        lines.append(float(new_edges[y0:y1, col].mean()))
            if lines:
                sides.append(max(lines))
        return float(np.mean(sides)) if sides else 0.0

    def score(self, items: Sequence[tuple[Image.Image, Image.Image, Box]]) -> list[float]:
        # a negative's candidates share one original: its gradient is computed once per call
        originals: dict[int, np.ndarray] = {}
        out = []
        for original, candidate, box in items:
            _same_size(original, candidate, "SeamScore")
            if id(original) not in originals:
                originals[id(original)] = color_gradient(original)
            seam = self._seam(originals[id(original)], color_gradient(candidate), box)
            out.append(1.0 - math.exp(-seam / self.scale))
        return out
