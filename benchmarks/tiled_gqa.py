"""A benchmark corpus at real density: real GQA scene graphs tiled to any size.

A synthetic corpus is only as dense as its generator: one that yields fewer positives an image than real
graphs (random names, boxes and attributes leave fewer objects a path can single out) makes every stage
after ingest look cheaper than it is. This one is made of real graphs. Each output image is a copy of one graph of the
sources, drawn in turn from each source by its weight (the order is a keyed shuffle, so every graph of a
source is used before any is used twice); the copy gets a new image id (`<id>-s<source>-t<copy>[f<n>]`: a run's
output can be counted per source) and new object ids (`<copy>_<id>`, relations renamed with them), so no
two images share an id and no copy can be resumed or deduplicated as another. Names, attributes, boxes and
relations are the source's, untouched. A copy's id keeps its source's fold (`core/gqa/plausibility.fold_of`, a
suffix `f<n>` added until it does): the blind scorers of refinement are fit on one half of the images and
score the other, and a copy in the other half would be the very positive they were fit on. With copies in
both halves, refinement kept 15% of a 10,000-image corpus's candidates (3 : 1 the first 100 GQA val graphs
and 8,196 reduced ones), 28% with the folds kept, against about half on the 8,196 distinct real graphs
alone: a graph copied 75 times makes its pairs 75 times, in one refinement cell, so the stages after
refinement still see fewer negatives than distinct images would give them.

Sources are GQA-format files (`{image_id: {width, height, objects: {...}}}`); a weight per source sets
its share of the images (a full GQA val file carries attributes and left/right relations; a reduced
one without them is thinner). `density` counts what a corpus holds per image: objects, attributes,
relations, and the share of objects with an attribute.

    python -m benchmarks.tiled_gqa OUT.json --source A.json:0.5 --source B.json:0.5 --n-images N --seed S
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.plausibility import fold_of

log = logging.getLogger(__name__)

TILER_VERSION = "tiled_gqa@v2"  # bump when the output for the same sources and seed changes; v2: copies keep the fold


def parse_source(text: str) -> tuple[Path, float]:
    """`FILE` or `FILE:WEIGHT` (weight 1 when not given)."""
    path, sep, weight = text.rpartition(":")
    if sep and path and _is_number(weight):
        return Path(path), float(weight)
    return Path(text), 1.0


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def load_source(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The graphs of one GQA-format file, in its order."""
    data = orjson.loads(path.read_bytes())
    if not isinstance(data, dict) or not data:
        raise ValueError(f"{path}: not a GQA scene-graph file (an object of image id -> graph)")
    return list(data.items())


def renamed(graph: dict[str, Any], copy: int) -> dict[str, Any]:
    """The graph with every object id (and every relation's target) prefixed by the copy's number."""
    prefix = f"{copy}_"
    objects = {}
    for oid, obj in graph.get("objects", {}).items():
        o = dict(obj)
        o["relations"] = [{**r, "object": prefix + str(r.get("object"))} for r in obj.get("relations", [])]
        objects[prefix + oid] = o
    return {**graph, "objects": objects}


def tiles(sources: Sequence[tuple[Path, float]], n_images: int, seed: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """`n_images` renamed copies, the sources interleaved by weight (a smooth weighted round robin)."""
    if n_images < 1:
        raise ValueError("n_images must be at least 1")
    loaded = [load_source(p) for p, _ in sources]
    weights = [w for _, w in sources]
    if any(w <= 0 for w in weights):
        raise ValueError("every source's weight must be positive")
    total = sum(weights)
    credit = [0.0] * len(sources)
    orders: list[list[int]] = [[] for _ in sources]
    used = [0] * len(sources)
    for i in range(n_images):
        for k, w in enumerate(weights):
            credit[k] += w / total
        k = max(range(len(sources)), key=lambda j: credit[j])
        credit[k] -= 1.0
        if not orders[k]:  # a fresh keyed shuffle of this source: every graph once before any twice
            orders[k] = list(range(len(loaded[k])))
            random.Random(f"{seed}:{k}:{used[k]}").shuffle(orders[k])
        image_id, graph = loaded[k][orders[k].pop()]
        used[k] += 1
        yield same_fold(image_id, f"{image_id}-s{k}-t{i}"), renamed(graph, i)


def same_fold(source_id: str, copy_id: str) -> str:
    """`copy_id`, or it with the first suffix `f<n>` that puts it in the fold of `source_id`."""
    fold, candidate, n = fold_of(source_id), copy_id, 0
    while fold_of(candidate) != fold:
        n += 1
        candidate = f"{copy_id}f{n}"
    return candidate


def write_tiled_gqa(out: Path, sources: Sequence[tuple[Path, float]], n_images: int, seed: int) -> Path:
    """Write the tiled corpus as one GQA-format JSON object, image by image (atomic: a temp file renamed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with tmp.open("wb") as f:
        f.write(b"{")
        for i, (image_id, graph) in enumerate(tiles(sources, n_images, seed)):
            f.write((b"," if i else b"") + orjson.dumps(image_id) + b":" + orjson.dumps(graph))
        f.write(b"}")
    tmp.replace(out)
    log.info("wrote %d tiled images to %s", n_images, out)
    return out


def source_of(image_id: str) -> int | None:
    """The index of the source a tiled image was copied from (None for an id this module did not make)."""
    m = re.fullmatch(r".*-s(\d+)-t\d+(?:f\d+)?", image_id)
    return int(m.group(1)) if m else None


def density(path: Path) -> dict[str, float]:
    """Per image: objects, attributes, relations; and the share of objects with at least one attribute."""
    data = orjson.loads(path.read_bytes())
    n = len(data) or 1
    objects = [o for g in data.values() for o in g.get("objects", {}).values()]
    attributes = sum(len(o.get("attributes", [])) for o in objects)
    relations = sum(len(o.get("relations", [])) for o in objects)
    with_attr = sum(1 for o in objects if o.get("attributes"))
    return {
        "images": len(data),
        "objects": len(objects) / n,
        "attributes": attributes / n,
        "relations": relations / n,
        "objects_with_attributes": with_attr / max(1, len(objects)),
    }


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--source", action="append", required=True, help="FILE or FILE:WEIGHT (repeatable)")
    ap.add_argument("--n-images", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    write_tiled_gqa(args.out, [parse_source(s) for s in args.source], args.n_images, args.seed)
    print(density(args.out))


if __name__ == "__main__":
    main()
