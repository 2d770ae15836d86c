"""Benchmark the streaming GQA loader against `orjson.loads` of the whole file.

Generates (or reuses, cached by parameters under `--workdir`) a synthetic GQA-train-like corpus,
then times, each in a fresh subprocess so one measurement's memory cannot pollute another's peak RSS:
(a) `orjson.loads(path.read_bytes())`, the baseline, also with the cyclic GC disabled (the GC costs the
whole-file parse several times its parsing time); (b) `iter_raw_graphs` (scan + parse per image);
(c) `load_graphs` (scan + parse + validate into records). Peak RSS is `ru_maxrss` of each child; the
`(start)` column is its resident size after imports, just before loading. The file is read once
beforehand so all modes see a warm page cache.

    python -m benchmarks.bench_loader [--n-images 74942] [--workdir /tmp/hardneg-bench] [--repeat 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks.synthetic_gqa import GENERATOR_VERSION, write_synthetic_gqa
from hardneg.core.gqa.loader import DEFAULT_CHUNK, iter_raw_graphs, load_graphs

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parent.parent
MODES = ("orjson", "orjson_nogc", "iter_raw_graphs", "load_graphs")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _current_rss_mb() -> float:
    """Resident set size now (Linux /proc); NaN elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return float("nan")
    return pages * resource.getpagesize() / 2**20


def _hwm_mb() -> float:
    """This process image's own peak RSS (Linux VmHWM: unlike ru_maxrss, not inherited); NaN elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return float("nan")


def _child(mode: str, path: Path, chunk_size: int) -> dict[str, Any]:
    """One measurement, in this (fresh) process."""
    start_rss = _current_rss_mb()
    extra: dict[str, Any] = {}
    t0 = time.perf_counter()
    if mode == "orjson":
        images = len(orjson.loads(path.read_bytes()))
    elif mode == "orjson_nogc":
        # The same with the cyclic GC off: building millions of containers at once triggers full
        # collections that dominate the baseline; this row is orjson's raw parsing cost.
        gc.disable()
        images = len(orjson.loads(path.read_bytes()))
    elif mode == "iter_raw_graphs":
        images = sum(1 for _ in iter_raw_graphs(path, chunk_size))
    elif mode == "load_graphs":
        images = rejected = 0
        repairs: Counter[str] = Counter()
        for check in load_graphs(path, chunk_size):
            images += 1
            rejected += check.graph is None
            repairs.update(check.repairs)
        extra = {"rejected": rejected, "repairs": dict(repairs)}
    else:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    seconds = time.perf_counter() - t0
    return {
        "mode": mode,
        "seconds": seconds,
        "images": images,
        "start_rss_mb": start_rss,
        "peak_rss_mb": _peak_rss_mb(),
        "hwm_mb": _hwm_mb(),
        **extra,
    }


def _run_child(mode: str, path: Path, chunk_size: int) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_loader",
        "--child",
        mode,
        "--file",
        str(path),
        "--chunk-size",
        str(chunk_size),
    ]
    out = subprocess.run(cmd, cwd=REPO, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def corpus_path(workdir: Path, n_images: int, seed: int, objects_mean: float, relations_mean: float) -> Path:
    """The cached corpus for these parameters (the generator version is part of the key)."""
    tag = f"{GENERATOR_VERSION.replace('@', '-')}_n{n_images}_s{seed}_o{objects_mean:g}_r{relations_mean:g}"
    return workdir / f"synthetic_{tag}_sceneGraphs.json"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=74_942)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--objects-mean", type=float, default=16)
    ap.add_argument("--relations-mean", type=float, default=50)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hardneg-bench"))
    ap.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK)
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode; the fastest is reported")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(_child(args.child, args.file, args.chunk_size)))
        return

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    path = corpus_path(args.workdir, args.n_images, args.seed, args.objects_mean, args.relations_mean)
    if path.exists():
        log.info("reusing %s", path)
    else:
        t0 = time.perf_counter()
        write_synthetic_gqa(path, args.n_images, args.seed, args.objects_mean, args.relations_mean)
        log.info("generated in %.1f s", time.perf_counter() - t0)
    # Warm the page cache so every mode reads from memory. In chunks: on Linux a child's ru_maxrss
    # starts at its parent's peak (it survives fork and exec), so the parent must stay small.
    with path.open("rb") as f:
        while f.read(8 << 20):
            pass

    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.repeat):
        for mode in MODES:
            r = _run_child(mode, path, args.chunk_size)
            if mode in best:  # keep the fastest time and the highest memory peak over the repeats
                for key in ("peak_rss_mb", "hwm_mb"):
                    r[key] = max(r[key], best[mode][key])
                if r["seconds"] > best[mode]["seconds"]:
                    r["seconds"] = best[mode]["seconds"]
            best[mode] = r

    base = best["orjson"]["seconds"]
    base_nogc = best["orjson_nogc"]["seconds"]
    size_mb = path.stat().st_size / 1e6
    print(f"corpus       {path}")
    print(
        f"file size    {size_mb:.1f} MB, {best['orjson']['images']} images, chunk {args.chunk_size} B, "
        f"best of {args.repeat}"
    )
    print(
        f"{'mode':<16}{'seconds':>9}{'x orjson':>10}{'x nogc':>8}{'MB/s':>8}{'s/10k img':>11}"
        f"{'peak RSS MB':>13}{'VmHWM':>7}{'(start)':>9}"
    )
    for mode in MODES:
        r = best[mode]
        print(
            f"{mode:<16}{r['seconds']:>9.2f}{r['seconds'] / base:>10.2f}{r['seconds'] / base_nogc:>8.2f}"
            f"{size_mb / r['seconds']:>8.0f}{r['seconds'] / r['images'] * 1e4:>11.3f}"
            f"{r['peak_rss_mb']:>13.0f}{r['hwm_mb']:>7.0f}{r['start_rss_mb']:>9.0f}"
        )
    print("peak RSS = ru_maxrss of a fresh child per mode; VmHWM = its /proc twin; (start) = RSS after imports")
    lg = best["load_graphs"]
    print(f"load_graphs: {lg['rejected']} rejected, repairs {lg['repairs']}")


if __name__ == "__main__":
    main()
