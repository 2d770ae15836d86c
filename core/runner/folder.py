"""The run folder as the runner keeps it: setting it up, the config it stores, the day it began.

<run>/manifest.json, stats.*, rejects.jsonl, splits/<split>/...   the outputs (the write stage's)
<run>/work/config.json    the validated config of the last `hardneg run`
<run>/work/<stage>/       each stage's units, rejects, markers and summary (core/runner/stage.py)

What a run reads (its scene graphs and photos, the demo world) is the domain's: `core/gqa/run_inputs.py`.
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
from hardneg.core.errors import ConfigError, HardnegError, InputError
from hardneg.core.io import atomic_write_bytes, clean_temp_files
from hardneg.core.runner.publish import recover, rollback

log = logging.getLogger("hardneg")

CONFIG_FILE = Path("work") / "config.json"
CREATED_FILE = Path("work") / "created"  # the UTC date the run folder was first prepared (stats.md says it)


def prepare_folder(cfg: RunConfig, root: Path) -> None:
    """Create the run folder and store the config; first finish or undo what an interrupted run left (a
    half-done output swap, temp files). What the run reads is the domain's (`core/gqa/run_inputs.py`)."""
    (root / "work").mkdir(parents=True, exist_ok=True)
    if stages := rollback(root):  # an interrupted run's outputs: back to the last finished run's
        log.info("an interrupted run's outputs were put back as they were; %s will be redone", ", ".join(stages))
    recover(root)
    clean_temp_files(root, recursive=False)  # the stages clean their own folders when they open
    atomic_write_bytes(root / CONFIG_FILE, cfg.model_dump_json(indent=2).encode())
    if not (root / CREATED_FILE).exists():  # the day the run began; a resumed run keeps it
        atomic_write_bytes(root / CREATED_FILE, datetime.now(UTC).date().isoformat().encode())


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
