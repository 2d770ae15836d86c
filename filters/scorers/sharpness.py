"""Sharpness of an edit: an inpainted region that came out blurred is a giveaway, so a candidate whose
edited boxes lost most of the source's fine detail is dropped. A shipped filter as small as the worked
example of docs/extending.md.

Sharpness is the variance of the discrete Laplacian of the luma (Pech-Pacheco et al., 2000, "Diatom
autofocusing in brightfield microscopy"), a standard focus measure. The score is the candidate's over
the source's, inside each edited box, worst box first: 1.0 means as sharp as the original, 0.2 means
four fifths of the fine detail is gone. No weights, CPU only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Box, Filter, Item, ScoreLine, Scores, Settings


def laplacian_variance(image: Image.Image, box: Box) -> float:
    x, y, w, h = box
    luma = np.asarray(image.convert("L").crop((x, y, x + w, y + h)), dtype=np.float32)
    if luma.shape[0] < 3 or luma.shape[1] < 3:
        return 0.0
    lap = luma[1:-1, :-2] + luma[1:-1, 2:] + luma[:-2, 1:-1] + luma[2:, 1:-1] - 4.0 * luma[1:-1, 1:-1]
    return float(lap.var())


class MinSharpness(Settings):
    min_ratio: float = 0.25  # below this the edit lost three quarters of the source's detail


@FILTERS.add("sharpness", order=60)
class SharpnessFilter(Filter):
    version = "sharpness@v1"
    targets = frozenset({"image_candidate"})
    Thresholds = MinSharpness
    legend = (
        ScoreLine(
            "sharpness_ratio",
            "fine detail in the edited boxes over the source's (1 = as sharp); above the threshold passes",
            "min_ratio",
        ),
    )

    def score(self, items: Sequence[Item]) -> list[Scores]:
        out: list[Scores] = []
        for it in items:
            ratios = []
            for box in it.boxes:
                source = laplacian_variance(it.image, box)  # type: ignore[arg-type]
                ratios.append(laplacian_variance(it.candidate, box) / source if source > 1e-6 else 1.0)  # type: ignore[arg-type]
            out.append({"sharpness_ratio": min(ratios)} if ratios else {})  # a flip blurs nothing
        return out

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        r = scores.get("sharpness_ratio")
        limit = thresholds.min_ratio  # type: ignore[attr-defined]
        if r is not None and r < limit:
            return False, f"sharpness ratio {r:.3f} < {limit}"
        return True, None
