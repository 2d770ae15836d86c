"""The pipeline's one ordered stage list, which every way of running loops over.

    ingest -> hygiene (per shard) -> plausibility -> paths (per shard) -> select -> language (per shard)
           -> images, pixels (per shard) -> filters (per shard) -> refine -> decide -> write -> exports -> report

The runner runs each stage after those it reads, wherever it is listed (`core/runner/waves.py`), and otherwise
in this order. A module of its own, importing only the stages: the pipeline (`flows/pipeline.py`) and the workers that
run one unit wherever they are (`flows/runners.py`) both read it, and neither imports the other for it.
"""

from __future__ import annotations

from hardneg.core.gqa.hygiene import HygieneStage
from hardneg.core.gqa.ingest import IngestStage
from hardneg.core.gqa.plausibility import PlausibilityStage
from hardneg.core.plugins import EXPORTS
from hardneg.core.runner.stage import Stage
from hardneg.exports.finecops import WriteStage
from hardneg.filters.decide_stage import DecideStage
from hardneg.filters.pixels_stage import PixelsStage
from hardneg.filters.refine_stage import RefineStage
from hardneg.filters.score import FiltersStage
from hardneg.generators.images.stage import ImagesStage
from hardneg.generators.paths.select import SelectStage
from hardneg.generators.paths.stage import PathsStage
from hardneg.generators.text.stage import LanguageStage
from hardneg.review.report.stage import ReportStage


def stages() -> tuple[Stage, ...]:
    """The stage list: generation, the decision, the write stage, every registered export, the report."""
    return (
        IngestStage(),
        HygieneStage(),
        PlausibilityStage(),
        PathsStage(),
        SelectStage(),
        LanguageStage(),
        ImagesStage(),
        PixelsStage(),
        FiltersStage(),
        RefineStage(),
        DecideStage(),
        WriteStage(),
        *(cls() for _, cls in EXPORTS.items()),  # the other benchmark shapes (`exports/base.py`)
        ReportStage(),
    )


# what every runner loops over; an export registered after this module is imported needs `stages()` again
STAGES = stages()
