"""The pipeline: the stage list (`flows/stages.py`) checked, run and re-split.

`run_stages` is the one loop over the stages (`flows/stages.py`: generation, the decision, the write stage,
every registered export in the registry's order, the report), inside the run's output transaction:
`run_local` runs it in this process (or a pool of workers), `flows/generate.py` as a Prefect flow (one task
per shard); `resplit` reruns only the decision stages (`Stage.decision`) with new thresholds or split
proportions, after checking that everything they read is complete and was made for the run's config.
Plain Python: no Prefect here.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hardneg.core.config import RunConfig, apply_overrides
from hardneg.core.config_files import leaf_keys
from hardneg.core.errors import ConfigError, HardnegError
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.rows import NegativeDecisionRow, PositiveDecisionRow
from hardneg.core.runner.folder import removed_on_bad_input, stored_config
from hardneg.core.runner.lock import RunLock
from hardneg.core.runner.progress import Progress
from hardneg.core.runner.publish import publishing, rollback
from hardneg.core.runner.stage import SUMMARY, Run
from hardneg.core.schema import Output
from hardneg.core.secrets import scrub_for
from hardneg.exports.finecops import publishable, read_manifest
from hardneg.exports.published import kept_digest
from hardneg.flows.preflight import preflight
from hardneg.flows.request import check_request
from hardneg.flows.resplit_guard import keep_if_refused, refuse_emptying
from hardneg.flows.runners import Pool, unit_pool
from hardneg.flows.stages import STAGES, stages  # noqa: F401  (stages: for code that registers an export later)

R = TypeVar("R")


def plan(cfg: RunConfig, root: Path, frozen_inputs: bool = False) -> Run:
    """The run of `cfg` in `root`, every stage's config, the inputs and the output folder checked first
    (nothing is written: a user error leaves no half-made run folder). `frozen_inputs`: a run that reads
    its folder only (`hardneg split`): the inputs are not looked at, and may be gone."""
    for s in STAGES:
        s.validate(cfg)
    if frozen_inputs:
        return Run(root, cfg, STAGES, frozen_inputs=True)
    check_request(cfg, root)
    run = Run(root, cfg, STAGES)
    preflight(run)  # every model role the stages still to do need is there
    return run


def run_local(
    cfg: RunConfig, root: Path, progress: Progress | None = None, workers: int | None = None
) -> dict[str, Any]:
    """Every stage without Prefect, skipping finished work; returns the manifest. A stage's units run in
    this process, or in `workers` processes (default: the config's, for the process and Dask runners;
    `flows/runners.py`). Holds the run folder's lock: a second run into the same folder refuses."""
    run = plan(cfg, root)
    run.progress = progress or run.progress
    with removed_on_bad_input(root), RunLock(root), unit_pool(cfg, root, workers) as pool:
        prepare_run(cfg, root)
        run_stages(run, pool)
    return read_manifest(root)


def run_stages(run: Run, pool: Pool | None = None) -> None:
    """Every stage in order, a wave of stages that read none of each other at a time (`Run.run_wave`: a
    finished stage is skipped; the pending units run here, or by `pool`, a wave's together; one stage at a
    time with `concurrent_stages: false`), inside the run's output transaction: the outputs stand when
    every stage finished, and a failure puts the old ones back."""
    with publishing(run.root):
        for wave in run.waves() if run.cfg.concurrent_stages else [[name] for name in run.order]:
            run.run_wave(wave, pool)


def resplittable_keys() -> set[str]:
    """Config keys only decision stages read: changing them needs no new samples or scores."""
    decision = {k for s in STAGES if s.decision for k in s.config}
    other = {k for s in STAGES if not s.decision for k in s.config}
    return {k for k in decision if not any(k == o or k.startswith(o + ".") or o.startswith(k + ".") for o in other)}


@dataclass(frozen=True, slots=True)
class SplitOutcome:
    """What `hardneg split` did: the manifest after it, the keys whose values it changed (old -> new, against
    the settings the run's outputs were made with), and whether the outputs changed at all."""

    manifest: dict[str, Any]
    changed: list[tuple[str, Any, Any]]
    unchanged: bool = False


def resplit(
    root: Path, overrides: dict[str, Any], force: bool = False, progress: Progress | None = None
) -> SplitOutcome:
    """Re-decide and re-split a finished run from its stored scores: the run's config (as `hardneg run`
    made it) plus `overrides`, every call starting afresh from the run's config. Refuses a key that would
    need new samples or scores, a run whose stored work is incomplete or was made for another config, and
    (unless `force`) a rule that would now drop everything it sees: the run folder is then left as it was.
    A change that keeps and drops exactly the samples the run has leaves it as it was too (`unchanged`)."""
    base = stored_config(root)
    scrub_for([base.language.openai.api_key_env])
    allowed = resplittable_keys()
    for key in leaf_keys(overrides):
        if not any(key == a or key.startswith(a + ".") for a in allowed):
            close = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
            raise ConfigError(
                f"split cannot change {key}"
                + (f" (did you mean {close[0]}?)" if close and not key.startswith(close[0]) else "")
                + f": it needs new samples or scores, or is no config key; rerun `hardneg run` for that "
                f"(split can change: {', '.join(sorted(allowed))})"
            )
    with RunLock(root, "hardneg split"):
        return _resplit(root, apply_overrides(base, overrides), force, progress)


def changed_keys(root: Path, cfg: RunConfig, keys: set[str]) -> list[tuple[str, Any, Any]]:
    """(key, value the published outputs were made with, value now; None: not set, the default) for every
    leaf under `keys` that differs; the published values are the manifest's (its config as `hardneg run`
    or the last split left it)."""
    try:
        published = _leaves(read_manifest(root)["config"])
    except (OSError, KeyError, ValueError):
        return []
    now = _leaves(publishable(cfg.model_dump(mode="json"), root))
    diff = {k for k in published.keys() | now.keys() if published.get(k) != now.get(k) and _under(k, keys)}
    deepest = [k for k in diff if not any(o.startswith(k + ".") for o in diff)]  # {} -> {seam: ...}: the leaf
    return sorted((k, published.get(k), now.get(k)) for k in deepest)


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        if isinstance(v, dict) and v:
            out |= _leaves(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


class _NothingChanged(Exception):
    """Raised inside `keep_if_refused` to put the decide stage back: its new decisions are the old ones."""


def _resplit(root: Path, cfg: RunConfig, force: bool, progress: Progress | None) -> SplitOutcome:
    run = plan(cfg, root, frozen_inputs=True)  # the run folder is all split reads
    run.progress = progress or run.progress
    rollback(root)  # an interrupted run's or split's outputs: back to the last finished one's
    problems = [p for name in run.order if not run.stages[name].decision for p in run.problems(name)]
    if problems:
        raise HardnegError(
            f"{root} cannot be re-split: " + "; ".join(problems[:5]) + "; rerun `hardneg run` to complete it"
        )
    decision = [name for name in run.order if run.stages[name].decision]
    changed = changed_keys(root, cfg, resplittable_keys())
    if all(run.is_complete(name) for name in decision):  # these very settings made the outputs
        return SplitOutcome(read_manifest(root), changed, unchanged=True)
    first, rest = decision[0], decision[1:]
    published = _published_kept(run)
    try:
        with keep_if_refused(run, first) as before:
            run.run_stage(first)
            if not force:
                refuse_emptying(run, first, before)
            later_keys = {k for name in rest for k in run.stages[name].config}
            positives, negatives = _decisions(run, first)
            kept = kept_digest(run.records_all(positives), run.records_all(negatives), run.summary(first)["meta"])
            if kept == published and not [c for c in changed if _under(c[0], later_keys)]:
                raise _NothingChanged
    except _NothingChanged:
        return SplitOutcome(read_manifest(root), changed, unchanged=True)
    with publishing(root):
        for name in rest:
            run.run_stage(name)
    return SplitOutcome(read_manifest(root), changed)


def _decisions(run: Run, name: str) -> tuple[Output[PositiveDecisionRow], Output[NegativeDecisionRow]]:
    """The decision stage `name`'s outputs of decided positives and of decided negatives, found by their
    record types (a decision stage writes one of each)."""
    writes = run.stages[name].writes

    def one(record: type[R]) -> Output[R]:
        kinds = [kind for kind, r in writes.items() if r is record]
        if len(kinds) != 1:
            raise TypeError(f"the decision stage {name} writes {len(kinds)} outputs of {record.__name__}, not one")
        return Output(name, kinds[0], record)

    return one(PositiveDecisionRow), one(NegativeDecisionRow)


def _published_kept(run: Run) -> str | None:
    """The decisions the published outputs were written from (the write stage's record of them), when every
    stage after the write stage finished for them too; None otherwise (then nothing is taken as unchanged)."""
    names = [n for n in run.order if run.stages[n].decision]
    write = next((n for n in names if run.stages[n].publishes and run.stages[n].reads_all), None)
    if write is None or not all((run.stage_dir(n) / SUMMARY).exists() for n in names):
        return None
    return run.summary(write)["meta"].get("kept")


def _under(key: str, keys: set[str]) -> bool:
    return any(key == k or key.startswith(k + ".") for k in keys)
