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


@task(name="select", cache_policy=NO_CACHE)
def select_task(run_dir: str, positive_files: list[str]) -> str:
    return str(pipeline.select(pipeline.RunFolder(Path(run_dir)), [Path(p) for p in positive_files]))


@task(name="open-language-stage", cache_policy=NO_CACHE)
def open_language_task(run_dir: str, selection: str) -> str:
    return str(pipeline.open_language_stage(pipeline.RunFolder(Path(run_dir))))


@task(name="language-shard", cache_policy=NO_CACHE)
def language_task(run_dir: str, positive_file: str) -> str:
    return str(pipeline.language_shard(pipeline.RunFolder(Path(run_dir)), Path(positive_file)))


@task(name="open-images-stage", cache_policy=NO_CACHE)
def open_images_task(run_dir: str, language_files: list[str]) -> str:
    return str(pipeline.open_images_stage(pipeline.RunFolder(Path(run_dir))))


@task(name="images-shard", cache_policy=NO_CACHE)
def images_task(run_dir: str, language_file: str) -> str:
    return str(pipeline.images_shard(pipeline.RunFolder(Path(run_dir)), Path(language_file)))


@task(name="open-filters-stage", cache_policy=NO_CACHE)
def open_filters_task(run_dir: str, image_files: list[str]) -> str:
    return str(pipeline.open_filters_stage(pipeline.RunFolder(Path(run_dir))))


@task(name="filters-shard", cache_policy=NO_CACHE)
def filters_task(run_dir: str, language_file: str) -> str:
    return str(pipeline.filters_shard(pipeline.RunFolder(Path(run_dir)), Path(language_file)))


@task(name="refine-scores", cache_policy=NO_CACHE)
def refine_task(run_dir: str, language_files: list[str]) -> str:
    return str(pipeline.refine_scores(pipeline.RunFolder(Path(run_dir)), [Path(p) for p in language_files]))


@task(name="assemble", cache_policy=NO_CACHE)
def assemble_task(run_dir: str, language_files: list[str], scores: str, image_files: list[str]) -> dict:
    run = pipeline.RunFolder(Path(run_dir))
    return pipeline.assemble(run, [Path(p) for p in language_files], Path(scores), [Path(p) for p in image_files])


@flow(name="hardneg-generate", log_prints=False)
def generate(config_json: str, run_dir: str) -> dict:
    """Graphs -> shards -> positives per shard -> balance -> language per shard -> image negatives per shard
    -> filter scores per shard (beside refine scores) -> decide and split -> run folder."""
    run_dir = prepare_task(config_json, run_dir)
    shards = ingest_task(run_dir)
    open_paths_task(run_dir)
    positive_files = [f.result() for f in [paths_task.submit(run_dir, s) for s in shards]]
    selection = select_task(run_dir, positive_files)
    open_language_task(run_dir, selection)
    language_files = [f.result() for f in [language_task.submit(run_dir, p) for p in positive_files]]
    open_images_task(run_dir, language_files)
    image_files = [f.result() for f in [images_task.submit(run_dir, p) for p in language_files]]
    open_filters_task(run_dir, image_files)
    filter_futures = [filters_task.submit(run_dir, p) for p in language_files]
    scores = refine_task(run_dir, language_files)  # runs beside the filter shards
    for f in filter_futures:
        f.result()
    return assemble_task(run_dir, language_files, scores, image_files)


def run_generate(cfg: RunConfig, run_dir: Path) -> dict:
    """Run the flow with the task runner the config asks for."""
    runner = (
        ProcessPoolTaskRunner(max_workers=cfg.workers)
        if cfg.task_runner == "process"
        else ThreadPoolTaskRunner(max_workers=cfg.workers)
    )
    return generate.with_options(task_runner=runner)(cfg.model_dump_json(), str(run_dir))
