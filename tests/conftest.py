"""The test session's folder for shared demo runs (`tests/runs.py`).

Made by the process that starts the session (pytest-xdist's controller, or the only process), before any
worker exists, so every worker inherits `$HARDNEG_TEST_RUNS` and finds the runs the others built; removed
when the session ends.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

ENV = "HARDNEG_TEST_RUNS"


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _is_worker(config):
        os.environ[ENV] = tempfile.mkdtemp(prefix="hardneg-test-runs-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _is_worker(config) and (home := os.environ.pop(ENV, None)):
        shutil.rmtree(home, ignore_errors=True)
