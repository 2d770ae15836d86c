"""The run folder: setting it up and finding its inputs.

<run>/manifest.json, attribute_categories.json, stats.*, rejects.jsonl, splits/<split>/...
<run>/inputs/demo/        the demo world, when the run uses it
<run>/work/config.json    the validated config of the last `hardneg run`
<run>/work/<stage>/       each stage's units, rejects, markers and summary (core/runner/stage.py)
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from hardneg.core.config import RunConfig
from hardneg.core.config_files import describe_errors
from hardneg.core.demo.world import build_demo_world
from hardneg.core.errors import ConfigError, HardnegError, InputError
from hardneg.core.gqa.inputs import photo_store
from hardneg.core.ids import id_problem
from hardneg.core.io import atomic_write_bytes, clean_temp_files, digest, write_json
from hardneg.core.runner.publish import recover, rollback
from hardneg.core.words.attribute_table import AttributeTable

log = logging.getLogger("hardneg")

CONFIG_FILE = Path("work") / "config.json"
CREATED_FILE = Path("work") / "created"  # the UTC date the run folder was first prepared (stats.md says it)


def demo_dir(root: Path) -> Path:
    return root / "inputs" / "demo"


def prepare_run(cfg: RunConfig, root: Path) -> None:
    """Create the run folder, store the config and the attribute table, build the demo world if used;
    first finish or undo what an interrupted run left (a half-done output swap, temp files)."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    if stages := rollback(root):  # an interrupted run's outputs: back to the last finished run's
        log.info("an interrupted run's outputs were put back as they were; %s will be redone", ", ".join(stages))
    recover(root)
    clean_temp_files(root, recursive=False)  # the stages clean their own folders when they open
    atomic_write_bytes(root / CONFIG_FILE, cfg.model_dump_json(indent=2).encode())
    if not (root / CREATED_FILE).exists():  # the day the run began; a resumed run keeps it
        atomic_write_bytes(root / CREATED_FILE, datetime.now(UTC).date().isoformat().encode())
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


@contextlib.contextmanager
def removed_on_bad_input(root: Path) -> Iterator[None]:
    """Around a run: when its inputs turn out unusable as a whole (`InputError`: a truncated or empty
    scene-graph file, no image kept, no positive made), a run folder this run created goes again, so the
    mistake leaves nothing behind; a folder that held an earlier run is left to it (its outputs were
    never touched: publishing is all or nothing)."""
    fresh = not root.exists() or not any(root.iterdir())
    try:
        yield
    except InputError:
        if fresh:
            shutil.rmtree(root, ignore_errors=True)
        raise


def created_on(root: Path) -> str | None:
    """The UTC date (YYYY-MM-DD) the run folder was first prepared, or None for an older folder."""
    f = root / CREATED_FILE
    return f.read_text().strip() if f.exists() else None


def stored_config(root: Path) -> RunConfig:
    """The config the last `hardneg run` stored in the run folder."""
    f = root / CONFIG_FILE
    if not f.exists():
        raise HardnegError(f"{root} is not a hardneg run folder (no {CONFIG_FILE})")
    try:
        return RunConfig.model_validate_json(f.read_bytes())
    except ValidationError as e:  # edited by hand, or written by a version with other keys
        raise ConfigError(f"{f} is not a valid config: {describe_errors(e, RunConfig)}") from None


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
