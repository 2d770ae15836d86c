"""Where a stage's units run: the one place that turns `task_runner` and `workers` into workers.

- **Prefect** (`flows/generate.py`): `task_runner(cfg)` is Prefect's thread or process pool, or Prefect's
  Dask runner (`prefect-dask`'s `DaskTaskRunner`) on a running cluster (`dask.address`) or on a local
  one started for the run. One task per unit, as with the pools. `gpu_stage(cfg, stage)` marks the units
  of a GPU stage (`Stage.gpu`) as needing a worker with the Dask resource `GPU=1`, so each GPU runs one
  model-holding task at a time; models are built once per worker process (`backends/models.py`).
- **Without Prefect** (`run_local`): `unit_pool(cfg, workers)` runs units in this process, in a process
  pool per wave of stages (`process`, or `dask` without an address), or on the Dask cluster at
  `dask.address`.

Every way runs the same `run_unit`, which reads the config stored in the run folder, so the output does
not depend on where a unit ran.

Dask, not Ray: every unit is a short function of a path that reads and writes files; Dask's scheduler
does exactly that, `prefect-dask` is maintained with Prefect 3, worker resources (`--resources GPU=1`)
and per-worker processes give one model per GPU, and `dask scheduler` / `dask worker` (or dask-jobqueue
on SLURM/PBS, dask-kubernetes) deploy it with one command per machine. Ray's actors and object store
buy nothing here and Ray weighs a multi-hundred-MB wheel with its own cluster runtime.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import pickle
import queue
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from uuid import uuid4

from hardneg.core.config import RunConfig
from hardneg.core.errors import MissingDependency
from hardneg.core.runner.folder import stored_config
from hardneg.core.runner.stage import Jobs, Run, Stage
from hardneg.core.secrets import scrub_for
from hardneg.flows.stages import STAGES

T = TypeVar("T")

GPU = "GPU"  # the Dask worker resource a GPU stage's unit needs (`dask worker --resources GPU=1`)

Pool = Jobs  # (stage, unit) jobs, of one stage or of a wave of stages (`Run.waves`) -> markers, in job order


def run_unit(run_dir: str, stage: str, unit: str, workers: int | None = None) -> dict[str, Any]:
    """One unit of one stage in whatever worker runs it; the config is the one stored in the run.
    `workers`: how many processes share this machine's cores (default: the config's)."""
    root = Path(run_dir)
    cfg = stored_config(root)
    scrub_for([cfg.language.openai.api_key_env])  # a worker's log lines go to Prefect and the terminal too
    share_cores(workers or local_workers(cfg))
    return Run(root, cfg, STAGES).run_unit(stage, unit)


@functools.lru_cache(maxsize=1)
def share_cores(workers: int) -> int:
    """Limit this process's BLAS (numpy's OpenBLAS: spaCy's tagger, `generators/rewrite.numpy_blas`) to its
    share of the cores it may run on, and return it. OpenBLAS starts a thread per core in every process: two
    workers on two cores tagged 1.6x slower than with one thread each. Set again whenever `workers` changes
    (a long-lived Dask worker may serve runs of another size); one worker gets every core. A count set in
    the environment (OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS) wins: whoever starts several processes
    on one machine (parallel test workers, a batch scheduler) knows their share better."""
    import numpy  # noqa: F401  # threadpoolctl limits the libraries loaded so far
    from threadpoolctl import threadpool_limits

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = _threads_from_env() or max(1, cores // max(1, workers))
    threadpool_limits(limits=threads, user_api="blas")
    return threads


def _threads_from_env() -> int | None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        first = os.environ.get(var, "").split(",")[0].strip()  # OMP_NUM_THREADS may list nested levels
        if first.isdigit() and int(first) > 0:
            return int(first)
    return None


def local_workers(cfg: RunConfig, workers: int | None = None) -> int:
    """How many processes `run_local` uses: `workers` when given; else the config's `workers` for the
    process and Dask runners, one for the thread runner (CPU-bound Python gains nothing from threads)."""
    if workers is not None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        return workers
    return cfg.workers if cfg.task_runner in ("process", "dask") else 1


@contextlib.contextmanager
def unit_pool(cfg: RunConfig, root: Path, workers: int | None = None) -> Iterator[Pool | None]:
    """Runs units for `run_local`: None (in this process, one at a time), a process pool per wave of stages
    (`Run.waves`, `in_processes`), or the Dask cluster at `dask.address`. A pool's workers keep their spaCy
    pipeline, models and per-worker indexes (`Unit.shared`) from shard to shard of a wave, and each exits
    when no unit of the wave is left for it: what a wave built is not held while the rest of it finishes,
    nor under the next wave (the exports' indexes and caches are GBs at GQA scale), for about a second of
    start-up a worker and wave. A wave of one unit runs here."""
    if cfg.task_runner == "dask" and cfg.dask.address:
        from distributed import Client

        with Client(cfg.dask.address) as client:

            def on_dask(jobs: list[tuple[str, str]]) -> Iterator[dict[str, Any]]:
                futures = [
                    client.submit(
                        run_unit, str(root), stage, u, key=f"{stage}-{u}-{uuid4().hex}",
                        resources={GPU: 1} if needs_gpu_worker(cfg, stage) else None,
                    )
                    for stage, u in jobs
                ]  # fmt: skip
                for f in futures:
                    yield f.result()

            yield on_dask
        return
    n = local_workers(cfg, workers)
    if n == 1:
        yield None
        return

    def on_processes(jobs: list[tuple[str, str]]) -> Iterator[dict[str, Any]]:
        if len(jobs) <= 1:  # nothing to overlap: skip the round trip (and the copy of a big marker)
            yield from (run_unit(str(root), stage, u, 1) for stage, u in jobs)  # here: all the cores
            return
        yield from in_processes(run_unit, [(str(root), stage, u, n) for stage, u in jobs], n)

    yield on_processes


class RemoteTraceback(Exception):
    """Where a worker's exception was raised: its traceback, as text (the cause of the exception re-raised)."""

    def __str__(self) -> str:
        return str(self.args[0])


def in_processes(fn: Callable[..., T], jobs: list[tuple[Any, ...]], n: int) -> Iterator[T]:
    """`fn(*job)` for each job in at most `n` fresh worker processes, the results in job order. Spawned, as
    Prefect's process runner: a fresh interpreter per worker, whatever threads this one runs. A worker takes
    the next job as it frees up and exits when none is left: what it built (a corpus index, caches, spaCy)
    goes with it while the others finish and the wave's stages close. A job that raises raises here, once
    the jobs running beside it are done (none starts after it); a worker that dies (killed, out of memory)
    raises here at once, and the others are stopped."""
    ctx = multiprocessing.get_context("spawn")
    todo, done, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    for k, job in enumerate(jobs):
        todo.put((k, job))
    workers = [ctx.Process(target=_work, args=(fn, todo, done, stop), daemon=True) for _ in range(min(n, len(jobs)))]
    for w in workers:
        todo.put(None)  # one stop sign each, after the jobs
        w.start()
    got: dict[int, tuple[bool, Any]] = {}
    dead = None
    try:
        for k in range(len(jobs)):
            while k not in got:
                alive = any(w.is_alive() for w in workers)  # a worker flushes its results before it exits
                try:
                    i, ok, value = done.get(timeout=0.5)
                except queue.Empty:
                    dead = next((w for w in workers if w.exitcode not in (None, 0)), None)
                    if dead is not None or not alive:
                        code = "" if dead is None else f" (exit code {dead.exitcode}: killed, or out of memory?)"
                        raise RuntimeError(f"a worker process ended before job {jobs[k]!r} reported{code}") from None
                    continue
                got[i] = (ok, value)
            ok, value = got.pop(k)
            if not ok:
                exc, tb = value
                raise exc from RemoteTraceback(tb)
            yield value
    finally:
        stop.set()
        for w in workers:
            if dead is not None:
                w.terminate()
            w.join()
        for q in (todo, done):
            q.cancel_join_thread()  # jobs no worker took: nobody needs them
            q.close()


def _work(fn: Callable[..., Any], todo: Any, done: Any, stop: Any) -> None:
    while not stop.is_set() and (item := todo.get()) is not None:
        k, job = item
        try:
            done.put((k, True, fn(*job)))
        except BaseException as e:  # sent to the driver, which raises it
            tb = traceback.format_exc()
            try:
                pickle.loads(pickle.dumps(e))
            except Exception:  # an exception that does not pickle back: its type and words
                e = RuntimeError(f"{type(e).__name__}: {e}")
            done.put((k, False, (e, tb)))
            stop.set()


# -- Prefect ---------------------------------------------------------------------------------------


def task_runner(cfg: RunConfig) -> Any:
    """Prefect's task runner for the config: threads, processes, or Dask (a cluster at `dask.address`,
    or a local one of `workers` processes, the first `len(dask.gpus)` of them each pinned to one GPU)."""
    from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

    if cfg.task_runner == "process":
        return ProcessPoolTaskRunner(max_workers=cfg.workers)
    if cfg.task_runner == "thread":
        return ThreadPoolTaskRunner(max_workers=cfg.workers)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise MissingDependency("task_runner: dask needs prefect-dask: pip install -e '.[dask]'") from None
    if cfg.dask.address:
        return DaskTaskRunner(address=cfg.dask.address)
    return DaskTaskRunner(
        cluster_class=local_cluster,
        cluster_kwargs={"n_workers": max(cfg.workers, len(cfg.dask.gpus)), "gpus": list(cfg.dask.gpus)},
    )


def needs_gpu_worker(cfg: RunConfig, stage: str | Stage) -> bool:
    """Whether a stage's units must run on a worker holding the resource GPU=1."""
    s = stage if isinstance(stage, Stage) else {x.name: x for x in STAGES}[stage]
    return cfg.task_runner == "dask" and s.gpu and (cfg.dask.gpu_resource or bool(cfg.dask.gpus))


def gpu_stage(cfg: RunConfig, stage: str | Stage) -> contextlib.AbstractContextManager:
    """Wrap a stage's `task.submit` calls: on Dask, a GPU stage's tasks ask for one GPU each."""
    if not needs_gpu_worker(cfg, stage):
        return contextlib.nullcontext()
    import dask

    return dask.annotate(resources={GPU: 1})


def local_cluster(n_workers: int, gpus: list[int], **kwargs: Any) -> Any:
    """A Dask cluster on this machine: `n_workers` single-threaded worker processes; worker i < len(gpus)
    sees only GPU gpus[i] (CUDA_VISIBLE_DEVICES) and carries the resource GPU=1, so GPU stages run one
    task per GPU and each GPU's models stay loaded in its worker."""
    from distributed import Nanny, Scheduler, SpecCluster

    workers: dict[str, dict[str, Any]] = {}
    for i in range(n_workers):
        options: dict[str, Any] = {"nthreads": 1}
        if i < len(gpus):
            options.update(resources={GPU: 1}, env={"CUDA_VISIBLE_DEVICES": str(gpus[i])})
        workers[f"gpu{gpus[i]}" if i < len(gpus) else f"cpu{i}"] = {"cls": Nanny, "options": options}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": kwargs.pop("dashboard_address", ":0")}}
    return SpecCluster(workers=workers, scheduler=scheduler, **kwargs)
