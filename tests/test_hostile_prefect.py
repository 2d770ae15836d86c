"""kill -9 of a Prefect-mode `hardneg run` leaves no Prefect server behind. Without PREFECT_API_URL the run
needs a temporary local Prefect server, a child process; before this was fixed Prefect started it with no
tie to its parent, and after a kill -9 of the run it kept running (and holding its port) for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

BIN = Path(sys.executable).parent
SERVER_APP = "prefect.server.api.server:create_app"


def _wait(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:  # gone meanwhile
        return []


def _server_child(pid: int) -> tuple[int, int] | None:
    """(pid, port) of the Prefect server among `pid`'s children, once it answers; else None."""
    kids = [int(k) for t in Path(f"/proc/{pid}/task").iterdir() for k in (t / "children").read_text().split()]
    for kid in kids:
        args = _cmdline(kid)
        if SERVER_APP in args:
            port = int(args[args.index("--port") + 1])
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    return kid, port
            except httpx.HTTPError:
                return None
    return None


def _alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a reaper (a container's init may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_of_a_prefect_run_takes_its_temporary_server_along(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text("demo: {n_scenes: 4}\nshard_size: 4\nimages: {enabled: false}\n")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(tmp_path / "res")}
    with (tmp_path / "run.log").open("w") as log:
        run = subprocess.Popen(
            [str(BIN / "hardneg"), "run", "--config", str(config), "--output", str(tmp_path / "run")],
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = None
    try:
        server, _port = _wait("the run's Prefect server to answer", lambda: _server_child(run.pid), 60)
        run.send_signal(signal.SIGKILL)
        run.wait()
        _wait("the orphaned Prefect server to exit", lambda: not _alive(server), 15)
    finally:
        for pid in (run.pid, server):
            if pid is not None and _alive(pid):
                os.kill(pid, signal.SIGKILL)
