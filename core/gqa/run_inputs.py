"""What a run reads, and where it lies in its run folder: the scene graphs and the photos (the ingest stage
reads the inputs; every later stage the run's own copies), and the demo world a run without inputs builds
into its folder.

<run>/attribute_categories.json   the attribute table the run used
<run>/inputs/demo/                the demo world, when the run uses it
<run>/work/ingest/photos/         the run's copies of its photos (`core/gqa/inputs.py`)
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from hardneg.core.config import RunConfig
from hardneg.core.demo.world import build_demo_world
from hardneg.core.errors import InputError
from hardneg.core.gqa.inputs import photo_store
from hardneg.core.ids import id_problem
from hardneg.core.io import atomic_write_bytes, digest, write_json
from hardneg.core.runner.folder import prepare_folder
from hardneg.core.words.attribute_table import AttributeTable

log = logging.getLogger("hardneg")


def demo_dir(root: Path) -> Path:
    return root / "inputs" / "demo"


def prepare_run(cfg: RunConfig, root: Path) -> None:
    """Create the run folder and store the config (`prepare_folder`), the attribute table, and build the demo
    world if used; first finish or undo what an interrupted run left (a half-done output swap, temp files)."""
    prepare_folder(cfg, root)
    write_json(root / "attribute_categories.json", AttributeTable.load(cfg.resolve(cfg.attribute_table)).to_json())
    if cfg.inputs.scene_graphs is None:
        d = demo_dir(root)
        fp = digest(cfg.demo.model_dump())
        stamp = d / "_fingerprint"
        if not (stamp.exists() and stamp.read_text() == fp):
            log.info("building the demo world (%d scenes)", cfg.demo.n_scenes)
            if d.exists():
                shutil.rmtree(d)
            build_demo_world(d, n_scenes=cfg.demo.n_scenes, seed=cfg.demo.seed)
            atomic_write_bytes(stamp, fp.encode())


def input_paths(root: Path, cfg: RunConfig) -> tuple[Path, Path | None]:
    """(scene graphs, images folder or None) as the config names them: what the ingest stage reads, and
    nothing else does (every later stage reads the run folder: `resolve_inputs`)."""
    if cfg.inputs.scene_graphs is None:
        return demo_dir(root) / "demo_sceneGraphs.json", demo_dir(root) / "images"
    sg = cfg.resolve(cfg.inputs.scene_graphs)
    images = cfg.resolve(cfg.inputs.images) if cfg.inputs.images is not None else None
    if not sg.exists():
        raise InputError(f"scene graphs not found: {sg}")
    if images is not None and not images.is_dir():
        raise InputError(f"images folder not found: {images}")
    return sg, images


def resolve_inputs(root: Path, cfg: RunConfig) -> tuple[Path, Path | None]:
    """(the scene graphs the run read, the run's photo store or None): the images every stage after ingest
    reads are the run's own copies of the inputs (`core/gqa/inputs.py`), so nothing done to the inputs
    after ingest reaches a run's outputs, and a moved run folder finds its photos."""
    if cfg.inputs.scene_graphs is None:  # the demo world brings its images
        return demo_dir(root) / "demo_sceneGraphs.json", photo_store(root)
    images = photo_store(root) if cfg.inputs.images is not None else None
    return cfg.resolve(cfg.inputs.scene_graphs), images


def image_file(images: Path, image_id: str) -> Path:
    """The GQA image of an id: `<images>/<image_id>.jpg`, GQA's own naming, so the id is used as given.
    An id that could leave the folder (or is no file name at all) raises: ingest rejects those first."""
    if (why := id_problem(image_id)) is not None:
        raise ValueError(f"{why}: {image_id!r}")
    return images / f"{image_id}.jpg"
