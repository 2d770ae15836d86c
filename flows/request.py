"""What a run is asked to do, checked before anything starts (and before Prefect does).

`resolve_run(config, output, seed, overrides)` is the one reading of a run's parameters, shared by
`hardneg run` and the Prefect flow (whose parameters they are): the config file over its base chain
(`core/config_files.py`), the overrides and the seed on top, and the run folder (`--output`, or
`outputs/<config>-<hash>`). `check_request` says every way it cannot start as one line, before any
folder is made: inputs that are not there, an output that is a file or someone else's folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hardneg.core.config import DEFAULT_CONFIG, RunConfig, load_config
from hardneg.core.errors import ConfigError, HardnegError, InputError
from hardneg.core.gqa.stream import graph_files, iter_raw_graphs
from hardneg.core.ids import id_problem
from hardneg.core.io import not_writable
from hardneg.core.runner.folder import CONFIG_FILE
from hardneg.core.runner.lock import LOCK_FILE, RunBusy, holder
from hardneg.core.secrets import scrub_for


def resolve_run(
    config: str | None = None,
    output: str | Path | None = None,
    seed: int | None = None,
    overrides: dict[str, Any] | None = None,
) -> tuple[RunConfig, Path]:
    """(the validated config, the absolute run folder) of a run's parameters."""
    extra = dict(overrides or {})
    if seed is not None:
        extra["seed"] = seed
    cfg = load_config(config, extra)
    scrub_for([cfg.language.openai.api_key_env])  # this run's credentials never reach a log line
    if output is not None:
        return cfg, Path(output).expanduser().resolve()
    stem = cfg.name or f"{config_label(config)}-{cfg.fingerprint()[:8]}"
    return cfg, Path.cwd() / "outputs" / stem


def check_scheduled_inputs(cfg: RunConfig, config: str | None) -> None:
    """A schedule (`hardneg serve`, a deployment) runs on real inputs: a config that names none would run the
    demo world every time, which is a mistake unless the demo config is what was asked for, by name."""
    asked_for_demo = config is not None and config_label(config) == DEFAULT_CONFIG.stem
    if cfg.inputs.scene_graphs is None and not asked_for_demo:
        name = f"config {config_label(config)}" if config is not None else "the default config"
        raise ConfigError(
            f"{name} names no inputs, so every scheduled run would build the demo world: "
            "give --scene-graphs (and --images), or inputs.scene_graphs in the config; "
            "to schedule the demo world, say --config demo"
        )


def config_label(config: str | None) -> str:
    """A config's short name: `demo`, `gqa`, `my-config` (a file's stem)."""
    return Path(config).stem if config else DEFAULT_CONFIG.stem


def config_param(config: str | Path | None) -> str | None:
    """A config reference that means the same from any working directory (a Prefect worker's too): a
    file becomes absolute, a bundled name (`gqa`) stays a name."""
    if config is None:
        return None
    p = Path(config).expanduser()
    return str(p.resolve()) if p.is_file() else str(config)


def check_request(cfg: RunConfig, root: Path) -> None:
    """Raise a HardnegError (one line) when the run cannot start; writes nothing. (What its model roles
    need is checked once the stages still to do are known: `flows/preflight.py`.)"""
    check_inputs(cfg)
    check_output(root)


def check_inputs(cfg: RunConfig) -> None:
    if cfg.inputs.scene_graphs is None:
        return
    sg = cfg.resolve(cfg.inputs.scene_graphs)
    if not sg.exists():
        raise InputError(f"scene graphs not found: {sg} (give a *_sceneGraphs.json file or a folder of them)")
    try:
        files = graph_files(sg)
    except (OSError, InputError) as e:
        raise InputError(f"scene graphs: {e}") from None
    for f in files:
        if not os.access(f, os.R_OK):
            raise InputError(f"scene graphs: cannot read {f} (permission denied)")
    if cfg.inputs.images is not None:
        images = cfg.resolve(cfg.inputs.images)
        if not images.is_dir():
            what = "is not a folder" if images.exists() else "not found"
            raise InputError(f"images folder {what}: {images} (give the folder of <image_id>.jpg)")
        check_images_present(sg, images, cfg.inputs.images_checked, cfg.inputs.min_images_present)


def check_images_present(scene_graphs: Path, images: Path, checked: int, share: float) -> None:
    """The images folder holds the graphs' images: of the first `checked` image ids the graphs name (read
    by streaming, so the check costs milliseconds on GQA's train file), at least `share` must have their
    `<id>.jpg` there. A wrong folder is then one line before anything starts, not a run that rejects every
    image at the end. Ids that could not name a file are skipped: ingest rejects those with reasons."""
    ids: list[str] = []
    try:
        for image_id, _ in iter_raw_graphs(scene_graphs):
            if id_problem(image_id) is None:
                ids.append(image_id)
            if len(ids) >= checked:
                break
    except InputError:
        pass  # a broken file: ingest reports it with its byte offset; the ids read so far still count
    if not ids:
        return
    present = [i for i in ids if (images / f"{i}.jpg").is_file()]
    if len(present) < share * len(ids):
        have = set(present)
        missing = next(i for i in ids if i not in have)
        raise InputError(
            f"images folder {images} holds {len(present)} of the first {len(ids)} images the scene graphs name "
            f"(e.g. no {missing}.jpg); give the folder of <image_id>.jpg (inputs.min_images_present: {share:g})"
        )


def _only_a_lock(p: Path) -> bool:
    """`work/` holding nothing but a lock file (a first run that ended before it wrote anything), or a lock
    file an older version kept at the top of the folder."""
    if p.name == LOCK_FILE:
        return True
    return p.name == "work" and p.is_dir() and {q.name for q in p.iterdir()} <= {LOCK_FILE}


def check_output(root: Path) -> None:
    """The run folder is new, empty, or a hardneg run folder (which the run resumes)."""
    if root.exists() and not root.is_dir():
        raise HardnegError(f"output {root} is a file; give a folder for the run")
    if root.is_dir() and not (root / CONFIG_FILE).exists():
        if who := holder(root):  # a first run that is still making its folder
            raise RunBusy(f"{root} is being written by {who}; wait for it to finish")
        others = [p.name for p in root.iterdir() if not _only_a_lock(p)]
        if others:
            raise HardnegError(
                f"output {root} is a folder that is not a hardneg run (it holds {others[0]!r}"
                f"{f' and {len(others) - 1} more' if len(others) > 1 else ''}); give a new or empty folder"
            )
    parent = next((p for p in [root, *root.parents] if p.exists()), None)
    if parent is not None and (why := not_writable(parent)):
        raise HardnegError(f"output {root}: {why}")
