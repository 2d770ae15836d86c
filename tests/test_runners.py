"""Where units run (`flows/runners.py`): processes without Prefect, and Prefect on a real local Dask
cluster, write the same bytes as one process and as Prefect's thread runner; a GPU stage's tasks go to
the worker holding the GPU."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from hardneg.core.config import load_config
from hardneg.core.runner.progress import Progress
from hardneg.core.splits import SPLITS
from hardneg.flows.pipeline import run_local
from hardneg.flows.runners import gpu_stage, local_workers, needs_gpu_worker, task_runner
from tests.helpers import prefect_harness_in
from tests.runs import shared_run

distributed = pytest.importorskip("distributed")
pytest.importorskip("prefect_dask")

# Small, sharded (3 shards), every stage running, GPU stages (images, filters) included.
SMALL = {
    "demo": {"n_scenes": 10},
    "shard_size": 4,
    "images": {"candidates": 1, "types": ["replace_object", "swap_object"]},
    "filters": {"scorers": {"seam": {}}},
}


def _same_splits(a: Path, b: Path) -> None:
    """The splits, and the exports' files (their shards' searches run in any worker, in any order)."""
    for s in SPLITS:
        for f in ("positive.json", "negative.json", "coco.json"):
            assert (a / "splits" / s / f).read_bytes() == (b / "splits" / s / f).read_bytes(), (s, f)
    for shape in ("tricd", "probes", "imagecode"):
        files = sorted(f.relative_to(a) for f in (a / shape).rglob("*.json"))
        assert files == sorted(f.relative_to(b) for f in (b / shape).rglob("*.json")), shape
        assert len(files) > 3, shape
        for f in files:
            assert (a / f).read_bytes() == (b / f).read_bytes(), f


@pytest.fixture(scope="module")
def serial_run() -> Path:
    return shared_run(SMALL)


@pytest.fixture(scope="module")
def prefect_harness(tmp_path_factory):
    with prefect_harness_in(tmp_path_factory.mktemp("prefect")):
        yield


def test_how_many_processes_run_local_uses():
    assert local_workers(load_config(None, {})) == 1  # threads: one process, as before
    assert local_workers(load_config(None, {"task_runner": "process", "workers": 3})) == 3
    assert local_workers(load_config(None, {}), workers=2) == 2
    with pytest.raises(ValueError, match="workers"):
        local_workers(load_config(None, {}), workers=0)


@pytest.mark.slow
def test_run_local_in_two_processes_writes_the_same_bytes(serial_run: Path, tmp_path: Path):
    class Workers(Progress):  # the pool's processes alive as each stage starts, and while its units come in
        def __init__(self) -> None:
            self.at_start: dict[str, int] = {}
            self.busy: set[str] = set()

        def stage_start(self, stage: str, units: int, pending: int) -> None:
            self.at_start[stage] = len(multiprocessing.active_children())

        def unit_done(self, stage: str, marker: dict) -> None:
            if multiprocessing.active_children():
                self.busy.add(stage)

    seen = Workers()
    run_local(load_config(None, SMALL), tmp_path / "run", seen, workers=2)
    _same_splits(serial_run, tmp_path / "run")
    # units ran in the pool (a worker may exit before the driver takes its last unit in: not every stage
    # shows), and a wave's workers were gone before the next wave began: they keep nothing of a finished
    # wave (its corpus index, its caches) while the others run
    assert len(seen.busy & {"hygiene", "paths", "language", "phrases", "tricd", "probes"}) >= 3
    assert seen.at_start == dict.fromkeys(seen.at_start, 0)


@pytest.mark.slow
def test_run_local_on_a_running_dask_cluster_writes_the_same_bytes(serial_run: Path, tmp_path: Path):
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        cfg = load_config(None, {**SMALL, "task_runner": "dask", "dask": {"address": cluster.scheduler_address}})
        run_local(cfg, tmp_path / "run")
    _same_splits(serial_run, tmp_path / "run")


@pytest.mark.slow
def test_the_dask_runner_writes_what_the_plain_run_writes(serial_run: Path, prefect_harness, tmp_path: Path):
    """A real local Dask cluster of two worker processes, one holding a GPU: Prefect's Dask runner writes
    what `run_local` does (and so what Prefect's thread runner does: tests/test_flow.py)."""
    from hardneg.flows.generate import run_generate

    cfg = load_config(None, {**SMALL, "task_runner": "dask", "workers": 2, "dask": {"gpus": [0]}})
    run_generate(cfg, tmp_path / "dask")
    _same_splits(serial_run, tmp_path / "dask")


def test_task_runners_follow_the_config():
    from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    assert isinstance(task_runner(load_config(None, {})), ThreadPoolTaskRunner)
    assert isinstance(task_runner(load_config(None, {"task_runner": "process"})), ProcessPoolTaskRunner)
    remote = task_runner(load_config(None, {"task_runner": "dask", "dask": {"address": "tcp://head:8786"}}))
    assert isinstance(remote, DaskTaskRunner) and remote.address == "tcp://head:8786"
    local = task_runner(load_config(None, {"task_runner": "dask", "workers": 3, "dask": {"gpus": [0, 1]}}))
    assert local.cluster_kwargs == {"n_workers": 3, "gpus": [0, 1]}


def test_only_gpu_stages_on_a_dask_cluster_with_gpus_ask_for_a_gpu():
    gpus = load_config(None, {"task_runner": "dask", "dask": {"gpus": [0]}})
    assert needs_gpu_worker(gpus, "images") and needs_gpu_worker(gpus, "filters")
    assert not needs_gpu_worker(gpus, "paths") and not needs_gpu_worker(gpus, "language")
    assert not needs_gpu_worker(load_config(None, {"task_runner": "dask"}), "images")  # no GPU workers
    assert not needs_gpu_worker(load_config(None, {"task_runner": "process", "dask": {"gpus": [0]}}), "images")
    assert needs_gpu_worker(load_config(None, {"task_runner": "dask", "dask": {"gpu_resource": True}}), "images")


@pytest.mark.slow
def test_a_gpu_stage_task_runs_on_the_worker_pinned_to_the_gpu(prefect_harness):
    from prefect import flow, task

    @task
    def where() -> tuple[str, str | None]:
        return distributed.get_worker().name, os.environ.get("CUDA_VISIBLE_DEVICES")

    cfg = load_config(None, {"task_runner": "dask", "workers": 2, "dask": {"gpus": [3]}})

    @flow
    def probe() -> tuple[list, list]:
        with gpu_stage(cfg, "images"):
            gpu = [where.submit() for _ in range(4)]
        cpu = [where.submit() for _ in range(8)]
        return [f.result() for f in gpu], sorted({f.result()[0] for f in cpu})

    on_gpu, cpu_workers = probe.with_options(task_runner=task_runner(cfg))()
    assert set(on_gpu) == {("gpu3", "3")}  # pinned: the worker sees only its GPU
    assert set(cpu_workers) <= {"gpu3", "cpu1"}
