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


def test_results_come_in_job_order_from_several_processes():
    jobs = [(0.3, "slow"), (0.0, "fast"), (0.1, "middle")]
    got = list(in_processes(_sleep_then_pid, jobs, 2))
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


def _sleep_then_pid(seconds: float, name: str) -> tuple[str, int]:
    time.sleep(seconds)
    return name, os.getpid()


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
