"""The pipeline's one ordered stage list, which every way of running loops over.

    ingest -> hygiene (per shard) -> plausibility -> paths (per shard) -> select -> language (per shard)
           -> images (per shard) -> filters (per shard) -> refine -> decide -> write -> report

A module of its own, importing only the stages: the pipeline (`flows/pipeline.py`) and the workers that
run one unit wherever they are (`flows/runners.py`) both read it, and neither imports the other for it.
"""

from __future__ import annotations

from hardneg.core.gqa.hygiene import HygieneStage
from hardneg.core.gqa.ingest import IngestStage
from hardneg.core.gqa.plausibility import PlausibilityStage
from hardneg.core.stage import Stage
from hardneg.exports.finecops import WriteStage
from hardneg.exports.imagecode import ImageCodeStage
from hardneg.exports.phrases import PhrasesStage
from hardneg.exports.probes.background import ProbeBStage
from hardneg.exports.probes.stage import ProbesStage
from hardneg.exports.tricd.stage import TricdStage
from hardneg.filters.decide_stage import DecideStage
from hardneg.filters.refine_stage import RefineStage
from hardneg.filters.score import FiltersStage
from hardneg.generators.images.stage import ImagesStage
from hardneg.generators.paths.select import SelectStage
from hardneg.generators.paths.stage import PathsStage
from hardneg.generators.text.stage import LanguageStage
from hardneg.review.report.stage import ReportStage

STAGES: tuple[Stage, ...] = (
    IngestStage(),
    HygieneStage(),
    PlausibilityStage(),
    PathsStage(),
    SelectStage(),
    LanguageStage(),
    ImagesStage(),
    FiltersStage(),
    RefineStage(),
    DecideStage(),
    WriteStage(),
    PhrasesStage(),  # the other benchmark shapes: generation first, then the exports
    ProbeBStage(),
    TricdStage(),
    ProbesStage(),
    ImageCodeStage(),
    ReportStage(),
)
