"""Each stage alone, in one process, on a corpus of real density: the instrument for a change to one stage.

An end-to-end run on a shared machine mixes every stage's cost with the other work on the cores: two runs
of the same code differ by more than a change worth making. This script times one stage at a time in one
process, so a stage's number moves only with its own code (and the machine's load, which it prints):
- the corpus: real GQA graphs of the `--source` files tiled to `--n-images` (`benchmarks.tiled_gqa`, each
  source's share of the images by its weight), cached under `--workdir`;
- a run of `configs/gqa.yaml` on it (`run_local`, one process) gives every stage its inputs;
- then each stage in `--stages` (default: all that ran) is timed alone: `prepare`, every unit, `finish`,
  as the runner does them (the cyclic collector asleep), `--repeat` times; the minimum is printed, wall
  and CPU seconds (the CPU time of this process moves less with other work on the cores), each also as a
  multiple of the parse of the same file (`orjson.loads`, the minimum wall time of `--repeat`, measured in
  this run). A unit run again rewrites its files with the same bytes.

    python -m benchmarks.bench_stages --source /data/gqa/val_sceneGraphs.json:3 --source /data/gqa200/sceneGraphs.json:1
        [--n-images 2000] [--stages paths,language] [--repeat 3] [--workdir /tmp/hardneg-bench-stages] [--profile paths]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_pipeline import _tiled_corpus
from benchmarks.tiled_gqa import parse_source

REPO = Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)


def best_of(repeat: int, fn: Callable[[], Any]) -> float:
    """The least wall time of `repeat` calls (the least disturbed by other work on the machine)."""
    return best_times(repeat, fn)[0]


def best_times(repeat: int, fn: Callable[[], Any]) -> tuple[float, float]:
    """The least wall time and the least CPU time of this process over `repeat` calls: on a shared machine
    the CPU time moves less with other work than the wall time does (threads of a BLAS count in it too)."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def parse_seconds(corpus: Path, repeat: int) -> float:
    data = corpus.read_bytes()
    return best_of(repeat, lambda: orjson.loads(data))


def prepared_run(corpus: Path, run_dir: Path, overrides: dict[str, Any] | None = None) -> Any:
    """`configs/gqa.yaml` on the corpus, run to the end in this process; returns its `Run`."""
    from hardneg.core.config import load_config
    from hardneg.flows.pipeline import plan, run_local

    ov: dict[str, Any] = {"inputs": {"scene_graphs": str(corpus)}, "workers": 1} | (overrides or {})
    cfg = load_config(REPO / "configs" / "gqa.yaml", ov)
    run_local(cfg, run_dir, workers=1)
    return plan(cfg, run_dir)


def plan_existing(run_dir: Path) -> Any:
    """The `Run` of a finished run folder, under the config it stored."""
    from hardneg.core.runner.folder import stored_config
    from hardneg.flows.pipeline import plan

    return plan(stored_config(run_dir), run_dir)


def stage_once(run: Any, name: str) -> None:
    """One stage as the runner does it, in this process: prepare, every unit, finish (no markers written)."""
    from hardneg.core.runner.cycles import no_cycle_collection
    from hardneg.core.runner.unit import Unit

    stage = run.stages[name]
    stage.prepare(run, run.stage_dir(name))
    markers = []
    for u in run.units(name):
        unit = Unit(run, stage, u)
        with no_cycle_collection():
            stage.run(unit)
        markers.append(orjson.loads(run._marker(name, u).read_bytes()))
    with no_cycle_collection():
        stage.finish(run, markers)


def time_stages(run: Any, names: Sequence[str], repeat: int) -> dict[str, tuple[float, float]]:
    """Per stage, (least wall seconds, least CPU seconds) of `repeat` passes."""
    return {name: best_times(repeat, lambda name=name: stage_once(run, name)) for name in names}


def profile_stage(run: Any, name: str, lines: int = 25) -> str:
    prof = cProfile.Profile()
    prof.runcall(stage_once, run, name)
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("tottime").print_stats(lines)
    st.sort_stats("cumulative").print_stats(lines)
    return out.getvalue()


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--source", action="append", required=True, metavar="FILE[:WEIGHT]",
        help="a real GQA scene-graph file to tile the corpus from (repeatable; weight: its share of images)",
    )  # fmt: skip
    ap.add_argument("--stages", default="", help="comma-separated stage names (default: every stage that ran)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-exports", action="store_true", help="leave the other benchmark shapes out of the run")
    ap.add_argument("--profile", metavar="STAGE", help="also cProfile one pass of STAGE")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hardneg-bench-stages"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    args.workdir.mkdir(parents=True, exist_ok=True)
    sources = [parse_source(s) for s in args.source]
    corpus = _tiled_corpus(args.workdir, sources, args.n_images, args.seed)
    run_dir = args.workdir / f"run_n{args.n_images}_s{args.seed}"
    shutil.rmtree(run_dir, ignore_errors=True)
    overrides: dict[str, Any] = {}
    if args.no_exports:
        overrides["exports"] = {k: {"enabled": False} for k in ("tricd", "probes", "probe_b", "imagecode")}
    print(f"before: {_load()}")
    t = time.perf_counter()
    run = prepared_run(corpus, run_dir, overrides)
    print(f"the run that gives every stage its inputs: {time.perf_counter() - t:.1f} s")
    ran = [n for n in run.order if (run.stage_dir(n) / "_stage.json").exists()]
    names = [s.strip() for s in args.stages.split(",") if s.strip()] or ran
    if unknown := [n for n in names if n not in ran]:
        raise SystemExit(f"no such stage in this run: {', '.join(unknown)} (stages: {', '.join(ran)})")
    parse = parse_seconds(corpus, args.repeat)
    times = time_stages(run, names, args.repeat)
    images = orjson.loads((run.stage_dir("ingest") / "_stage.json").read_bytes())["stats"].get("images_kept")
    print(f"corpus: {corpus.name}, {images} images; parse (orjson.loads, min of {args.repeat}): {parse:.3f} s")
    n = max(1, images or 0)
    print(f"{'stage':<14}{'wall s':>9}{'x parse':>9}{'cpu s':>9}{'x parse':>9}{'ms/image':>10}  (min of {args.repeat})")
    for name, (wall, cpu) in [*times.items(), ("sum", tuple(map(sum, zip(*times.values(), strict=True))))]:
        print(f"{name:<14}{wall:9.3f}{wall / parse:9.2f}{cpu:9.3f}{cpu / parse:9.2f}{1000 * wall / n:10.2f}")
    if args.profile:
        print(profile_stage(run, args.profile))
    print(f"after: {_load()}")


if __name__ == "__main__":
    main()
