#!/usr/bin/env python3
"""Set up and run hardneg with nothing but Python 3.11: the README's two commands.

    python3 dev.py demo [hardneg run args...]   # create .venv, install, run the pipeline on the demo world
    python3 dev.py test [pytest args...]        # create .venv, install with test extras, run the tests

The virtual environment lives in .venv and is reinstalled only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
EDITOR = ROOT / "build" / "editor"  # pyrightconfig.json's extraPaths
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
# One pytest-xdist worker per core. Work stealing: each worker starts on its half of the tests in order (a
# module's tests stay together, so its fixtures are built once) and takes tests from the other's queue when
# its own runs out. Later arguments win: `python3 dev.py test -n 0 tests/test_x.py` runs in one process.
PYTEST_ARGS = ["-q", "-n", "auto", "--dist", "worksteal"]


def link_tree() -> None:
    """`build/editor/hardneg/`: links that map `hardneg.core` to `core/` and so on, as pyproject's package-dir
    does. Python finds `hardneg.*` through the editable install's import hook; editors and type checkers do
    not run import hooks, so they read this folder (one link per layer: new modules show up at once)."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    pkg = EDITOR / "hardneg"
    pkg.mkdir(parents=True, exist_ok=True)
    links = {name.removeprefix("hardneg."): ROOT / folder for name, folder in mapping.items() if name != "hardneg"}
    links |= {f.name: f for f in (ROOT / mapping["hardneg"]).glob("*.py")}
    for name, target in links.items():
        link = pkg / name
        if link.is_symlink() and link.resolve() == target.resolve():
            continue
        link.unlink(missing_ok=True)
        link.symlink_to(os.path.relpath(target, pkg))


def ensure_env(extras: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036  (dev.py runs on whatever python3 the machine has)
        sys.exit(f"hardneg needs Python 3.11+, this is {sys.version.split()[0]}")
    if not PY.exists():
        print(f"creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    link_tree()
    stamp = VENV / f".installed-{extras or 'base'}"
    want = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == want:
        return
    print(f"installing hardneg[{extras}] into {VENV} (once per pyproject change)", flush=True)
    pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    target = f".[{extras}]" if extras else "."
    subprocess.run([*pip, "-e", target], check=True, cwd=ROOT)
    stamp.write_text(want)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "lint"}:
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "demo":
        ensure_env("")
        return subprocess.call([str(BIN / "hardneg"), "run", *rest], cwd=ROOT)
    ensure_env("dev")
    if cmd == "lint":
        return subprocess.call([str(PY), "-m", "ruff", "check", "."], cwd=ROOT)
    return subprocess.call([str(PY), "-m", "pytest", *PYTEST_ARGS, *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
