"""Scoring roles for negative images and expressions (SPEC 1.5-1.7, 6, 7). Scorers only add scores;
`filters/decide.py` applies thresholds from config.

- `ImageTextScorer` (CLIP): similarity of (image, text) pairs;
- `ImageSimilarity` (DINOv2, or SSIM offline): similarity of (image, image) pairs;
- `RealismScorer` (DIRE-style, or a seam score offline): probability that the edit in `box` is generated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from PIL import Image

Box = tuple[int, int, int, int]  # xywh


class ImageTextScorer(Protocol):
    version: str

    def similarity(self, pairs: Sequence[tuple[Image.Image, str]]) -> list[float]:
        """Cosine similarity of each (image, text) pair."""
        ...


class ImageSimilarity(Protocol):
    version: str

    def similarity(self, pairs: Sequence[tuple[Image.Image, Image.Image]]) -> list[float]:
        """Similarity of each (original, candidate) pair; higher is more alike."""
        ...


class RealismScorer(Protocol):
    version: str

    def score(self, items: Sequence[tuple[Image.Image, Image.Image, Box]]) -> list[float]:
        """For each (original, candidate, edited box): in [0, 1], higher = more likely generated/edited."""
        ...
