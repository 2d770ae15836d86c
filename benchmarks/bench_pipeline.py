"""GQA-scale benchmark of the CPU stages: load, paths, levels, balance, templates, write.

Generates (or reuses) the synthetic GQA-train-like corpus of `benchmarks.synthetic_gqa` (74,942 images,
~16 objects and ~50 relations each, GQA's left/right skew), then, each in a fresh subprocess so peak RSS
is its own:
- the baseline: `orjson.loads` of the whole file (the time just to parse it);
- the pipeline's stages exactly as `hardneg run --no-prefect` runs them, with `configs/gqa.yaml`:
  ingest (stream, validate, shard), paths (search + levels + templates, per shard), select (balance),
  assemble (split, write the run folder): the end-to-end total. The language stage passes positives
  through unless `--with-language` (lexicon rewrites, text negatives and refinement) is given.
  `--workers N` runs the path shards in N processes, as the Prefect process runner does;
- a breakdown of the paths stage on the first shard: search, levels, templates, timed separately.

Prints seconds per stage, the end-to-end time as a ratio to the orjson parse, and peak RSS.

    python -m benchmarks.bench_pipeline [--n-images 74942] [--workers 1] [--workdir /tmp/hardneg-bench]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_loader import corpus_path
from benchmarks.synthetic_gqa import write_synthetic_gqa

REPO = Path(__file__).resolve().parent.parent
log = logging.getLogger(__name__)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _shard_job(args: tuple[str, str]) -> str:
    from core import pipeline

    run_dir, shard = args
    return str(pipeline.paths_shard(pipeline.RunFolder(Path(run_dir)), Path(shard)))


def _reset_peak() -> None:
    """Reset this process's peak RSS (Linux >= 4.0), so each stage's peak is its own."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_now_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return _rss_mb()


def _child_pipeline(corpus: Path, run_dir: Path, workers: int, with_language: bool) -> dict[str, Any]:
    from core import pipeline
    from core.config import load_config

    overrides: dict[str, Any] = {"inputs": {"scene_graphs": str(corpus)}}
    if not with_language:  # the scope: load, paths, levels, balance, templates, write
        overrides["language"] = {"rewrite_positives": False, "negatives_per_positive": 0}
        overrides["refine"] = {"enabled": False}
    cfg = load_config(REPO / "configs" / "gqa.yaml", overrides)
    peaks: dict[str, float] = {}
    t0 = time.perf_counter()
    run = pipeline.prepare_run(cfg, run_dir)
    t1 = time.perf_counter()
    _reset_peak()
    shards = pipeline.ingest(run)
    peaks["ingest"] = _peak_now_mb()
    t2 = time.perf_counter()
    _reset_peak()
    pipeline.open_paths_stage(run)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            outs = [Path(p) for p in pool.map(_shard_job, [(str(run_dir), str(s)) for s in shards])]
    else:
        outs = [pipeline.paths_shard(run, s) for s in shards]
    peaks["paths"] = _peak_now_mb()
    t3 = time.perf_counter()
    _reset_peak()
    pipeline.select(run, outs)
    peaks["select"] = _peak_now_mb()
    t4 = time.perf_counter()
    _reset_peak()
    pipeline.open_language_stage(run)
    lang = [pipeline.language_shard(run, f) for f in outs]
    peaks["language"] = _peak_now_mb()
    t5 = time.perf_counter()
    _reset_peak()
    scores = pipeline.refine_scores(run, lang)
    peaks["refine"] = _peak_now_mb()
    t6 = time.perf_counter()
    _reset_peak()
    manifest = pipeline.assemble(run, lang, scores)
    peaks["assemble"] = _peak_now_mb()
    t7 = time.perf_counter()
    times = {
        "prepare": t1 - t0,
        "ingest": t2 - t1,
        "paths": t3 - t2,
        "select": t4 - t3,
        "language": t5 - t4,
        "refine": t6 - t5,
        "assemble": t7 - t6,
    }
    extra: dict[str, float] = {}
    c = manifest["counts"]
    return {
        "times": times,
        "extra": extra,
        "total": sum(times.values()),
        "images": c["ingest"]["images_kept"],
        "candidates": c["positives_candidates"],
        "positives": c["positives"],
        "negatives": c["negatives"],
        "shards": len(shards),
        "peak_rss_mb": _rss_mb(),
        "stage_peak_rss_mb": peaks,
        "breakdown": _breakdown(cfg, shards[0]),
    }


def _breakdown(cfg: Any, shard: Path) -> dict[str, Any]:
    """Search, levels and templates timed apart on one shard (the paths stage does all three)."""
    from core.io import read_jsonl
    from core.pipeline import row_to_graph
    from generators.paths import PathResources, _ImageSearch, candidate_paths, path_level, target_reason

    res = PathResources.load(cfg)
    graphs = [row_to_graph(r) for r in read_jsonl(shard)]
    search_s = level_s = render_s = 0.0
    found = []
    for g in graphs:
        t = time.perf_counter()
        s = _ImageSearch(g, cfg, res)
        for tid in sorted(g.objects):
            if target_reason(g.objects[tid], g, cfg, res):
                continue
            for ptype in cfg.paths.types:
                rng = random.Random(f"{cfg.seed}:{g.image_id}:{tid}:{ptype}")
                for path in candidate_paths(s, tid, ptype, rng):
                    found.append((s, path, ptype))
                    break
        search_s += time.perf_counter() - t
    t = time.perf_counter()
    for s, path, _ in found:
        path_level(path, s.index)
    level_s = time.perf_counter() - t
    t = time.perf_counter()
    for i, (s, path, ptype) in enumerate(found):
        res.renderer.render(path, ptype, i, s.index)
    render_s = time.perf_counter() - t
    return {
        "images": len(graphs),
        "paths": len(found),
        "search_s": search_s,
        "levels_s": level_s,
        "templates_s": render_s,
    }


def _child_orjson(corpus: Path) -> dict[str, Any]:
    t = time.perf_counter()
    n = len(orjson.loads(corpus.read_bytes()))
    return {"seconds": time.perf_counter() - t, "images": n, "peak_rss_mb": _rss_mb()}


def _run_child(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_pipeline", "--child", *args]
    out = subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=74_942)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, help="processes for the path shards")
    ap.add_argument(
        "--with-language", action="store_true", help="also lexicon rewrites, text negatives and refinement (slow)"
    )
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hardneg-bench"))
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        if kind == "orjson":
            print(json.dumps(_child_orjson(Path(rest[0]))))
        else:
            print(json.dumps(_child_pipeline(Path(rest[0]), Path(rest[1]), int(rest[2]), rest[3] == "1")))
        return

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    corpus = corpus_path(args.workdir, args.n_images, args.seed, 16, 50)
    if not corpus.exists():
        write_synthetic_gqa(corpus, args.n_images, args.seed, 16, 50)
    corpus.read_bytes()  # warm the page cache for both measurements
    run_dir = args.workdir / f"run_n{args.n_images}"
    shutil.rmtree(run_dir, ignore_errors=True)  # measure from scratch, not a resumed run

    base = _run_child("orjson", str(corpus))
    r = _run_child("pipeline", str(corpus), str(run_dir), str(args.workers), "1" if args.with_language else "0")
    size_mb = corpus.stat().st_size / 1e6
    print(f"corpus: {corpus.name}: {r['images']} images, {size_mb:.0f} MB")
    print(f"baseline orjson.loads(whole file): {base['seconds']:.2f} s, peak RSS {base['peak_rss_mb']:.0f} MB")
    for stage, s in r["times"].items():
        peak = r["stage_peak_rss_mb"].get(stage)
        print(f"  {stage:9s} {s:8.2f} s" + (f"   peak RSS {peak:.0f} MB" if peak else ""))
    for stage, s in r["extra"].items():
        print(f"  (not in the total) {stage}: {s:.2f} s")
    print(
        f"pipeline end to end ({args.workers} worker(s) for paths): {r['total']:.2f} s "
        f"= {r['total'] / base['seconds']:.1f}x the orjson parse; "
        f"peak RSS {max(r['stage_peak_rss_mb'].values()):.0f} MB "
        f"(max over stages: clear_refs resets ru_maxrss too; path workers each hold one shard)"
    )
    print(
        f"  {r['shards']} shards, {r['candidates']} candidates, positives {r['positives']}, "
        f"text negatives {r['negatives']}"
    )
    b = r["breakdown"]
    print(
        f"paths breakdown on the first shard ({b['images']} images, {b['paths']} paths): search {b['search_s']:.2f} s, "
        f"levels {b['levels_s']:.2f} s, templates {b['templates_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
