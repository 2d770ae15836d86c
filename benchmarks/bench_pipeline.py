"""GQA-scale benchmark of the CPU stages, parse to written splits, as `hardneg run` runs them.

The corpus: with `--source FILE[:WEIGHT]` (repeatable), real GQA graphs tiled to `--n-images`
(`benchmarks.tiled_gqa`: each copy's ids renamed, the sources mixed by weight), the density a real run
has; without, the synthetic GQA-train-like corpus of `benchmarks.synthetic_gqa` (74,942 images, ~16
objects and ~50 relations each, GQA's left/right skew), which holds as many objects and more attributes
than real graphs but yields about a quarter of their positives an image, and so is cheaper than real data
after ingest. The densities are printed either way: objects, attributes and
relations an image in the corpus and in each source, and the positives and text negatives an image the run
emitted, overall and for each source's copies. Then, each in a fresh subprocess so its peak RSS is its own,
all in one run of this script:
- the baseline: `orjson.loads` of the whole file (the time just to parse it);
- the cold run: every stage `hardneg run --config configs/gqa.yaml` runs, through `run_local`, sharded
  stages in `--workers` processes (`flows/runners.py`), timed per stage by wall clock (the share of each,
  and each as a multiple of the parse) and by the summed unit seconds of its `_stage.json`. Without
  images the images and filters stages pass positives through. The language stage (lexicon rewrites, text
  negatives, the English check, refinement) runs unless `--no-language`; the exports of the other
  benchmark shapes (phrases, TRICD, probes, ImageCoDe) and the report unless `--no-exports`;
- the rerun with nothing changed, through `hardneg run --no-prefect` and through `hardneg run` (Prefect,
  ephemeral server), each timed as the whole command, as a ratio to the cold run (`--no-rerun` skips);
- a breakdown of the paths stage on the first shard: search, levels, templates.

Peak RSS is sampled over the whole process tree (the driver and its workers together; psutil), and
given per stage.

    python -m benchmarks.bench_pipeline [--n-images 74942] [--workers 2] [--workdir /tmp/hardneg-bench]
        [--source /data/gqa/val_sceneGraphs.json:3 --source /data/gqa200/sceneGraphs.json:1]
        [--profile language]   # also: cProfile one unit of that stage, top lines
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import io
import json
import logging
import os
import pstats
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_loader import corpus_path
from benchmarks.synthetic_gqa import write_synthetic_gqa
from benchmarks.tiled_gqa import TILER_VERSION, density, parse_source, source_of, write_tiled_gqa

REPO = Path(__file__).resolve().parent.parent
EXPORT_STAGES = ("phrases", "probe_b", "tricd", "probes", "imagecode", "report")
log = logging.getLogger(__name__)


# -- memory ------------------------------------------------------------------------------------------


def _tree_rss_mb() -> tuple[float, float]:
    """Resident memory of this process (the driver) and of all its descendants (the process pool's workers)."""
    try:
        import psutil
    except ImportError:  # this process alone
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 0.0
    me = psutil.Process()
    workers = 0
    for p in me.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            workers += p.memory_info().rss
    return me.memory_info().rss / 2**20, workers / 2**20


class _Sampler(threading.Thread):
    """Peak tree RSS, overall and per stage (the stages the progress hooks say are running: the stages of
    a wave run at once, and each is given the peak while it ran), and the driver's and the workers' own
    peaks per stage (not always at the same moment: their sum may exceed the tree's peak)."""

    def __init__(self, every_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.every_s = every_s
        self.running: set[str] = set()
        self.peaks: dict[str, float] = {}
        self.parts: dict[str, tuple[float, float]] = {}  # stage -> (driver's peak, workers' peak)
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            driver, workers = _tree_rss_mb()
            for stage in list(self.running) or ["setup"]:
                self.peaks[stage] = max(self.peaks.get(stage, 0.0), driver + workers)
                d, w = self.parts.get(stage, (0.0, 0.0))
                self.parts[stage] = (max(d, driver), max(w, workers))
            self._halt.wait(self.every_s)

    def stop(self) -> None:
        self._halt.set()
        self.join()


# -- the children ------------------------------------------------------------------------------------


def _config(corpus: Path, workers: int, language: bool, exports: bool, workdir: Path, concurrent: bool = True) -> Path:
    """The run's config as a file both `run_local` and the CLI read: gqa.yaml on this corpus."""
    from hardneg.core.config import load_config

    overrides: dict[str, Any] = {"inputs": {"scene_graphs": str(corpus)}, "workers": workers}
    overrides["concurrent_stages"] = concurrent
    if not language:  # paths, balance, templates, write only
        overrides["language"] = {"rewrite_positives": False, "negatives_per_positive": 0}
    if not exports:  # "parse to written splits" alone: the other benchmark shapes left out
        overrides["exports"] = {k: {"enabled": False} for k in ("tricd", "probes", "probe_b", "imagecode")}
    cfg = load_config(REPO / "configs" / "gqa.yaml", overrides)
    kind = f"{'lang' if language else 'nolang'}_{'exports' if exports else 'noexports'}{'' if concurrent else '_seq'}"
    f = workdir / f"config_w{workers}_{kind}.json"
    f.write_text(cfg.model_dump_json(indent=2))
    return f


def _child_orjson(corpus: Path) -> dict[str, Any]:
    t = time.perf_counter()
    n = len(orjson.loads(corpus.read_bytes()))
    return {"seconds": time.perf_counter() - t, "images": n}


def _child_pipeline(config: Path, run_dir: Path, workers: int) -> dict[str, Any]:
    """The cold run through `run_local`, timed per stage by the runner's progress hooks."""
    from hardneg.core.config import load_config
    from hardneg.core.runner.progress import Progress
    from hardneg.flows.pipeline import run_local

    cfg = load_config(config)
    sampler = _Sampler()
    stages: dict[str, dict[str, Any]] = {}

    class Clock(Progress):
        def stage_start(self, stage: str, units: int, pending: int) -> None:
            sampler.running.add(stage)
            stages[stage] = {"start": time.perf_counter() - t0, "units": units}

        def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
            s = stages[stage]
            s.update(end=time.perf_counter() - t0, unit_seconds=summary["seconds"])
            s["wall"] = s["end"] - s["start"]
            sampler.running.discard(stage)

        def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
            stages[stage] = {"wall": 0.0, "unit_seconds": 0.0, "units": len(summary["units"]), "skipped": True}

    t0 = time.perf_counter()
    sampler.start()
    manifest = run_local(cfg, run_dir, Clock(), workers=workers)
    total = time.perf_counter() - t0
    sampler.stop()
    for name, s in stages.items():
        s["peak_mb"] = sampler.peaks.get(name, 0.0)
        s["driver_mb"], s["workers_mb"] = sampler.parts.get(name, (0.0, 0.0))
    counts = manifest.get("counts", {})
    return {
        "total": total,
        "stages": stages,
        "peak_mb": max(sampler.peaks.values()),
        "setup_peak_mb": sampler.peaks.get("setup", 0.0),
        "counts": {k: _total(counts.get(k)) for k in ("positives", "negatives", "positives_candidates")},
        "images": _images(run_dir),
    }


def _span(stages: list[dict[str, Any]]) -> float:
    """Wall seconds while any of these stages ran (the stages of a wave overlap: not the sum of their walls)."""
    out, end = 0.0, float("-inf")
    for s in sorted(stages, key=lambda s: s["start"]):
        out += max(0.0, s["end"] - max(s["start"], end))
        end = max(end, s["end"])
    return out


def _total(v: Any) -> Any:
    return sum(v.values()) if isinstance(v, dict) else v  # per split


def _images(run_dir: Path) -> int | None:
    f = run_dir / "work" / "ingest" / "_stage.json"
    return orjson.loads(f.read_bytes())["stats"].get("images_kept") if f.exists() else None


def _child_profile(run_dir: Path, stage: str) -> dict[str, Any]:
    """cProfile the first unit of `stage` in a finished run (its output is rewritten with equal bytes)."""
    from hardneg.core.runner.folder import stored_config
    from hardneg.core.runner.stage import Run, Unit
    from hardneg.flows.pipeline import STAGES

    run = Run(run_dir, stored_config(run_dir), STAGES)
    unit = Unit(run, run.stages[stage], run.units(stage)[0])
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.runcall(run.stages[stage].run, unit)
    seconds = time.perf_counter() - t0
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("cumulative").print_stats(30)
    st.sort_stats("tottime").print_stats(15)
    return {"unit": unit.shard, "seconds": seconds, "items_in": unit.items_in, "profile": out.getvalue()}


def _breakdown(config: Path, run_dir: Path) -> dict[str, Any]:
    """Search, levels and templates timed apart on the first shard (the paths stage does all three)."""
    from hardneg.core.config import load_config
    from hardneg.core.io import read_jsonl
    from hardneg.core.records import keyed_seed
    from hardneg.core.rows import GraphRow
    from hardneg.generators.paths.search import PathSearch, build, candidates
    from hardneg.generators.paths.stage import PathResources, path_level, target_reason

    cfg = load_config(config)
    res = PathResources.load(cfg)
    shard = sorted((run_dir / "work" / "hygiene").glob("graphs-*.jsonl")) or sorted(
        (run_dir / "work" / "ingest").glob("graphs-*.jsonl")
    )
    graphs = [GraphRow(**r).scene_graph() for r in read_jsonl(shard[0])]
    search_s = 0.0
    found = []
    for g in graphs:
        t = time.perf_counter()
        s = PathSearch(g, cfg, res)
        for tid in sorted(g.objects):
            if target_reason(g.objects[tid], g, cfg, res):
                continue
            for ptype in cfg.paths.types:
                rng = random.Random(keyed_seed(cfg.seed, g.image_id, tid, ptype))
                for attrs, elements in candidates(s, tid, ptype, rng):
                    found.append((s, build(s, tid, attrs, elements), ptype))
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
    return {"images": len(graphs), "paths": len(found), "search_s": search_s, "levels_s": level_s,
            "templates_s": render_s}  # fmt: skip


def _emitted_per_image(run_dir: Path) -> dict[int | None, Counter[str]]:
    """Positives and text negatives the run emitted (every split), counted per source (None: not tiled)."""
    out: dict[int | None, Counter[str]] = {}
    for kind in ("positive", "negative"):
        for f in sorted((run_dir / "splits").glob(f"*/{kind}.json")):
            for r in orjson.loads(f.read_bytes()):
                out.setdefault(source_of(str(r["image_id"])), Counter())[kind] += 1
    return out


def _tiled_corpus(workdir: Path, sources: list[tuple[Path, float]], n_images: int, seed: int) -> Path:
    """The cached tiled corpus for these sources, weights, size and seed."""
    key = json.dumps([TILER_VERSION, [[str(p.resolve()), w] for p, w in sources], n_images, seed])
    tag = hashlib.sha1(key.encode()).hexdigest()[:12]
    out = workdir / f"tiled_n{n_images}_s{seed}_{tag}_sceneGraphs.json"
    if not out.exists():
        write_tiled_gqa(out, sources, n_images, seed)
    return out


def _print_densities(corpus: Path, sources: list[tuple[Path, float]], run_dir: Path) -> None:
    """Per image, for the corpus and for each source: what the graphs hold (objects, attributes, relations)
    and what the run emitted (positives, text negatives) for the source's copies in the corpus."""
    emitted = _emitted_per_image(run_dir)
    copies = Counter(source_of(i) for i in orjson.loads(corpus.read_bytes()))
    rows = [("corpus", density(corpus), sum(emitted.values(), Counter()), copies.total())]
    for k, (p, w) in enumerate(sources):
        name = f"source {k} {p.parent.name}/{p.name} (w {w:g})"
        rows.append((name, density(p), emitted.get(k, Counter()), copies[k]))
    print(f"{'per image':<52}{'objects':>8}{'attrs':>7}{'rels':>7}{'copies':>8}{'pos':>7}{'negs':>7}")
    for name, d, c, n in rows:
        print(
            f"{name:<52}{d['objects']:>8.1f}{d['attributes']:>7.1f}{d['relations']:>7.1f}"
            f"{n:>8}{c['positive'] / max(1, n):>7.2f}{c['negative'] / max(1, n):>7.2f}"
        )


def _run_child(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_pipeline", "--child", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args[:1])} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _timed_cli(config: Path, run_dir: Path, prefect: bool, workdir: Path) -> float:
    """The whole `hardneg run` command on a finished run folder, in seconds (interpreter start included)."""
    cmd = [str(Path(sys.executable).with_name("hardneg")), "run", "--config", str(config), "--output", str(run_dir)]
    env = dict(os.environ)
    if prefect:
        env.setdefault("PREFECT_HOME", str(workdir / "prefect-home"))
    else:
        cmd.append("--no-prefect")
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return seconds


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=74_942)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes for the sharded stages")
    ap.add_argument("--no-language", action="store_true", help="skip rewrites and text negatives")
    ap.add_argument("--with-language", action="store_true", help=argparse.SUPPRESS)  # the default now
    ap.add_argument("--no-exports", action="store_true", help="skip the other benchmark shapes (TRICD, probes, ...)")
    ap.add_argument("--exports", action="store_true", help=argparse.SUPPRESS)  # the default now
    ap.add_argument("--no-rerun", action="store_true", help="skip the two reruns with nothing changed")
    ap.add_argument("--one-stage-at-a-time", action="store_true", help="concurrent_stages: false (less memory)")
    ap.add_argument("--profile", metavar="STAGE", help="also cProfile the first unit of STAGE")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hardneg-bench"))
    ap.add_argument(
        "--source", action="append", default=[], metavar="FILE[:WEIGHT]",
        help="a real GQA scene-graph file to tile the corpus from (repeatable; weight: its share of images)",
    )  # fmt: skip
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        if kind == "orjson":
            out = _child_orjson(Path(rest[0]))
        elif kind == "pipeline":
            out = _child_pipeline(Path(rest[0]), Path(rest[1]), int(rest[2]))
        elif kind == "profile":
            out = _child_profile(Path(rest[0]), rest[1])
        else:
            out = _breakdown(Path(rest[0]), Path(rest[1]))
        print(json.dumps(out))
        return

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args.workdir.mkdir(parents=True, exist_ok=True)
    sources = [parse_source(s) for s in args.source]
    if sources:
        corpus = _tiled_corpus(args.workdir, sources, args.n_images, args.seed)
    else:
        corpus = corpus_path(args.workdir, args.n_images, args.seed, 16, 50)
        if not corpus.exists():
            write_synthetic_gqa(corpus, args.n_images, args.seed, 16, 50)
    corpus.read_bytes()  # warm the page cache for every measurement
    config = _config(
        corpus, args.workers, not args.no_language, not args.no_exports, args.workdir, not args.one_stage_at_a_time
    )
    run_dir = args.workdir / f"run_n{args.n_images}{'_tiled' if sources else ''}"
    shutil.rmtree(run_dir, ignore_errors=True)  # measure from scratch, not a resumed run

    print(f"before: {_load()}")
    base = _run_child("orjson", str(corpus))
    r = _run_child("pipeline", str(config), str(run_dir), str(args.workers))
    parse = base["seconds"]
    print(f"corpus: {corpus.name}: {r['images']} images, {corpus.stat().st_size / 1e6:.0f} MB")
    print(f"baseline orjson.loads(whole file): {parse:.2f} s")
    print(f"{'stage':<13}{'wall s':>9}{'share':>8}{'x parse':>9}{'unit s':>9}  peak RSS: tree (driver, workers)")
    for name, s in r["stages"].items():
        if s.get("skipped"):
            print(f"{name:<13}{'(done)':>9}")
            continue
        print(
            f"{name:<13}{s['wall']:9.2f}{s['wall'] / r['total']:8.1%}{s['wall'] / parse:9.2f}"
            f"{s['unit_seconds']:9.2f}  {s['peak_mb']:.0f} MB ({s['driver_mb']:.0f}, {s['workers_mb']:.0f})"
        )
    groups = {"ingest+hygiene+plausibility": ("ingest", "hygiene", "plausibility"), "paths": ("paths",),
              "language": ("language",), "exports+report": EXPORT_STAGES}  # fmt: skip
    ran = {n: s for n, s in r["stages"].items() if not s.get("skipped")}
    parts = {g: _span([ran[n] for n in names if n in ran]) for g, names in groups.items()}
    parts["the rest"] = _span(list(ran.values())) - sum(parts.values())
    parts["between stages"] = r["total"] - _span(list(ran.values()))  # opening stages (their `prepare`), set-up
    print("x parse by part: " + ", ".join(f"{g} {v / parse:.1f}x" for g, v in parts.items()))
    c = r["counts"]
    print(
        f"end to end ({args.workers} worker process(es) for sharded stages): {r['total']:.2f} s "
        f"= {r['total'] / parse:.2f}x the orjson parse; peak RSS {r['peak_mb']:.0f} MB (driver and workers)"
    )
    print(f"  positives {c['positives']}, text negatives {c['negatives']}, candidates {c['positives_candidates']}")
    _print_densities(corpus, sources, run_dir)
    if not args.no_rerun:
        plain = _timed_cli(config, run_dir, prefect=False, workdir=args.workdir)
        with_prefect = _timed_cli(config, run_dir, prefect=True, workdir=args.workdir)
        print(
            f"rerun with nothing changed, the whole `hardneg run` command: --no-prefect {plain:.2f} s "
            f"= {plain / r['total']:.1%} of the cold run; Prefect {with_prefect:.2f} s "
            f"= {with_prefect / r['total']:.1%}"
        )
    if args.profile:
        p = _run_child("profile", str(run_dir), args.profile)
        print(f"profile of {args.profile} unit {p['unit']} ({p['items_in']} items, {p['seconds']:.2f} s):")
        print(p["profile"])
    try:
        b = _run_child("breakdown", str(config), str(run_dir))
    except RuntimeError as e:  # the path search is being reworked: its internals may have moved
        print(f"paths breakdown skipped: {str(e).splitlines()[-1]}")
    else:
        print(
            f"paths breakdown, first shard ({b['images']} images, {b['paths']} paths, one process): "
            f"search {b['search_s']:.2f} s, levels {b['levels_s']:.2f} s, templates {b['templates_s']:.2f} s"
        )
    print(f"after: {_load()}")


if __name__ == "__main__":
    main()
