"""The generation flow: a thin Prefect shell over `core.pipeline` (STYLE habit 7).

Tasks take and return paths, one task per shard; all logic lives in plain functions. Resumption is
file-based (a finished shard's output exists), so Prefect result caching is off.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ProcessPoolTaskRunner, ThreadPoolTaskRunner

from core import pipeline
from core.config import RunConfig


@task(name="prepare", cache_policy=NO_CACHE)
def prepare_task(config_json: str, run_dir: str) -> str:
    cfg = RunConfig.model_validate_json(config_json)
    return str(pipeline.prepare_run(cfg, Path(run_dir)).root)


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_task(run_dir: str) -> list[str]:
    return [str(p) for p in pipeline.ingest(pipeline.RunFolder(Path(run_dir)))]


@task(name="open-paths-stage", cache_policy=NO_CACHE)
def open_paths_task(run_dir: str) -> str:
    return str(pipeline.open_paths_stage(pipeline.RunFolder(Path(run_dir))))


@task(name="paths-shard", cache_policy=NO_CACHE)
def paths_task(run_dir: str, shard: str) -> str:
    return str(pipeline.paths_shard(pipeline.RunFolder(Path(run_dir)), Path(shard)))


@task(name="assemble", cache_policy=NO_CACHE)
def assemble_task(run_dir: str, positive_files: list[str]) -> dict:
    return pipeline.assemble(pipeline.RunFolder(Path(run_dir)), [Path(p) for p in positive_files])


@flow(name="hardneg-generate", log_prints=False)
def generate(config_json: str, run_dir: str) -> dict:
    """Scene graphs -> validated shards -> positives per shard -> balanced, split run folder."""
    run_dir = prepare_task(config_json, run_dir)
    shards = ingest_task(run_dir)
    open_paths_task(run_dir)
    futures = [paths_task.submit(run_dir, s) for s in shards]
    outputs = [f.result() for f in futures]
    return assemble_task(run_dir, outputs)


def run_generate(cfg: RunConfig, run_dir: Path) -> dict:
    """Run the flow with the task runner the config asks for."""
    runner = (
        ProcessPoolTaskRunner(max_workers=cfg.workers)
        if cfg.task_runner == "process"
        else ThreadPoolTaskRunner(max_workers=cfg.workers)
    )
    return generate.with_options(task_runner=runner)(cfg.model_dump_json(), str(run_dir))
