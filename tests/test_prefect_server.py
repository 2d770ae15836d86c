"""Prefect the Prefect way, against a real `prefect server start` on 127.0.0.1: `prefect deploy --all`
deploys prefect.yaml; `hardneg serve` fires a cron run that completes, is named after its run folder and
config, logs its stage lines and counts on the run itself (not only on its subflow) and leaves a stats
markdown and a counts table on the server, with no `file://` link; a run into a folder another process is
writing ends Completed as Skipped with who holds it, no traceback; `serve` stops on SIGTERM with exit status 0, no
"never awaited" warning and no scheduled run left queued, even after the server went away; `hardneg run`
says at once that Prefect is starting. Before this was built: no prefect.yaml, random run names, a
JSON-blob parameter, no logs or artifacts from successful runs, overlapping runs both wrote the folder,
`serve` hung on SIGTERM; then: stage lines only on the subflow, a `file://` link, a refused run Failed
with a traceback, a blank terminal while Prefect started, and runs left queued after `serve` stopped."""

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
import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.runner.lock import RunLock
from tests.helpers import PHOTOS, REPO_ROOT

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
        """POST, retried on 503 as Prefect's own client does (SQLite busy under a loaded machine)."""
        for _ in range(5):
            r = httpx.post(f"{self.url}{path}", json=body or {}, timeout=10)
            if r.status_code != 503:
                break
            time.sleep(1)
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
    """On real photos (`tests/data/photos8`), as a schedule runs in real use."""
    config = tmp_path / "tiny.yaml"
    config.write_text("shard_size: 4\nimages: {candidates: 2}\n")
    out = tmp_path / "run"
    log = (tmp_path / "serve.log").open("w")
    inputs = {"scene_graphs": str(PHOTOS / "sceneGraphs.json"), "images": str(PHOTOS / "images")}
    args = ["serve", "--cron", "* * * * *", "--config", str(config), "--output", str(out)]
    args += ["--scene-graphs", inputs["scene_graphs"], "--images", inputs["images"]]
    serve = subprocess.Popen(
        [str(BIN / "hardneg"), *args],
        env=server.env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        t0 = time.monotonic()

        # a run of the minute's schedule that starts while the first still works is skipped (Completed,
        # named Skipped): the one that did the work is the one that is not
        def worked() -> list[dict[str, Any]]:
            return [r for r in _deployment_runs(server, "COMPLETED") if r["state"]["name"] != "Skipped"]

        [done] = _wait("a scheduled run to complete", worked, 240, 3)[:1]
        fired_s = time.monotonic() - t0
        assert done["name"] == "run (tiny)"  # the run folder and the config, not a random name
        assert done["parameters"] == {"config": str(config), "output": str(out), "overrides": {"inputs": inputs}}
        assert (out / "manifest.json").is_file() and (out / "README.md").is_file()
        assert orjson.loads((out / "manifest.json").read_bytes())["counts"]["ingest"]["images_kept"] == 8

        # The run a user clicks (the deployment's own, not its "stages of" subflow) has every stage's line
        # and the counts.
        def closing_summary_logged() -> list[str]:  # the last lines may reach the server after the state
            messages = _messages(server, done["id"])
            return messages if any(m.startswith("run folder: ") and "positives" in m for m in messages) else []

        messages = _wait("the run's closing summary in its logs", closing_summary_logged, 30)
        assert any(m.startswith("paths ") and " in 8 " in m and "rejects" in m for m in messages), messages
        assert any(m.startswith("write ") for m in messages)

        # Artifacts a browser opens: stats.md as markdown, the counts as a table, no file:// link.
        arts = {
            a["key"]: a
            for a in server.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [done["id"]]}}})
        }
        assert arts["hardneg-stats-run"]["type"] == "markdown"
        assert "Positives per split and level" in arts["hardneg-stats-run"]["data"]
        assert f"`{out / 'report.html'}`" in arts["hardneg-stats-run"]["data"]  # a path to copy
        assert arts["hardneg-counts-run"]["type"] == "table"
        assert '"split"' in arts["hardneg-counts-run"]["data"] and '"positives"' in arts["hardneg-counts-run"]["data"]
        assert set(arts) == {"hardneg-stats-run", "hardneg-counts-run"}
        assert not any("file://" in str(a["data"]) for a in arts.values())

        # A run while another process writes the folder is skipped (Completed, named Skipped), saying who holds
        # it, with no traceback.
        [dep] = server.post("/deployments/filter", {"deployments": {"name": {"any_": ["hardneg-scheduled"]}}})
        with RunLock(out, "the test"):
            busy = server.post(f"/deployments/{dep['id']}/create_flow_run", {"name": "busy"})
            state = _wait("the second run to end", lambda: _ended(server, busy["id"]), 120, 2)
        assert (state["type"], state["name"]) == ("COMPLETED", "Skipped"), state
        assert "skipped: " in state["message"] and "is being written by the test (pid" in state["message"]
        assert not any("Traceback" in m or "unexpected exception" in m for m in _messages(server, busy["id"]))

        # SIGTERM: `serve` stops cleanly, pauses the schedule and leaves no scheduled run queued.
        before = (tmp_path / "serve.log").stat().st_size
        serve.send_signal(signal.SIGTERM)
        t1 = time.monotonic()
        assert serve.wait(timeout=60) == 0
        stopped_s = time.monotonic() - t1
        log.close()
        said = (tmp_path / "serve.log").read_bytes()[before:].decode()  # what the shutdown printed
        assert "never awaited" not in said and "Traceback" not in said, said
        assert httpx.get(f"{server.url}/deployments/{dep['id']}", timeout=10).json()["paused"]
        assert not [r for r in _deployment_runs(server, "SCHEDULED") if r["deployment_id"] == dep["id"]]
        print(f"\nscheduled run fired and finished in {fired_s:.0f}s; serve stopped {stopped_s:.1f}s after SIGTERM")
    finally:
        if serve.poll() is None:
            serve.kill()
        log.close()


def test_hardneg_run_says_at_once_that_prefect_starts_and_a_locked_folder_is_skipped(server: Server, tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text("demo: {n_scenes: 4}\nshard_size: 4\nimages: {enabled: false}\n")
    out = tmp_path / "cli-run"
    cmd = [str(BIN / "hardneg"), "run", "--config", str(config), "--output", str(out)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, env=server.env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()
    first_s = time.monotonic() - t0
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, first + err
    assert first.startswith("starting Prefect (server at "), first + err
    assert "ingest " in err  # the stage lines come after it

    # a run folder another process writes: begun (a new one is refused before Prefect starts, naming
    # the holder; a finished one reruns without Prefect)
    locked = tmp_path / "locked"
    prepare_run(load_config(str(config)), locked)
    with RunLock(locked, "the test"):
        r = _cli(server, *cmd[:-1], str(locked), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "hardneg: error: " in r.stderr and "is being written by the test (pid" in r.stderr
    assert "Traceback" not in r.stderr
    [run] = [x for x in _runs(server, "hardneg-generate") if x["parameters"].get("output") == str(locked)]
    assert (run["state"]["type"], run["state"]["name"]) == ("COMPLETED", "Skipped"), run["state"]
    print(f"\nfirst line after {first_s:.1f}s")


def test_serve_stops_on_sigterm_after_the_server_went_away(server: Server, tmp_path: Path):
    out = tmp_path / "run"
    serve = subprocess.Popen(
        [str(BIN / "hardneg"), "serve", "--cron", "0 3 * * 1", "--config", "demo", "--output", str(out)],
        env=server.env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait("serve to register", lambda: _scheduled_deployment(server, str(out)), 120)
        time.sleep(3)  # the runner's loop starts
        server.stop()
        serve.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        assert serve.wait(timeout=60) == 0
        print(f"\nserve stopped {time.monotonic() - t0:.1f}s after SIGTERM without a server")
    finally:
        if serve.poll() is None:
            serve.kill()


def _scheduled_deployment(server: Server, output: str) -> bool:
    deps = server.post("/deployments/filter", {"deployments": {"name": {"any_": ["hardneg-scheduled"]}}})
    return any(d["parameters"].get("output") == output and not d["paused"] for d in deps)


def _messages(server: Server, run_id: str) -> list[str]:
    """The log lines of one flow run (not of its subflows)."""
    logs = server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [run_id]}}, "limit": 200})
    return [m["message"] for m in logs]


def _deployment_runs(server: Server, state: str) -> list[dict[str, Any]]:
    return [r for r in _runs(server, "hardneg-generate", state) if r["deployment_id"]]


def _ended(server: Server, run_id: str) -> dict[str, Any] | None:
    r = httpx.get(f"{server.url}/flow_runs/{run_id}", timeout=10).json()
    return r["state"] if r["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED") else None
