"""The demo world: a seeded procedural dataset in GQA's format, graphs and rendered images.

The embedded default dataset (configs/demo.yaml), so the whole pipeline runs offline on CPU with no
download. `build_demo_world` writes `demo_sceneGraphs.json` (one JSON object, image id -> graph, exactly
GQA's `*_sceneGraphs.json`) and `images/<image_id>.jpg`.

The graph is the ground truth of the picture, which real GQA is not:
- every foreground object carries a color and a size; names that can show a pattern
  (`PATTERNED_NAMES`) always carry one ("plain" included) and names that can show a material
  (`MATERIALS`) always carry one, so an attribute missing from the graph is also missing from the image;
- every attribute is drawn so it can be seen (fill color, box size, stripes/dots/checks, wood grain,
  metal gradient, translucent glass, glossy plastic);
- relations come from the boxes and are stored both ways as GQA does ("to the left of"/"to the right of",
  "above"/"below", "next to", "on"/"under"); boxes are tight around the drawn glyph and inside the image.

Scenes repeat names 2-3 times (sharing a color and differing in size/pattern, or identical and told
apart only by relations), keep some names single, and share colors across names, so paths of every
difficulty level and structure exist.

Everything is a pure function of (n_scenes, seed): scene i depends only on (seed, i), and object ids
count up through the scenes, so a smaller world is a prefix of a larger one with the same seed.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene

# The vocabulary (`demo_catalog`), scene generation (`demo_graphs`) and rendering (`demo_render`) live in
# their own modules; this one builds the world on disk.

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "demo_world@v1"  # bump when the output for a given seed changes
JPEG_QUALITY = 90  # fixed, no optimize/progressive: identical bytes on every build


@dataclass(slots=True, frozen=True)
class DemoWorld:
    """Where a built demo world lies: GQA-format graphs and their images."""

    scene_graphs: Path
    images: Path
    n_scenes: int
    seed: int


def build_demo_world(out_dir: Path, n_scenes: int = 40, seed: int = 0) -> DemoWorld:
    """Write the demo world's graphs (`demo_sceneGraphs.json`) and images (`images/<id>.jpg`)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    graphs = generate_graphs(n_scenes, seed)
    images = out_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    for image_id, graph in graphs.items():
        render_scene(graph).save(images / f"{image_id}.jpg", "JPEG", quality=JPEG_QUALITY)
    scene_graphs = out_dir / "demo_sceneGraphs.json"
    scene_graphs.write_bytes(orjson.dumps(graphs, option=orjson.OPT_SORT_KEYS))
    n_obj = sum(len(g["objects"]) for g in graphs.values())
    n_rel = sum(len(o["relations"]) for g in graphs.values() for o in g["objects"].values())
    logger.info(
        "demo world (%s, seed %d): %d scenes, %d objects, %d relations in %.2fs -> %s",
        GENERATOR_VERSION,
        seed,
        n_scenes,
        n_obj,
        n_rel,
        time.perf_counter() - t0,
        out_dir,
    )
    return DemoWorld(scene_graphs=scene_graphs, images=images, n_scenes=n_scenes, seed=seed)
