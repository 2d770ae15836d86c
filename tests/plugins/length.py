"""Drop a text negative worded much longer than its positive: a blind reader could pick the negative by its
length alone. The worked example of a filter in docs/extending.md (it would sit in `filters/scorers/`)."""

from __future__ import annotations

from collections.abc import Sequence

from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Item, ScoreLine, Scores, Settings


class MaxRatio(Settings):
    max_ratio: float = 1.5  # words in the negative over words in its positive


@FILTERS.add("length")
class LengthFilter(Filter):
    version = "length@v1"
    targets = frozenset({"text_negative"})
    needs_images = False
    Thresholds = MaxRatio
    legend = (
        ScoreLine(
            "length_ratio",
            "words in the negative over words in its positive (1 = as long); below the threshold passes",
            "max_ratio",
            "below",
        ),
    )

    def score(self, items: Sequence[Item]) -> list[Scores]:
        return [{"length_ratio": len((it.negative_text or "").split()) / max(1, len(it.text.split()))} for it in items]

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        ratio, most = scores.get("length_ratio"), thresholds.max_ratio  # type: ignore[attr-defined]
        if ratio is None or ratio <= most:
            return True, None
        return False, f"length: the negative is {ratio:.2f} times as long as its positive (at most {most})"
