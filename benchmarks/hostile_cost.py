"""What one hostile scene graph costs, ingest to paths, as a multiple of a normal image.

Builds a corpus of normal images (the synthetic GQA-like generator's, and the demo world's graphs) and
hostile ones: graphs past the ingest limits (`inputs.max_*`: 5,000 and 20,000 objects, 5,000 of one name,
dense relations, deep nesting, a 1 MB graph, a coordinate of 1.2e29), which ingest must reject cheaply,
and graphs just inside them (a thousand objects of one name, relations by boxes or stored, a hub object,
a hundred attributes each, a crowd), whose path search the step budget (`paths.max_image_steps`) bounds.

1. The real stages run over the whole corpus (`core.runner.stage.Run`, ingest to paths): no exception escapes,
   the rejects and `budget_exhausted` are printed.
2. Each image is timed alone through the functions those stages call (parse and validate one member,
   hygiene, the path search with the corpus evidence), after a warm-up pass, so a time is the image's own
   and not a share of a stage's fixed costs. Printed: seconds per stage and the total as a multiple of the
   median normal image.

    python -m benchmarks.hostile_cost [--normal 200] [--real FILE] [--workdir /tmp/hardneg-hostile]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from benchmarks.synthetic_gqa import write_synthetic_gqa
from hardneg.core.config import RunConfig, load_config
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.gqa.hygiene import clean_by
from hardneg.core.gqa.loader import GraphLimits, load_graphs
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.io import read_jsonl
from hardneg.core.rows import PLAUSIBILITY_ANNOTATIONS, PLAUSIBILITY_COUNTS
from hardneg.core.runner.stage import Run
from hardneg.core.words.table import Words
from hardneg.flows.pipeline import STAGES
from hardneg.generators.paths.annotation_rules import Evidence
from hardneg.generators.paths.stage import generate_positives
from hardneg.generators.paths.targets import PathResources

UP_TO_PATHS = STAGES[: [s.name for s in STAGES].index("paths") + 1]
NAMES = ("car", "dog", "man", "table", "cup", "chair", "bag", "hat", "horse", "bench", "lamp", "boat")
ATTRS = ("red", "blue", "white", "black", "small", "large", "wooden", "metal", "young", "old")


# -- hostile graphs ----------------------------------------------------------------------------------


def grid(
    n: int,
    names: Sequence[str] = NAMES,
    relation: str = "near",
    relations: int = 2,
    attributes: int = 2,
    side: int = 50,
    seed: int = 0,
) -> dict[str, Any]:
    """`n` objects on a grid (inside the image, none a duplicate of another), names in turn, each with
    `attributes` attributes and `relations` edges to the next objects."""
    rng = random.Random(seed)
    extra = [f"a{k}" for k in range(attributes)]  # more than ATTRS: words no table knows
    per_row = max(1, 1000 // (side * 6 // 10))
    step = 1000 // per_row
    objects = {}
    for i in range(n):
        objects[str(i)] = {
            "name": names[i % len(names)],
            "x": (i % per_row) * step % (1000 - side),
            "y": (i // per_row) * step % (1000 - side),
            "w": side,
            "h": side,
            "attributes": rng.sample(ATTRS, attributes) if attributes <= len(ATTRS) else extra,
            "relations": [{"name": relation, "object": str((i + k) % n)} for k in range(1, relations + 1)],
        }  # fmt: skip
    return {"width": 1000, "height": 1000, "objects": objects}


def hub(n: int) -> dict[str, Any]:
    """One object related to every other by a stored edge and by boxes, all of one name."""
    g = grid(n, names=("car",), relations=0)
    g["objects"]["0"]["relations"] = [
        {"name": rel, "object": str(i)} for i in range(1, n) for rel in ("near", "to the left of")
    ][:9_999]
    return g


def twins(n: int, relations: int = 5) -> dict[str, Any]:
    """Pairs of objects, each pair of a name of its own, alike in every attribute and relation: each
    target has one distractor that no path tells apart, so every candidate is tried and refused."""
    objects = {}
    for i in range(n):
        pair = i // 2
        objects[str(i)] = {
            "name": f"{NAMES[pair % len(NAMES)]}{pair // len(NAMES)}",
            "x": (i % 30) * 31,
            "y": (i // 30) * 27,
            "w": 60,
            "h": 60,
            "attributes": list(ATTRS),
            "relations": [
                {"name": "near", "object": str((2 * (pair + k) + j) % n)}
                for k in range(1, relations + 1)
                for j in (0, 1)
            ],
        }
    return {"width": 1000, "height": 1000, "objects": objects}


def nested(levels: int) -> bytes:
    g = orjson.dumps(grid(2)).decode()
    return g.replace('"attributes":', '"attributes":' + "[" * levels + "]" * levels + ',"x_":', 1).encode()


def padded(size: int) -> dict[str, Any]:
    g = grid(10)
    g["location"] = "x" * size
    return g


def far_box() -> dict[str, Any]:
    g = grid(3)
    g["objects"]["1"]["x"] = 1.2e29
    return g


# name -> graph (or its raw JSON); past the limits first, then just inside them
HOSTILE: dict[str, Callable[[], dict[str, Any] | bytes]] = {
    "objects_5000": lambda: grid(5_000),
    "same_name_5000": lambda: grid(5_000, names=("car",)),
    "objects_20000": lambda: grid(20_000, side=20),
    "dense_relations_30000": lambda: grid(1_000, relations=30),
    "deep_nesting_600": lambda: nested(600),
    "graph_1mb": lambda: padded(1 << 20),
    "coordinate_1.2e29": far_box,
    "in:same_name_999_near": lambda: grid(999, names=("car",), relations=10),
    "in:same_name_999_left": lambda: grid(999, names=("car",), relation="to the left of", relations=10),
    "in:two_names_999_left": lambda: grid(999, names=("car", "dog"), relation="to the left of", relations=10),
    "in:hub_999": lambda: hub(999),
    "in:twins_998": lambda: twins(998),
    "in:attributes_100": lambda: grid(300, names=("car", "dog"), relations=3, attributes=100),
    "in:crowd_100": lambda: grid(100, names=("man", "man", "dog", "cup"), relation="to the left of", relations=8),
    # people and clothes: each shirt's twins go on every other person (rule other_wearers); clothes with no one
    "in:people_shirts_999": lambda: grid(999, names=("man", "woman", "shirt"), relation="to the left of", relations=3),
    "in:clothes_999": lambda: grid(999, names=("shirt", "hat", "jacket"), relation="to the left of", relations=3),
}  # fmt: skip


# -- the corpus --------------------------------------------------------------------------------------


def write_corpus(folder: Path, n_normal: int, real: Path | None) -> tuple[Path, list[tuple[str, bytes]], list[str]]:
    """The scene-graph file, its members (image id, graph JSON) and the normal image ids."""
    members: list[tuple[str, bytes]] = []
    synthetic = write_synthetic_gqa(folder / "synthetic.json", n_images=n_normal, seed=0)
    members += [(k, orjson.dumps(v)) for k, v in orjson.loads(synthetic.read_bytes()).items()]
    members += [(f"demo{k}", orjson.dumps(v)) for k, v in generate_graphs(max(n_normal // 4, 1), 0).items()]
    if real is not None:
        members += [(f"real{k}", orjson.dumps(v)) for k, v in orjson.loads(real.read_bytes()).items()]
    normal = [k for k, _ in members]
    for name, build in HOSTILE.items():
        g = build()
        members.append((name, g if isinstance(g, bytes) else orjson.dumps(g)))
    path = folder / "sceneGraphs.json"
    path.write_bytes(b"{" + b",\n".join(json.dumps(k).encode() + b": " + v for k, v in members) + b"}")
    return path, members, normal


def run_stages(folder: Path, cfg: RunConfig) -> Run:
    """Ingest to paths over the corpus, as a run does; prints what was rejected and stopped."""
    root = folder / "run"
    for s in UP_TO_PATHS:
        s.validate(cfg)
    prepare_run(cfg, root)
    run = Run(root, cfg, UP_TO_PATHS)
    for name in run.order:
        t0 = time.perf_counter()
        summary = run.run_stage(name)
        print(f"stage {name}: {time.perf_counter() - t0:.1f} s, {summary['rejects']} rejects")
    for f in run.reject_files():
        for r in read_jsonl(f):
            if r["image_id"] in HOSTILE and (
                "limit" in r["reason"] or "pixel" in r["reason"] or "budget" in r["reason"]
            ):
                print(f"  {r['stage']}: {r['image_id']}: {r['reason']}")  # fmt: skip
    print(f"paths budget_exhausted: {run.summary('paths')['stats'].get('budget_exhausted', 0)}")
    return run


# -- per-image cost ----------------------------------------------------------------------------------


def time_images(
    folder: Path, members: list[tuple[str, bytes]], run: Run, cfg: RunConfig
) -> dict[str, dict[str, float]]:
    """image id -> seconds per stage ("ingest", "hygiene", "paths"), each image alone, warm."""
    res, words, limits = PathResources.load(cfg), Words.load(), GraphLimits.of(cfg.inputs)
    evidence = Evidence(
        AnnotationStats.from_rows(run.read_all(PLAUSIBILITY_ANNOTATIONS)),
        Counts.from_rows(r for r in run.read_all(PLAUSIBILITY_COUNTS) if r["kind"] != "triples"),
    )
    one = folder / "one.json"
    out: dict[str, dict[str, float]] = {}
    for warm in (True, False):
        for image_id, raw in members:
            one.write_bytes(b"{" + json.dumps(image_id).encode() + b": " + raw + b"}")
            t0 = time.perf_counter()
            (check,) = load_graphs(one, limits=limits)
            t1 = time.perf_counter()
            times = {"ingest": t1 - t0, "hygiene": 0.0, "paths": 0.0}
            if check.graph is not None:
                graph, _ = clean_by(check.graph, words, cfg.hygiene)
                t2 = time.perf_counter()
                generate_positives(graph, cfg, res, evidence)
                times.update(hygiene=t2 - t1, paths=time.perf_counter() - t2)
            if not warm:
                out[image_id] = times
    return out


def report(times: dict[str, dict[str, float]], normal: list[str], hostile: list[str]) -> None:
    totals = {k: sum(v.values()) for k, v in times.items()}
    median = statistics.median(totals[k] for k in normal)
    worst_normal = max(normal, key=lambda k: totals[k])
    print(f"\nnormal images: {len(normal)}, median {median * 1e3:.1f} ms, slowest {worst_normal} "
          f"{totals[worst_normal] * 1e3:.1f} ms ({totals[worst_normal] / median:.0f}x)")  # fmt: skip
    print(f"{'image':28} {'ingest':>8} {'hygiene':>8} {'paths':>8} {'total s':>8} {'x median':>9}")
    for k in hostile:
        t = times[k]
        cells = " ".join(f"{t[s]:8.3f}" for s in ("ingest", "hygiene", "paths"))
        print(f"{k:28} {cells} {totals[k]:8.3f} {totals[k] / median:9.0f}")
    worst = max(hostile, key=lambda k: totals[k])
    print(
        f"\nworst hostile image: {worst}, {totals[worst]:.2f} s, {totals[worst] / median:.0f}x the median normal image"
    )


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--normal", type=int, default=200, help="synthetic GQA-like images (and a quarter as many demo)")
    ap.add_argument("--real", type=Path, help="a real *_sceneGraphs.json whose images count as normal too")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hardneg-hostile"))
    args = ap.parse_args(argv)
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    corpus, members, normal = write_corpus(args.workdir, args.normal, args.real)
    cfg = load_config(None, {"shard_size": 50, "inputs": {"scene_graphs": str(corpus)}})
    run = run_stages(args.workdir, cfg)
    report(time_images(args.workdir, members, run, cfg), normal, list(HOSTILE))


if __name__ == "__main__":
    main()
