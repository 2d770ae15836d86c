"""The temporary Prefect server of a `hardneg run` without PREFECT_API_URL, tied to the run's life.

Without a server address Prefect starts a temporary local server as a child process when first asked
(`SubprocessASGIServer`) and stops it at exit; a run killed hard (kill -9, the OOM killer) never gets to
exit, and that server kept running, holding its port and its database, for good. `start_tied_server`
starts the same server, with the same command and settings, from the thread that runs the flow, and asks
Linux to send it SIGTERM when that thread's process dies, however it dies (PR_SET_PDEATHSIG, set in the
child before it runs the server). It is registered where Prefect looks for its temporary server, so every
part of Prefect (clients, the event and log workers, in any thread) uses this one and none starts a
second. Where the tie cannot hold (not Linux; a thread other than the main one, whose end would stop the
server under a run that goes on) Prefect starts its server itself, as before.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_this_process() -> Callable[[], None]:
    """A `preexec_fn` giving the child SIGTERM when this process dies. libc is looked up here, before the
    fork, so the child only makes the call; a parent already gone by then exits the child at once."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # died between the fork and the prctl: nobody would signal us
            os._exit(1)

    return preexec


@functools.cache
def _tied_server_class() -> type:
    """Prefect's temporary server, started with the death signal set (Prefect is imported only here)."""
    import prefect
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class TiedServer(SubprocessASGIServer):
        def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
            """Prefect's own command and environment (prefect 3.8, `SubprocessASGIServer`), plus the tie."""
            app_dir = str(prefect.__module_path__.parent)
            args = ["--app-dir", app_dir, "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1"]
            args += ["--port", str(self.port), "--log-level", "error", "--lifespan", "on"]
            server_env = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}
            settings_env = get_current_settings().to_environment_variables(exclude_unset=True)
            return subprocess.Popen(
                [sys.executable, "-m", "uvicorn", *args],
                env={**os.environ, **server_env, **settings_env},
                preexec_fn=die_with_this_process(),
            )

    return TiedServer


def start_tied_server() -> bool:
    """Start Prefect's temporary server now, tied to this process; False (nothing started) when a server
    is configured, one is already registered here (a test harness, an earlier flow), or the tie cannot
    hold."""
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    if settings.api.url or not settings.server.ephemeral.enabled or None in SubprocessASGIServer._instances:
        return False
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return False
    _tied_server_class()().start()  # registered under Prefect's default key; stopped at exit, as Prefect's is
    return True
