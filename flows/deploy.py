"""Scheduled runs: the generation flow as a Prefect deployment with a cron schedule.

    hardneg serve --cron "0 3 * * 1" [--config FILE] [--output DIR]     # this process runs them
    prefect deploy --all                                                  # prefect.yaml: a worker runs them

Schedules fire only against a running Prefect server (`prefect server start`, then
`PREFECT_API_URL=http://127.0.0.1:4200/api`); ephemeral mode never triggers them. The config file is read
when each scheduled run starts, so editing it changes the next run, and each run resumes in the same run
folder (finished shards are skipped, changed stages redone). Two runs never write one folder at once: the
second ends Completed as Skipped, saying who holds the folder (`core/runner/lock.py`). The deployment's
entrypoint is the module path `hardneg.flows.generate.generate`, so it does not depend on the directory
`serve` was started from. SIGTERM or Ctrl+C stops `serve` cleanly and leaves no scheduled run queued (`StoppingRunner`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from typing import Any
from uuid import UUID

from prefect.deployments.runner import EntrypointType
from prefect.runner import Runner

from hardneg.core.errors import HardnegError
from hardneg.flows.generate import generate
from hardneg.flows.request import config_param

SHUTDOWN_GRACE_S = 10.0  # after SIGTERM, how long the runner may spend telling the server it stops


def make_deployment(
    config: str | None,
    output: str,
    cron: str,
    overrides: dict[str, Any] | None = None,
    name: str = "hardneg-scheduled",
) -> Any:
    """A RunnerDeployment of `hardneg-generate` with a cron schedule (validated by Prefect); `overrides`
    carry the inputs `serve` was given, as absolute paths."""
    parameters: dict[str, Any] = {"config": config_param(config), "output": output}
    if overrides:
        parameters["overrides"] = overrides
    return generate.to_deployment(
        name=name,
        cron=cron,
        parameters=parameters,
        entrypoint_type=EntrypointType.MODULE_PATH,
        description="hardneg on a schedule: each run resumes in the same run folder",
    )


def check_cron(cron: str) -> None:
    """A cron string Prefect accepts, or a HardnegError in one line."""
    from prefect.client.schemas.schedules import CronSchedule
    from pydantic import ValidationError

    try:
        CronSchedule(cron=cron)
    except ValidationError:
        raise HardnegError(
            f'--cron "{cron}" is not a cron schedule: five fields, minute hour day month weekday, e.g. "0 3 * * 1"'
        ) from None


def check_server(api_url: str, timeout_s: float = 5.0) -> None:
    """The Prefect server answers at `api_url`, or a HardnegError in one line."""
    import httpx

    try:
        httpx.get(api_url.rstrip("/") + "/health", timeout=timeout_s).raise_for_status()
    except httpx.HTTPError as e:
        raise HardnegError(
            f"no Prefect server answers at PREFECT_API_URL={api_url} ({type(e).__name__}); start one with "
            "`prefect server start`"
        ) from None


def serve(
    config: str | None, output: str, cron: str, overrides: dict[str, Any] | None = None
) -> None:  # pragma: no cover - blocks until stopped
    """Serve the deployment until SIGTERM or Ctrl+C, then stop cleanly (`StoppingRunner`). When the server
    is gone the shutdown would hang on retries, so SHUTDOWN_GRACE_S after the signal the process exits
    anyway."""
    runner = StoppingRunner()
    runner.deployment_id = runner.add_deployment(make_deployment(config, output, cron, overrides))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # before the runner starts: nothing to stop yet
    signal.signal(signal.SIGINT, runner.handle_sigterm)  # Ctrl+C stops the same way (asyncio leaves it be)
    asyncio.run(runner.start())


class StoppingRunner(Runner):
    """Prefect's runner with a shutdown that completes. Prefect's own SIGTERM handler calls the sync
    `stop()` from inside the runner's event loop, which only makes a coroutine (a "never awaited" warning)
    and then exits mid-loop. Here a signal schedules `astop()` on the loop: running flow runs are cancelled,
    the loop ends, and leaving the runner pauses the deployment's schedule (Prefect then deletes the
    future runs it had scheduled); runs the schedule made that are already due are cancelled, so nothing
    stays queued for a runner that is gone. Restarting `serve` resumes the schedule."""

    deployment_id: UUID | None = None

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        if self.stopping:
            return  # a second Ctrl+C: the grace timer ends it if the first one hangs
        timer = threading.Timer(SHUTDOWN_GRACE_S, _exit_now)
        timer.daemon = True
        timer.start()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            sys.exit(0)
        if not self.started:
            sys.exit(0)  # still starting: nothing runs yet
        self.stopping = True
        loop.call_soon_threadsafe(lambda: loop.create_task(self.astop()))

    async def __aexit__(self, *exc_info: Any) -> None:
        await super().__aexit__(*exc_info)  # pauses the schedule: no new runs from here on
        if self.deployment_id is not None:
            await cancel_scheduled_runs(self.deployment_id)


async def cancel_scheduled_runs(deployment_id: UUID) -> int:
    """Cancel the deployment's runs its schedule made that still wait to start (ones a user asked for stay
    queued for the next `serve`); returns how many."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterId,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.states import Cancelled

    waiting = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.SCHEDULED])))
    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=waiting, deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment_id]))
        )
        scheduled = [r for r in runs if r.auto_scheduled]
        for r in scheduled:
            await client.set_flow_run_state(r.id, Cancelled(message="hardneg serve stopped"), force=True)
    return len(scheduled)


def _exit_now() -> None:
    print("hardneg serve: the Prefect server did not answer; stopped without it", file=sys.stderr, flush=True)
    os._exit(0)
