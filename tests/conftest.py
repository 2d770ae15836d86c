"""Session-wide set-up for the tests, whether one process runs them or pytest-xdist's workers do.

- The folder for shared demo runs (`tests/runs.py`): made by the process that starts the session (xdist's
  controller, or the only process) before any worker exists, so every worker inherits `$HARDNEG_TEST_RUNS`
  and finds the runs the others built; removed when the session ends.
- Each xdist worker's share of the cores for BLAS and OpenMP: the workers are processes sharing one
  machine, as hardneg's own worker processes are (`flows/runners.share_cores`, which an explicit
  OMP_NUM_THREADS overrides). Threads that outnumber the cores spin against each other: a test file that
  runs the pipeline took 2.4x the CPU time with every worker running a thread per core.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

RUNS = "HARDNEG_TEST_RUNS"


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _is_worker(config):
        os.environ[RUNS] = tempfile.mkdtemp(prefix="hardneg-test-runs-")
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, cores // config.workerinput["workercount"])))


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _is_worker(config) and (home := os.environ.pop(RUNS, None)):
        shutil.rmtree(home, ignore_errors=True)
