"""What the photo checks of the positives cost per image, against what a run already pays for the image.

    .venv/bin/python -m benchmarks.pixel_rules [FOLDER] [--repeat N]

FOLDER is a GQA-style folder (`images/<id>.jpg`, `sceneGraphs.json`; default: the eight real photos of
`tests/data/photos8`, four Visual Genome photos with raw graphs and four GQA photos with reduced ones,
reported apart). Per image, each `--repeat` times (median), measured in the same run:

- **paths**: the image's candidate positives (`generate_positives`, the demo config's settings), the
  graph-only work every run pays;
- **mask all**: a mask and a colour reading for every object of the image (what checking every object
  against the photo would cost);
- **pixels**: what the pixels stage does for those positives (`judge_positive` on each, the photo decoded
  once, an object masked only when a claim needs it, the twin search once per target), and the same
  without the twin search.

The table gives ms per image and each step's ratio to **paths**, and how many objects the pixels stage
masked of how many the images hold.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson
from PIL import Image

from hardneg.core.certify import Certifier
from hardneg.core.colors import read_colours
from hardneg.core.config import load_config
from hardneg.core.executor import GraphIndex
from hardneg.core.pixels.claims import Photo, judge_positive
from hardneg.core.pixels.masks import object_mask
from hardneg.core.records import SceneGraph
from hardneg.generators.paths.stage import generate_positives
from hardneg.generators.paths.targets import PathResources

REPO = Path(__file__).resolve().parent.parent
VG_IDS = {"1", "2", "4", "5"}  # tests/data/photos8: the raw Visual Genome graphs; the others are GQA's


def _timed(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", nargs="?", type=Path, default=REPO / "tests" / "data" / "photos8")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cfg = load_config(None)
    res = PathResources.load(cfg)
    certifier = Certifier(res.words, res.table)
    graphs = orjson.loads((args.folder / "sceneGraphs.json").read_bytes())
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    for image_id, raw in sorted(graphs.items()):
        graph = SceneGraph.from_gqa(image_id, raw)
        rgb = np.asarray(Image.open(args.folder / "images" / f"{image_id}.jpg").convert("RGB"))
        paths_ms, made = _timed(lambda g=graph: generate_positives(g, cfg, res)[0], args.repeat)
        positives = made  # type: ignore[assignment]

        def mask_all(g: SceneGraph = graph, im: np.ndarray = rgb) -> None:
            for o in g.objects.values():
                m = object_mask(im, o.box)
                x0, y0, x1, y1 = m.box
                read_colours(im[y0:y1, x0:x1], m.mask)

        def pixels(twins: bool, g: SceneGraph = graph, im: np.ndarray = rgb, ps: list = positives) -> int:  # type: ignore[type-arg]
            photo, index = Photo(im, g), GraphIndex(g, res.table)
            for p in ps:
                judge_positive(photo, p.node(), p.node().id, index, certifier, res.words, twins=twins)
            return photo.masks_made

        all_ms, _ = _timed(mask_all, args.repeat)
        pix_ms, masks = _timed(lambda: pixels(True), args.repeat)
        colour_ms, _ = _timed(lambda: pixels(False), args.repeat)
        group = "vg_photos" if image_id in VG_IDS else "gqa_photos"
        row = {"paths": paths_ms, "mask all": all_ms, "pixels": pix_ms, "pixels, no twin search": colour_ms}
        row |= {"positives": len(positives), "objects": len(graph.objects), "masks": masks}  # type: ignore[dict-item]
        rows[group].append(row)
    print(f"ms per image, median of {args.repeat}; ratio to the image's path search (measured in the same run)\n")
    print(f"| photos | images | positives | masked / objects | {' | '.join(STEPS)} |")
    print("|---|---|---|---|" + "---|" * len(STEPS))
    for group, rs in rows.items():
        base = statistics.median(r["paths"] for r in rs)
        cells = [f"{statistics.median(r[s] for r in rs):.0f} ({statistics.median(r[s] for r in rs) / base:.1f}x)"
                 for s in STEPS]  # fmt: skip
        masked = f"{sum(r['masks'] for r in rs):.0f} / {sum(r['objects'] for r in rs):.0f}"
        print(f"| {group} | {len(rs)} | {sum(r['positives'] for r in rs):.0f} | {masked} | {' | '.join(cells)} |")


STEPS = ("paths", "mask all", "pixels", "pixels, no twin search")

if __name__ == "__main__":
    main()
