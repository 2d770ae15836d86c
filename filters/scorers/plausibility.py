"""The plausibility scorer for SugarCREPE's refinement: how typical a path's facts are in this corpus
(`core/gqa/plausibility.py`), the stand-in for the plausibility model of the paper. Unlike a rule-based
grammar score it varies between good, odd and absurd negatives on real data, so refinement can balance it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hardneg.core.gqa.plausibility import Plausibility
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Item, Scores, Settings
from hardneg.filters.scorers.text import TextFilter


@FILTERS.add("plausibility", order=110)
class PlausibilityFilter(TextFilter):
    version = "plausibility@v1"
    needs_counts = True  # the refine stage hands it the run's corpus statistics

    def __init__(self, options: Settings | None = None, batch_size: int = 16) -> None:
        super().__init__(options, batch_size)
        self.model: Plausibility | None = None

    def using(self, model: Plausibility) -> PlausibilityFilter:
        out = PlausibilityFilter(self.options, self.batch_size)
        out.model = model
        return out

    def score(self, items: Sequence[Item]) -> list[Scores]:
        if self.model is None:
            raise ValueError("the plausibility scorer needs the run's corpus statistics (PlausibilityFilter.using)")
        return [{"score": self.model.score(it.record.node())} for it in items]
