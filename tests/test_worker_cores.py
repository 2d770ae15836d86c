"""A worker process's BLAS threads (`flows/runners.share_cores`): its share of the cores it may run on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = """
import numpy, threadpoolctl
from hardneg.flows.runners import share_cores

def blas():
    return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")

print(blas())
for workers in {sequence}:
    print(share_cores(workers), blas())
"""


def test_a_worker_gets_its_share_of_the_cores_and_a_changed_share_is_set_again():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        pytest.skip("one core: every share is one thread")
    sequence = [2, 1, 4 * cores, 1]  # a long-lived worker serving runs of other sizes
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", CODE.format(sequence=sequence)], env=env, capture_output=True,
                         text=True, check=True).stdout.split("\n")  # fmt: skip
    assert int(out[0]) == cores  # OpenBLAS's default: a thread per core this process may use
    for workers, line in zip(sequence, out[1:], strict=False):
        share, threads = map(int, line.split())
        assert share == threads == max(1, cores // workers), (workers, line)


@pytest.mark.parametrize(("env", "want"), [({"OPENBLAS_NUM_THREADS": "1"}, 1), ({"OMP_NUM_THREADS": "1,1"}, 1)])
def test_a_thread_count_set_in_the_environment_wins(env: dict[str, str], want: int):
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cores < 2:
        pytest.skip("one core: every share is one thread")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")} | env
    out = subprocess.run([sys.executable, "-c", CODE.format(sequence=[1, 2])], env=env, capture_output=True,
                         text=True, check=True).stdout.split("\n")  # fmt: skip
    for line in out[1:3]:  # one worker would get every core, two their half: the environment's count instead
        assert tuple(map(int, line.split())) == (want, want), (env, line)
