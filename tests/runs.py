"""Demo runs shared by the test files that only read them: one build per config per test session.

A whole demo run takes seconds to minutes, and many test files read the same one. `shared_run(overrides)`
builds the run of the demo config plus `overrides` once and hands every later caller the same folder, in
this process and in the other pytest-xdist workers: the runs live in the session's folder
(`$HARDNEG_TEST_RUNS`, made and removed by `tests/conftest.py`), the first worker to need a run builds it
under a file lock, the others wait for it and reuse it. A caller that changes a run copies it first.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

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
# The whole 40-scene demo world without negative images (those have their own tests and cost the most).
NO_IMAGES = {"images": {"enabled": False}}
# 16 scenes and two candidates per image negative: every stage runs, with negatives of every kind. ImageCoDe
# sets take at most 3 edits (the rest of their ten images are corpus images).
# The kinds are named: offline, flips and colour swaps are off by default, and the tests cover them too.
SIXTEEN = {
    "demo": {"n_scenes": 16},
    "images": {"candidates": 2, "types": ["replace_attribute", "swap_attribute", "flip"]},
    "exports": {"imagecode": {"edits": 3}},
}

DONE = ".built"  # written last: a folder without it is a build that did not finish


@functools.cache
def _home() -> Path:
    """The session's folder for shared runs; outside a pytest session (a benchmark), a private temp folder."""
    if home := os.environ.get("HARDNEG_TEST_RUNS"):
        return Path(home)
    home = Path(tempfile.mkdtemp(prefix="hardneg-test-runs-"))
    atexit.register(shutil.rmtree, home, True)
    return home


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive `flock` on `path`: one process at a time, released however the holder ends."""
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def shared_folder(name: str, build: Callable[[Path], Any]) -> Path:
    """`<session folder>/<name>/run`, made by `build(folder)` once per session, whichever process asks first;
    callers must not change it (copy it first)."""
    base = _home() / name
    with _locked(_home() / f"{name}.lock"):
        if not (base / DONE).exists():
            shutil.rmtree(base, ignore_errors=True)  # what a build that failed left behind
            base.mkdir(parents=True)
            build(base / "run")
            (base / DONE).touch()
    return base / "run"


def shared_run(overrides: dict[str, Any]) -> Path:
    """A finished run of the demo config plus `overrides`, built once per session; copy it before changing it."""
    key = hashlib.sha1(orjson.dumps(overrides, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    return shared_folder(f"run-{key}", lambda root: run_local(load_config(None, overrides), root))


def small_run() -> Path:
    """A finished run of the SMALL config; copy it before changing it."""
    return shared_run(SMALL)


def copy_of_small_run(dst: Path) -> Path:
    """A private copy of `small_run()` (hard links in `data/` survive as copies, which is fine here)."""
    shutil.copytree(small_run(), dst)
    return dst
