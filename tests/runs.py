"""Small demo runs shared by the test files that only read them (built once per pytest process)."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from hardneg.core.config import load_config
from hardneg.flows.pipeline import run_local

# 10 scenes: every split has rows, the test split has image negatives and train has none; one candidate
# per image negative and one cheap filter (seam), so `hardneg split` has a threshold to change. No flips:
# seam does not score them, so a seam threshold can drop every image negative.
SMALL = {
    "demo": {"n_scenes": 10},
    "images": {"candidates": 1, "types": ["replace_object", "replace_attribute", "swap_object", "swap_attribute"]},
    "filters": {"scorers": {"seam": {}}},
}


def finished_run(overrides: dict, prefix: str) -> Path:
    """A finished run of the demo config plus `overrides` in a temp folder removed at exit."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, base, True)
    root = base / "run"
    run_local(load_config(None, overrides), root)
    return root


@functools.cache
def small_run() -> Path:
    """A finished run of the SMALL config; copy it before changing it."""
    return finished_run(SMALL, "hardneg-small-")


def copy_of_small_run(dst: Path) -> Path:
    """A private copy of `small_run()` (hard links in `data/` survive as copies, which is fine here)."""
    shutil.copytree(small_run(), dst)
    return dst
