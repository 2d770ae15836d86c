"""The generation flow: a thin Prefect shell over the stage list of `flows/pipeline.py` (STYLE habit 7).

    generate(config="gqa", output="/data/runs/gqa-train", seed=0, overrides={"inputs": {...}})

`hardneg-generate` takes what a person would type: a config (a file, or a bundled name: demo, gqa, openai),
the run folder, a seed and nested overrides; its runs are named after the run folder and the config. It
checks everything first (`flows/request.py`), holds the run folder's lock (a second run into the same
folder refuses), runs the `hardneg-stages` subflow with the task runner the config asks for, and ends
with two artifacts: the stats tables (markdown) and a link to `report.html`.

`hardneg-stages` runs one Prefect task per stage, named after it, once per pending unit (a shard, or the
whole corpus); a finished stage is skipped before any task is submitted. Resuming is file-based
(`core/stage.py`), so Prefect's result caching is off. Tasks take and return small JSON: the run folder,
the stage, the unit. Each stage's line (time, items in and out, rejects) goes to Prefect's run logger, so
it reaches the server, and to the terminal when `hardneg run` started the flow.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from hardneg.core.config import RunConfig, load_config
from hardneg.core.config_files import diff_tree
from hardneg.core.progress import Progress, Tee, stage_line
from hardneg.core.runfolder import prepare_run, stored_config
from hardneg.core.runlock import RunLock
from hardneg.core.stage import Run
from hardneg.core.write import read_manifest
from hardneg.flows import runners
from hardneg.flows.pipeline import STAGES, plan
from hardneg.flows.request import config_label, config_param, resolve_run

# The terminal of the `hardneg run` that started this flow in its own process (None in a deployment).
TERMINAL: ContextVar[Progress | None] = ContextVar("hardneg_terminal", default=None)


def terminal() -> Progress | None:
    """The terminal to tell, if any. The flows reach TERMINAL only through this function: Prefect's Dask
    runner ships the running flow to its workers by value (with the globals its function names), and a
    ContextVar cannot be pickled."""
    return TERMINAL.get()


# One unit of one stage, in whatever worker Prefect put it (`runners.run_unit`: the config is read from the run).
TASKS = {
    s.name: task(runners.run_unit, name=s.name, cache_policy=NO_CACHE, task_run_name=f"{s.name}-{{unit}}")
    for s in STAGES
}


class RunLog(Progress):
    """Stage lines through Prefect's run logger: they reach the server with the flow run."""

    def __init__(self) -> None:
        self.log = get_run_logger()

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        self.log.info("%s: %d of %d units to do", stage, pending, units)

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        self.log.info(stage_line(stage, summary))

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        self.log.info(stage_line(stage, summary, skipped=True))


@flow(name="hardneg-stages", flow_run_name="stages of {run_dir}", log_prints=False)
def stages(run_dir: str) -> dict[str, Any]:
    """Every stage in order over the run folder's stored config; a stage's pending units run as parallel
    tasks."""
    root = Path(run_dir)
    progress = Tee(RunLog(), terminal())
    run = Run(root, stored_config(root), STAGES, progress)
    for name in run.order:
        if run.is_complete(name):
            progress.stage_skipped(name, run.summary(name))
            continue
        with runners.gpu_stage(run.cfg, name):  # on Dask, a GPU stage's tasks each hold one GPU
            futures = [TASKS[name].submit(run_dir, name, u) for u in run.open(name)]
        for f in futures:
            progress.unit_done(name, f.result())
        run.close(name)
    return {"run_folder": run_dir}


def run_name() -> str:
    """`<run folder> (<config>)`, from the flow run's parameters."""
    from prefect.runtime import flow_run

    p = flow_run.parameters
    try:
        folder = resolve_run(p.get("config"), p.get("output"), p.get("seed"), p.get("overrides"))[1].name
    except ValueError:  # the run itself will say what is wrong
        folder = Path(p.get("output") or "run").name
    return f"{folder} ({config_label(p.get('config'))})"


@flow(name="hardneg-generate", flow_run_name=run_name, log_prints=False, validate_parameters=True)
def generate(
    config: str | None = None,
    output: str | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a hard-negative benchmark.

    Args:
        config: a config file, or a bundled config's name (demo, gqa, openai); default demo
        output: the run folder; a rerun resumes in it (default outputs/<config>-<hash>)
        seed: replaces the config's seed
        overrides: nested config keys applied on top, e.g. {"inputs": {"scene_graphs": "/data/gqa"}}
    """
    cfg, root = resolve_run(config, output, seed, overrides)
    plan(cfg, root)  # every check before anything is written
    with RunLock(root, f"Prefect flow run {run_name_or_default()}"):
        prepare_run(cfg, root)
        stages.with_options(task_runner=task_runner(cfg))(str(root))
    manifest = read_manifest(root)
    _artifacts(root, manifest)
    c = manifest["counts"]
    return {"run_folder": str(root), "positives": c["positives"], "negatives": c["negatives"]}


def run_name_or_default() -> str:
    from prefect.runtime import flow_run

    return flow_run.name or "hardneg-generate"


def task_runner(cfg: RunConfig) -> Any:
    """The task runner the config asks for: threads, processes or Dask (`flows/runners.py`)."""
    return runners.task_runner(cfg)


def _artifacts(root: Path, manifest: dict[str, Any]) -> None:
    """The stats tables and a link to the report, on the flow run (keyed per run folder: the UI keeps
    each folder's history)."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    key = re.sub(r"[^a-z0-9-]+", "-", root.name.lower()).strip("-")[:40] or "run"
    stats = (root / "stats.md").read_text()
    create_markdown_artifact(
        markdown=f"Run folder: `{root}`\n\n{stats}", key=f"hardneg-stats-{key}", description=f"stats of {root}"
    )
    report = root / "report.html"
    create_link_artifact(
        link=report.as_uri(), link_text="report.html", key=f"hardneg-report-{key}", description=f"report of {root}"
    )


def run_flow(
    config: str | None,
    output: Path,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the flow in this process (`hardneg run`), telling `progress` as it goes; returns the manifest."""
    token = TERMINAL.set(progress)
    try:
        generate(config=config_param(config), output=str(output), seed=seed, overrides=overrides or None)
    finally:
        TERMINAL.reset(token)
    return read_manifest(output)


def run_generate(cfg: RunConfig, run_dir: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Run the flow for a config object: its parameters are the demo config plus the keys `cfg` changes."""
    overrides = diff_tree(load_config(None).model_dump(mode="json"), cfg.model_dump(mode="json"))
    if resolve_run(None, run_dir, None, overrides)[0] != cfg:
        raise ValueError("this config cannot be given as overrides of the demo config; write it to a file")
    return run_flow(None, run_dir, overrides=overrides, progress=progress)
