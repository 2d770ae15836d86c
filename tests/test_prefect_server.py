"""Prefect the Prefect way, against a real `prefect server start` on 127.0.0.1: `prefect deploy --all`
deploys prefect.yaml; `hardneg serve` fires a cron run that completes, is named after its run folder and
config, sends its stage logs and leaves a stats artifact and a report link on the server; a run into a
folder another process is writing refuses with a clear message; `serve` stops on SIGTERM even after the
server went away. Before this was built: no prefect.yaml, random run names, a JSON-blob parameter, no logs or
artifacts from successful runs, overlapping runs both wrote the folder, and `serve` hung on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hardneg.core.runlock import RunLock
from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, check: Any, timeout_s: float, every_s: float = 1.0) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


class Server:
    def __init__(self, base: Path) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}/api"
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(base / "prefect-home"),
            "PREFECT_API_URL": self.url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(base / "results"),
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
            "PREFECT_RUNNER_POLL_FREQUENCY": "2",
        }
        port = self.url.split(":")[2].split("/")[0]
        self.log = (base / "server.log").open("w")
        self.proc = subprocess.Popen(
            [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", port],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        _wait("the Prefect server", self._healthy, 240)

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        r = httpx.post(f"{self.url}{path}", json=body or {}, timeout=10)
        r.raise_for_status()
        return r.json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("prefect-server"))
    try:
        yield s
    finally:
        s.stop()


def _cli(server: Server, *args: str, cwd: Path = REPO_ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([*args], env=server.env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_prefect_yaml_deploys_against_a_local_server(server: Server):
    r = _cli(server, str(BIN / "prefect"), "work-pool", "create", "hardneg", "--type", "process")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(server, str(BIN / "prefect"), "--no-prompt", "deploy", "--all")
    assert r.returncode == 0, r.stdout + r.stderr
    deployments = {d["name"]: d for d in server.post("/deployments/filter")}
    gqa = deployments["gqa-weekly"]
    assert [s["schedule"]["cron"] for s in gqa["schedules"]] == ["0 3 * * 1"]
    assert gqa["entrypoint"] == "hardneg.flows.generate.generate"
    assert gqa["parameters"]["config"] == "gqa" and gqa["work_pool_name"] == "hardneg"
    assert set(gqa["parameter_openapi_schema"]["properties"]) == {"config", "output", "seed", "overrides"}
    assert deployments["demo"]["parameters"] == {"config": "demo", "output": "outputs/demo-deployed"}


def _runs(server: Server, flow: str, state: str | None = None) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"flows": {"name": {"any_": [flow]}}}
    if state:
        body["flow_runs"] = {"state": {"type": {"any_": [state]}}}
    return server.post("/flow_runs/filter", body)


def test_a_scheduled_run_fires_completes_and_reports_to_the_server(server: Server, tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text("demo: {n_scenes: 4}\nshard_size: 4\nimages: {enabled: false}\n")
    out = tmp_path / "run"
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [str(BIN / "hardneg"), "serve", "--cron", "* * * * *", "--config", str(config), "--output", str(out)],
        env=server.env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        t0 = time.monotonic()
        [done] = _wait("a scheduled run to complete", lambda: _runs(server, "hardneg-generate", "COMPLETED"), 240, 3)
        fired_s = time.monotonic() - t0
        assert done["name"] == "run (tiny)"  # the run folder and the config, not a random name
        assert done["parameters"] == {"config": str(config), "output": str(out)}
        assert (out / "manifest.json").is_file() and (out / "README.md").is_file()

        stage_runs = _runs(server, "hardneg-stages")
        logs = server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [r["id"] for r in stage_runs]}}})
        messages = [m["message"] for m in logs]
        assert any(m.startswith("paths ") and " in 4 " in m and "rejects" in m for m in messages), messages
        assert any(m.startswith("write ") for m in messages)

        arts = {
            a["key"]: a
            for a in server.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [done["id"]]}}})
        }
        assert arts["hardneg-stats-run"]["type"] == "markdown"
        assert "Positives per split and level" in arts["hardneg-stats-run"]["data"]
        assert arts["hardneg-report-run"]["type"] in ("link", "markdown")  # Prefect 3.8 stores links as markdown
        assert (out / "report.html").as_uri() in arts["hardneg-report-run"]["data"]

        # A run while another process writes the folder refuses, and says who holds it.
        [dep] = server.post("/deployments/filter", {"deployments": {"name": {"any_": ["hardneg-scheduled"]}}})
        with RunLock(out, "the test"):
            busy = server.post(f"/deployments/{dep['id']}/create_flow_run", {"name": "busy"})
            state = _wait("the second run to end", lambda: _ended(server, busy["id"]), 120, 2)
        assert state["type"] == "FAILED"
        assert "is being written by the test (pid" in state["message"] or any(
            "is being written by the test" in m["message"]
            for m in server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [busy["id"]]}}})
        )

        # The server goes away; SIGTERM still stops `serve`, cleanly and soon.
        server.stop()
        serve.send_signal(signal.SIGTERM)
        t1 = time.monotonic()
        assert serve.wait(timeout=60) == 0
        stopped_s = time.monotonic() - t1
        print(f"\nscheduled run fired and finished in {fired_s:.0f}s; serve stopped {stopped_s:.1f}s after SIGTERM")
    finally:
        if serve.poll() is None:
            serve.kill()
        log.close()


def _ended(server: Server, run_id: str) -> dict[str, Any] | None:
    r = httpx.get(f"{server.url}/flow_runs/{run_id}", timeout=10).json()
    return r["state"] if r["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None
