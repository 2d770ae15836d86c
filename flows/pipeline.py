"""The pipeline: the one ordered stage list that every way of running loops over.

    ingest -> hygiene (per shard) -> plausibility -> paths (per shard) -> select -> language (per shard)
           -> images (per shard) -> filters (per shard) -> refine -> decide -> write -> exports -> report

The exports are the registered export stages (`exports/base.py`: phrases, probe_b, tricd, probes,
imagecode, and any other), in the registry's order.

`run_local` runs it in this process; `flows/generate.py` runs the same list as a Prefect flow (one task
per shard); `resplit` reruns only the decision stages (`Stage.decision`) with new thresholds or split
proportions, after checking that everything they read is complete and was made for the run's config.
Plain Python: no Prefect here.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from hardneg.core.config import RunConfig, apply_overrides, leaf_keys
from hardneg.core.gqa.hygiene import HygieneStage
from hardneg.core.gqa.ingest import IngestStage
from hardneg.core.gqa.plausibility import PlausibilityStage
from hardneg.core.plugins import EXPORTS
from hardneg.core.progress import Progress
from hardneg.core.publish import publishing, rollback
from hardneg.core.runfolder import prepare_run, stored_config
from hardneg.core.runlock import RunLock
from hardneg.core.stage import Run, Stage
from hardneg.exports.finecops import WriteStage, read_manifest
from hardneg.filters.decide_stage import DecideStage
from hardneg.filters.refine_stage import RefineStage
from hardneg.filters.score import FiltersStage
from hardneg.flows.request import check_request
from hardneg.flows.resplit_guard import keep_if_refused, refuse_emptying
from hardneg.flows.runners import unit_pool
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
        FiltersStage(),
        RefineStage(),
        DecideStage(),
        WriteStage(),
        *(cls() for _, cls in EXPORTS.items()),  # the other benchmark shapes
        ReportStage(),
    )


# what every runner loops over; an export registered after this module is imported needs `stages()` again
STAGES = stages()


def plan(cfg: RunConfig, root: Path) -> Run:
    """The run of `cfg` in `root`, every stage's config, the inputs and the output folder checked first
    (nothing is written: a user error leaves no half-made run folder)."""
    for s in STAGES:
        s.validate(cfg)
    check_request(cfg, root)
    return Run(root, cfg, STAGES)


def run_local(
    cfg: RunConfig, root: Path, progress: Progress | None = None, workers: int | None = None
) -> dict[str, Any]:
    """Every stage without Prefect, skipping finished work; returns the manifest. A stage's units run in
    this process, or in `workers` processes (default: the config's, for the process and Dask runners;
    `flows/runners.py`). Holds the run folder's lock: a second run into the same folder refuses."""
    run = plan(cfg, root)
    run.progress = progress or run.progress
    with RunLock(root), unit_pool(cfg, root, workers) as pool:
        prepare_run(cfg, root)
        with publishing(root):
            for name in run.order:
                run.run_stage(name, pool)
    return read_manifest(root)


def resplittable_keys() -> set[str]:
    """Config keys only decision stages read: changing them needs no new samples or scores."""
    decision = {k for s in STAGES if s.decision for k in s.config}
    other = {k for s in STAGES if not s.decision for k in s.config}
    return {k for k in decision if not any(k == o or k.startswith(o + ".") or o.startswith(k + ".") for o in other)}


def resplit(
    root: Path, overrides: dict[str, Any], force: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Re-decide and re-split a finished run from its stored scores: the run's config (as `hardneg run`
    made it) plus `overrides`, every call starting afresh from the run's config. Refuses a key that would
    need new samples or scores, a run whose stored work is incomplete or was made for another config, and
    (unless `force`) a rule that would now drop everything it sees: the run folder is then left as it was."""
    base = stored_config(root)
    allowed = resplittable_keys()
    for key in leaf_keys(overrides):
        if not any(key == a or key.startswith(a + ".") for a in allowed):
            close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
            raise ValueError(
                f"split cannot change {key}"
                + (f" (did you mean {close[0]}?)" if close and not key.startswith(close[0]) else "")
                + f": it needs new samples or scores, or is no config key; rerun `hardneg run` for that "
                f"(split can change: {', '.join(sorted(allowed))})"
            )
    with RunLock(root, "hardneg split"):
        return _resplit(root, apply_overrides(base, overrides), force, progress)


def _resplit(root: Path, cfg: RunConfig, force: bool, progress: Progress | None) -> dict[str, Any]:
    run = plan(cfg, root)
    run.progress = progress or run.progress
    rollback(root)  # an interrupted run's or split's outputs: back to the last finished one's
    problems = [p for name in run.order if not run.stages[name].decision for p in run.problems(name)]
    if problems:
        raise ValueError(
            f"{root} cannot be re-split: " + "; ".join(problems[:5]) + "; rerun `hardneg run` to complete it"
        )
    decision = [name for name in run.order if run.stages[name].decision]
    with publishing(root):
        with keep_if_refused(run, decision[0]) as before:
            run.run_stage(decision[0])
            if not force:
                refuse_emptying(run, decision[0], before)
        for name in decision[1:]:
            run.run_stage(name)
    return read_manifest(root)
