"""`in_processes`, the local process pool of a wave: results in job order, a worker that has nothing left
to do exits (what it built goes with it), a failed job raises with its traceback after the jobs beside it,
a dead worker raises at once."""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from hardneg.flows.runners import RemoteTraceback, in_processes


def test_results_come_in_job_order_from_several_processes(tmp_path: Path):
    # the first job waits until another process has taken a job, so it ends last whatever the machine's load
    jobs = [(tmp_path, "slow"), (tmp_path, "fast"), (tmp_path, "middle")]
    got = list(in_processes(_pid_once_another_ran, jobs, 2))
    assert [name for name, _ in got] == ["slow", "fast", "middle"]
    assert len({pid for _, pid in got}) == 2 and os.getpid() not in {pid for _, pid in got}
    assert list(in_processes(math.sqrt, [(4.0,)], 3)) == [2.0]  # one job: one worker, not three
    assert multiprocessing.active_children() == []


def test_a_worker_with_no_job_left_exits_while_the_others_work():
    results = in_processes(time.sleep, [(0.0,), (3.0,)], 2)
    next(results)  # the quick job is in; its worker finds only its stop sign
    deadline = time.monotonic() + 2.0
    while len(multiprocessing.active_children()) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(multiprocessing.active_children()) == 1  # the one still sleeping
    assert list(results) == [None]
    assert multiprocessing.active_children() == []


def test_a_failed_job_raises_with_its_traceback_and_no_job_starts_after_it(tmp_path: Path):
    files = [tmp_path / "1", tmp_path / "no-such-folder" / "2", tmp_path / "3", tmp_path / "4"]
    results = in_processes(Path.touch, [(f,) for f in files], 1)  # one worker: the jobs run in order
    assert next(results) is None and files[0].exists()
    with pytest.raises(FileNotFoundError) as e:
        next(results)
    assert isinstance(e.value.__cause__, RemoteTraceback) and "FileNotFoundError" in str(e.value.__cause__)
    assert multiprocessing.active_children() == []  # the generator closed its workers
    assert not files[2].exists() and not files[3].exists()


def test_a_worker_that_dies_raises_at_once():
    t = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exit code 3"):
        list(in_processes(_abort_or_sleep, [(True,), (False,)], 2))
    assert time.monotonic() - t < 20  # the other worker (sleeping 60 s) was stopped, not waited for
    assert multiprocessing.active_children() == []


def _pid_once_another_ran(folder: Path, name: str) -> tuple[str, int]:
    """Notes this process; the "slow" job then waits (up to 60 s) until a job ran in another one."""
    me = os.getpid()
    (folder / f"{name}-{me}").touch()
    deadline = time.monotonic() + 60
    while name == "slow" and time.monotonic() < deadline:
        if any(not p.name.endswith(f"-{me}") for p in folder.iterdir()):
            break
        time.sleep(0.02)
    return name, me


def _abort_or_sleep(abort: bool) -> None:
    if abort:
        os._exit(3)
    time.sleep(60)


def test_an_exception_that_does_not_pickle_back_still_says_what_happened():
    with pytest.raises(RuntimeError, match=r"Picky: no 7") as e:
        list(in_processes(_picky, [(7,)], 1))
    assert "Picky" in str(e.value.__cause__)


class Picky(Exception):
    def __init__(self, what: str, n: int) -> None:  # pickles, but cannot be rebuilt from its args
        super().__init__(f"{what} {n}")


def _picky(n: int) -> None:
    raise Picky("no", n)
