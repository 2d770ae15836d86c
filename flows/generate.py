"""The generation flow: a thin Prefect shell over the stage loop of `flows/pipeline.py`; the stages, their
resuming and their outputs are plain Python that runs the same without Prefect.

    generate(config="gqa", output="/data/runs/gqa-train", seed=0, overrides={"inputs": {...}})

`hardneg-generate` takes what a person would type: a config (a file, or a bundled name: demo, gqa, openai),
the run folder, a seed and nested overrides; its runs are named after the run folder and the config. It
checks everything first (`flows/request.py`), holds the run folder's lock, runs the `hardneg-stages`
subflow with the task runner the config asks for, and ends with two artifacts a browser opens: `stats.md`
(markdown, naming where `report.html` is as a path to copy: browsers refuse `file://` links from a web
page) and the counts per split (a table). A run into a folder another process is writing ends Completed,
named Skipped, with who holds the lock as its message: nothing failed, so no traceback and no failure
alert (`refused`). A run the user must fix (a `HardnegError`: a config edited wrong, a missing input)
ends Failed with that one line as its message, not a traceback.

`hardneg-stages` runs `run_stages`, the loop `hardneg run --no-prefect` runs, with a pool that makes one
Prefect task per pending unit (a shard, or the whole corpus), named after its stage; a finished stage is
skipped before any task is submitted. Resuming is file-based (`core/runner/stage.py`), so Prefect's result
caching is off. Tasks take and return small JSON: the run folder, the stage, the unit. Each stage's line
(time, items in and out, rejects) goes to the run logger of the top-level `hardneg-generate` run, the one
a user opens in the UI (and a deployment's run), with the run's counts at the end; and to the terminal
when `hardneg run` started the flow.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State

from hardneg.core.config import RunConfig, load_config
from hardneg.core.config_files import diff_tree
from hardneg.core.errors import HardnegError
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.runner.folder import removed_on_bad_input, stored_config
from hardneg.core.runner.lock import RunBusy, RunLock
from hardneg.core.runner.progress import Progress, Tee, stage_line
from hardneg.core.runner.stage import Run
from hardneg.exports.finecops import read_manifest
from hardneg.flows import runners
from hardneg.flows.local_server import start_tied_server
from hardneg.flows.pipeline import plan, run_stages
from hardneg.flows.progress import closing_summary, split_counts
from hardneg.flows.request import check_scheduled_inputs, config_label, config_param, resolve_run
from hardneg.flows.runners import Pool
from hardneg.flows.stages import STAGES

# The terminal of the `hardneg run` that started this flow in its own process (None in a deployment).
TERMINAL: ContextVar[Progress | None] = ContextVar("hardneg_terminal", default=None)
# The run logger of the `hardneg-generate` run that started the stages subflow (None when run on its own).
TOP_LOG: ContextVar[logging.LoggerAdapter | None] = ContextVar("hardneg_top_log", default=None)
SKIPPED = "Skipped"  # the name of a Completed state: the run folder was locked by another run


def terminal() -> Progress | None:
    """The terminal to tell, if any. The flows reach TERMINAL only through this function: Prefect's Dask
    runner ships the running flow to its workers by value (with the globals its function names), and a
    ContextVar cannot be pickled."""
    return TERMINAL.get()


def top_log() -> logging.LoggerAdapter:
    """The logger of the top-level flow run: a subflow's own logs sit one click deeper in the UI than the
    run a user (or a deployment's schedule) started, so the stage lines go where they look first."""
    return TOP_LOG.get() or get_run_logger()


# One unit of one stage, in whatever worker Prefect put it (`runners.run_unit`: the config is read from the run).
TASKS = {
    s.name: task(runners.run_unit, name=s.name, cache_policy=NO_CACHE, task_run_name=f"{s.name}-{{unit}}")
    for s in STAGES
}


class RunLog(Progress):
    """Stage lines through a Prefect run logger: they reach the server with that flow run."""

    def __init__(self, log: logging.LoggerAdapter) -> None:
        self.log = log

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        self.log.info("%s: %d of %d units to do", stage, pending, units)

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        self.log.info(stage_line(stage, summary))

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        self.log.info(stage_line(stage, summary, skipped=True))


def task_pool(cfg: RunConfig, run_dir: str) -> Pool:
    """`run_stages`'s pool on Prefect: the pending units of a stage (or of a wave of stages) become
    parallel tasks, every one submitted before the first result is awaited; markers come back in job
    order."""

    def submit(jobs: list[tuple[str, str]]) -> Iterator[dict[str, Any]]:
        futures = []
        for stage, u in jobs:
            with runners.gpu_stage(cfg, stage):  # on Dask, a GPU stage's tasks each hold one GPU
                futures.append(TASKS[stage].submit(run_dir, stage, u))
        for f in futures:
            yield f.result()

    return submit


@flow(name="hardneg-stages", flow_run_name="stages of {run_dir}", log_prints=False)
def stages(run_dir: str) -> dict[str, Any]:
    """Every stage in order over the run folder's stored config; a stage's pending units run as parallel
    tasks."""
    root = Path(run_dir)
    run = Run(root, stored_config(root), STAGES, Tee(RunLog(top_log()), terminal()))
    run_stages(run, task_pool(run.cfg, run_dir))
    return {"run_folder": run_dir}


def run_name() -> str:
    """`<run folder> (<config>)`, from the flow run's parameters."""
    from prefect.runtime import flow_run

    p = flow_run.parameters
    try:
        folder = resolve_run(p.get("config"), p.get("output"), p.get("seed"), p.get("overrides"))[1].name
    except HardnegError:  # the run itself will say what is wrong
        folder = Path(p.get("output") or "run").name
    return f"{folder} ({config_label(p.get('config'))})"


@flow(name="hardneg-generate", flow_run_name=run_name, log_prints=False, validate_parameters=True)
def generate(
    config: str | None = None,
    output: str | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any] | State:
    """Build a hard-negative benchmark (Completed as Skipped when another run is writing the folder; Failed
    with one line when the user must fix something).

    Args:
        config: a config file, or a bundled config's name (demo, gqa, openai); default demo
        output: the run folder; a rerun resumes in it (default outputs/<config>-<hash>)
        seed: replaces the config's seed
        overrides: nested config keys applied on top, e.g. {"inputs": {"scene_graphs": "/data/gqa"}}
    """
    t0 = time.perf_counter()
    log = get_run_logger()
    try:
        cfg, root = resolve_run(config, output, seed, overrides)
        if from_deployment():
            check_scheduled_inputs(cfg, config)
        plan(cfg, root)  # every check before anything is written
        with removed_on_bad_input(root), RunLock(root, f"Prefect flow run {run_name_or_default()}"):
            prepare_run(cfg, root)
            token = TOP_LOG.set(log)
            try:
                stages.with_options(task_runner=runners.task_runner(cfg))(str(root))
            finally:
                TOP_LOG.reset(token)
    except RunBusy as busy:
        return refused(busy)
    except HardnegError as e:
        return user_error(e)
    manifest = read_manifest(root)
    log.info(closing_summary(root, manifest, time.perf_counter() - t0))
    _artifacts(root, manifest)
    c = manifest["counts"]
    return {"run_folder": str(root), "positives": c["positives"], "negatives": c["negatives"]}


def from_deployment() -> bool:
    """Whether this flow run was made by a deployment (a schedule, `prefect deployment run`)."""
    from prefect.runtime import deployment

    return deployment.id is not None


def refused(busy: RunBusy) -> State:
    """The end of a run into a folder another process is writing: Completed, named Skipped, never Failed.
    The other run is doing the work, so nothing went wrong here: no traceback, no failure alert. Not
    Cancelled: Prefect 3.8's engine raises on a flow that returns a Cancelled state, and a deployment's
    run then logs "Engine execution exited with unexpected exception" with a traceback."""
    get_run_logger().warning("skipped: %s", busy)
    return Completed(name=SKIPPED, message=f"skipped: {busy}")


def user_error(e: HardnegError) -> State:
    """The end of a run the user must fix: Failed, with the one line that says what as its message and no
    traceback (it is no bug). The error rides in the state, so `run_flow` raises it again for the CLI."""
    get_run_logger().error("hardneg: error: %s", e)
    return Failed(message=str(e), data=e)


def run_name_or_default() -> str:
    """The flow run's name, for the lock file's "who holds it"."""
    from prefect.runtime import flow_run

    return flow_run.name or "hardneg-generate"


def _artifacts(root: Path, manifest: dict[str, Any]) -> None:
    """`stats.md` as markdown and the counts per split as a table, on the flow run (keyed per run folder:
    the UI keeps each folder's history). `report.html` is named as a path to copy, never a `file://` link:
    a browser refuses to follow one from the Prefect UI."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    key = re.sub(r"[^a-z0-9-]+", "-", root.name.lower()).strip("-")[:40] or "run"
    stats = (root / "stats.md").read_text()
    where = (
        f"Run folder: `{root}`\n\nReport: open `{root / 'report.html'}` in a browser on the machine that "
        "holds the run folder (copy the path into the address bar).\n\n"
    )
    create_markdown_artifact(markdown=where + stats, key=f"hardneg-stats-{key}", description=f"stats of {root}")
    rows: dict[str, dict[str, Any]] = {}
    for (kind, split), n in split_counts(manifest).items():
        rows.setdefault(split, {"split": split})[kind] = n
    create_table_artifact(
        table=list(rows.values()), key=f"hardneg-counts-{key}", description=f"samples per split in {root}"
    )


def run_flow(
    config: str | None,
    output: Path,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the flow in this process (`hardneg run`), telling `progress` as it goes; returns the manifest.
    A run refused by the lock raises RunBusy (one line from the CLI), as `run_local` does. Without a
    server address, Prefect's temporary server is started first, tied to this process: a kill -9 of the
    run takes it along (`flows/local_server.py`)."""
    try:
        start_tied_server()
    except RuntimeError as e:  # Prefect's own words: "Timed out while attempting to connect to ephemeral ..."
        raise HardnegError(
            f"Prefect's temporary server did not start ({e}); a busy machine can take longer: raise "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, start one with `prefect server start` and set "
            "PREFECT_API_URL, or run with --no-prefect"
        ) from None
    token = TERMINAL.set(progress)
    try:
        state = generate(
            config=config_param(config), output=str(output), seed=seed, overrides=overrides or None, return_state=True
        )
    finally:
        TERMINAL.reset(token)
    if state.name == SKIPPED:
        raise RunBusy(str(state.message).removeprefix("skipped: "))
    state.result()  # a failed run raises its error here (a HardnegError as it was raised)
    return read_manifest(output)


def run_generate(cfg: RunConfig, run_dir: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Run the flow for a config object: its parameters are the demo config plus the keys `cfg` changes."""
    overrides = diff_tree(load_config(None).model_dump(mode="json"), cfg.model_dump(mode="json"))
    if resolve_run(None, run_dir, None, overrides)[0] != cfg:
        raise ValueError("this config cannot be given as overrides of the demo config; write it to a file")
    return run_flow(None, run_dir, overrides=overrides, progress=progress)
