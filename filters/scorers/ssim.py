"""SSIM, the offline best-of-N similarity: no weights, CPU only.

Structural similarity (Wang, Bovik, Sheikh & Simoncelli, 2004) of the original and a candidate, the
stand-in for DINOv2 best-of-N: "keep the candidate most like the original". Needs scikit-image, imported
on first use.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from PIL import Image

from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Item, ScoreLine, Scores, Settings, check_same_size, require_skimage

logger = logging.getLogger(__name__)


class SSIMSimilarity:
    """SSIM of (original, candidate) in [-1, 1], 1 = identical (Wang et al., 2004).

    The offline stand-in for DINOv2 best-of-N: among candidates that pass the filters, the
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
        ssim = require_skimage().metrics.structural_similarity
        out: list[float] = []
        for original, candidate in pairs:
            check_same_size(original, candidate, "SSIMSimilarity")
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


class SSIMOptions(Settings):
    color: bool = False  # luma (the paper's setting) or the mean over RGB channels
    max_side: int | None = None  # px; downscale both images first, for speed


@FILTERS.add("ssim", order=20)
class SSIMFilter(Filter):
    """Best-of-N by SSIM to the source (`rank`); it never drops a candidate by itself."""

    version = "ssim@v1"
    targets = frozenset({"image_candidate"})
    rank = "similarity"
    legend = (
        ScoreLine(
            "similarity",
            "SSIM of the edited image to its source (1 = identical); best-of-N keeps the most similar candidate "
            "that passes",
        ),
    )
    Options = SSIMOptions

    def score(self, items: Sequence[Item]) -> list[Scores]:
        o = self.options
        scorer = self.configured(SSIMSimilarity, color=o.color, max_side=o.max_side)  # type: ignore[attr-defined]
        sims = scorer.similarity([(it.image, it.candidate) for it in items])  # type: ignore[misc]
        return [{"similarity": s} for s in sims]
