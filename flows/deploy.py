"""Scheduled runs: the generation flow as a Prefect deployment with a cron schedule.

    hardneg serve --cron "0 3 * * 1" [--config FILE] [--output DIR]     # this process runs them
    prefect deploy --all                                                  # prefect.yaml: a worker runs them

Schedules fire only against a running Prefect server (`prefect server start`, then
`PREFECT_API_URL=http://127.0.0.1:4200/api`); ephemeral mode never triggers them. The config file is read
when each scheduled run starts, so editing it changes the next run, and each run resumes in the same run
folder (finished shards are skipped, changed stages redone). Two runs never write one folder at once: the
second refuses (`core/runlock.py`). The deployment's entrypoint is the module path
`hardneg.flows.generate.generate`, so it does not depend on the directory `serve` was started from.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any

from prefect.deployments.runner import EntrypointType

from hardneg.flows.generate import generate
from hardneg.flows.request import config_param

SHUTDOWN_GRACE_S = 10.0  # after SIGTERM, how long the runner may spend telling the server it stops


def make_deployment(config: str | None, output: str, cron: str, name: str = "hardneg-scheduled") -> Any:
    """A RunnerDeployment of `hardneg-generate` with a cron schedule (validated by Prefect)."""
    return generate.to_deployment(
        name=name,
        cron=cron,
        parameters={"config": config_param(config), "output": output},
        entrypoint_type=EntrypointType.MODULE_PATH,
        description="hardneg on a schedule: each run resumes in the same run folder",
    )


def check_cron(cron: str) -> None:
    """A cron string Prefect accepts, or ValueError in one line."""
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    try:
        CronSchedule(cron=cron)
    except ValidationError:
        raise ValueError(
            f'--cron "{cron}" is not a cron schedule: five fields, minute hour day month weekday, e.g. "0 3 * * 1"'
        ) from None


def check_server(api_url: str, timeout_s: float = 5.0) -> None:
    """The Prefect server answers at `api_url`, or ValueError in one line."""
    import httpx

    try:
        httpx.get(api_url.rstrip("/") + "/health", timeout=timeout_s).raise_for_status()
    except httpx.HTTPError as e:
        raise ValueError(
            f"no Prefect server answers at PREFECT_API_URL={api_url} ({type(e).__name__}); start one with "
            "`prefect server start`"
        ) from None


def serve(config: str | None, output: str, cron: str) -> None:  # pragma: no cover - blocks until stopped
    """Serve the deployment until SIGTERM or Ctrl+C. Prefect's runner shuts down gracefully on SIGTERM
    (it pauses the schedule and stops its flow runs); when the server is gone that hangs on retries, so
    after SHUTDOWN_GRACE_S the process exits anyway."""
    from prefect import serve as prefect_serve
    from prefect.runner import Runner

    original = Runner.handle_sigterm

    def handle_sigterm(self: Runner, *args: Any, **kwargs: Any) -> None:
        timer = threading.Timer(SHUTDOWN_GRACE_S, _exit_now)
        timer.daemon = True
        timer.start()
        original(self, *args, **kwargs)

    Runner.handle_sigterm = handle_sigterm  # type: ignore[method-assign]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # before the runner starts: exit cleanly too
    try:
        prefect_serve(make_deployment(config, output, cron), print_starting_message=False)
    finally:
        Runner.handle_sigterm = original  # type: ignore[method-assign]


def _exit_now() -> None:
    print("hardneg serve: the Prefect server did not answer; stopped without it", file=sys.stderr, flush=True)
    os._exit(0)
