"""Scheduled runs: a Prefect deployment of the generation flow, served by this process.

    hardneg serve --cron "0 3 * * 1" [--config FILE] [--output DIR]

Schedules fire only against a running Prefect server (`prefect server start`, then
`PREFECT_API_URL=http://127.0.0.1:4200/api`); ephemeral mode never triggers them. The config file is read
when each scheduled run starts, so editing it changes the next run, and each run resumes in the same run
folder (finished shards are skipped, changed stages redone).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from core.config import load_config
from flows.generate import run_generate


@flow(name="hardneg-scheduled", log_prints=False)
def scheduled(config_path: str | None, run_dir: str) -> dict:
    """Load the config at run time, then run the generation flow into `run_dir`."""
    return run_generate(load_config(config_path), Path(run_dir))


def make_deployment(config_path: str | None, run_dir: str, cron: str, name: str = "hardneg-scheduled"):
    """A RunnerDeployment with a cron schedule (validated by Prefect), ready for `prefect.serve`."""
    return scheduled.to_deployment(name=name, cron=cron, parameters={"config_path": config_path, "run_dir": run_dir})


def serve(config_path: str | None, run_dir: str, cron: str) -> None:  # pragma: no cover - blocks until stopped
    from prefect import serve as prefect_serve

    prefect_serve(make_deployment(config_path, run_dir, cron))
