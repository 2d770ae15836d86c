"""OS errors a user can fix (read-only or full disks, a path through a file) are one `hardneg: error:`
line naming the path and the fix, exit status 2, never a traceback; rerunning afterwards resumes and
gives what a fresh run gives. Real file systems where the test runs as root (a tmpfs mounted
read-only, or too small), chmod or a patched write otherwise."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hardneg.cli import main
from hardneg.core.io import TEMP_MARK
from hardneg.core.runner.publish import BACKUP, STAGING
from hardneg.core.runner.stage import Run

TINY = "demo: {n_scenes: 6}\nimages: {candidates: 1}\nlanguage: {negatives_per_positive: 1}\n"
SPLIT_FILES = [f"splits/{s}/{f}" for s in ("train", "val", "test") for f in ("positive.json", "negative.json")]


@pytest.fixture(scope="module")
def tiny_cfg(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("cfg") / "tiny.yaml"
    p.write_text(TINY)
    return p


@pytest.fixture(scope="module")
def fresh(tiny_cfg: Path, tmp_path_factory) -> dict[int, Path]:
    """Fresh runs by seed, made on demand, to compare resumed runs with."""
    base = tmp_path_factory.mktemp("fresh")
    runs: dict[int, Path] = {}

    class Runs(dict):
        def __missing__(self, seed: int) -> Path:
            root = base / f"seed{seed}"
            assert (
                main(["run", "--no-prefect", "--config", str(tiny_cfg), "--output", str(root), "--seed", str(seed)])
                == 0
            )
            self[seed] = root
            return root

    return Runs(runs)


def _run(cfg: Path, out: Path, seed: int, capsys) -> tuple[int, str]:
    rc = main(["run", "--no-prefect", "--config", str(cfg), "--output", str(out), "--seed", str(seed)])
    return rc, capsys.readouterr().err


def _one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("hardneg: error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def _same_splits(a: Path, b: Path) -> None:
    for f in SPLIT_FILES:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    assert not [p for p in a.rglob(f"*{TEMP_MARK}*") if p.is_file()], "temp files left behind"
    assert not (a / STAGING).exists() and not (a / BACKUP).exists()


def _mount(folder: Path, options: str) -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    return (
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True).returncode
        == 0
    )


def _remount(folder: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(folder)], check=True, capture_output=True)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "mnt"
    if not _mount(d, "size=64m"):
        pytest.skip("mounting a tmpfs needs root")
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _read_only_switch(tmp_path: Path, request) -> tuple[Path, Callable[[], None], Callable[[], None], str]:
    """A folder and how to make it read-only and writable again: EROFS on a tmpfs remounted read-only
    (root), else EACCES by chmod."""
    if os.geteuid() == 0:
        folder = request.getfixturevalue("tmpfs")
        return folder, lambda: _remount(folder, "ro"), lambda: _remount(folder, "rw"), "Read-only file system"
    folder = tmp_path / "out"
    folder.mkdir()
    return folder, lambda: _chmod_tree(folder, 0o555), lambda: _chmod_tree(folder, 0o755), "Permission denied"


def test_an_output_that_turns_read_only_mid_run_is_one_line_and_the_rerun_resumes(
    tiny_cfg, fresh, tmp_path, capsys, monkeypatch
):
    """EROFS: `work/` bind-mounted read-only over itself after the first stages (root: a read-only
    remount is refused while the run holds files open), else EACCES by chmod."""
    out = tmp_path / "run"
    work = out / "work"
    root_user = os.geteuid() == 0
    if root_user:
        ro = lambda: _bind_read_only(work)  # noqa: E731
        rw = lambda: subprocess.run(["umount", str(work)], check=True, capture_output=True)  # noqa: E731
        expect = "Read-only file system"
    else:
        ro, rw, expect = (lambda: _chmod_tree(work, 0o555)), (lambda: _chmod_tree(work, 0o755)), "Permission denied"
    real = Run.run_wave

    def run_wave(self: Run, names: list[str], *args, **kwargs):
        if "language" in names:  # the earlier stages are done and stay done
            ro()
        return real(self, names, *args, **kwargs)

    monkeypatch.setattr(Run, "run_wave", run_wave)
    try:
        rc, err = _run(tiny_cfg, out, 0, capsys)
    finally:
        monkeypatch.undo()
        if _is_mount(work) if root_user else work.exists():
            rw()
    assert not _is_mount(work)
    line = _one_line(err)
    assert rc == 2 and expect in line and str(work) in line and "--output" in line and "rerun" in line
    done = {d.name for d in work.iterdir() if (d / "_stage.json").exists()}
    assert "paths" in done and "language" not in done
    rc2, err2 = _run(tiny_cfg, out, 0, capsys)
    assert rc2 == 0, err2
    _same_splits(out, fresh[0])


def _bind_read_only(folder: Path) -> None:
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)


def _is_mount(folder: Path) -> bool:
    """A mount point, bind mounts of the same file system included (`os.path.ismount` misses those)."""
    target = str(folder.resolve())
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def test_a_read_only_output_is_refused_in_one_line_before_the_run(tiny_cfg, tmp_path, capsys, request):
    folder, make_ro, make_rw, _ = _read_only_switch(tmp_path, request)
    make_ro()
    try:
        rc, err = _run(tiny_cfg, folder / "run", 0, capsys)
    finally:
        make_rw()
    assert rc == 2 and str(folder) in _one_line(err)


def _chmod_tree(folder: Path, mode: int) -> None:
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir():
            p.chmod(mode)


def test_a_full_disk_is_one_line_and_the_rerun_resumes(tiny_cfg, fresh, tmpfs, capsys):
    """ENOSPC part-way through a run on a 1 MB tmpfs (the run needs about 1.6 MB); then room is made."""
    _remount(tmpfs, "size=1m")
    out = tmpfs / "run"
    rc, err = _run(tiny_cfg, out, 0, capsys)
    line = _one_line(err)
    assert rc == 2 and "No space left on device" in line and str(out) in line and "free some space" in line
    assert (out / "work").is_dir()  # it failed part-way, not before starting
    _remount(tmpfs, "size=64m")
    assert _run(tiny_cfg, out, 0, capsys)[0] == 0
    _same_splits(out, fresh[0])


def test_a_write_that_fails_is_one_line_naming_its_file_and_the_rerun_resumes(
    tiny_cfg, fresh, tmp_path, capsys, monkeypatch
):
    """The same without root: the first shard file of the language stage meets a full disk."""
    from hardneg.core import io

    real = io.Path.open

    class Full:  # a file whose write() meets a full disk
        def __init__(self, f: Any) -> None:
            self.f = f

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")  # as write() raises it: no file name

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.f.close()

    def open_full(self: Path, mode: str = "r", *args: Any, **kw: Any) -> Any:
        f = real(self, mode, *args, **kw)
        return Full(f) if "w" in mode and "language" in self.parts and "positives" in self.name else f

    monkeypatch.setattr(io.Path, "open", open_full)
    out = tmp_path / "run"
    rc, err = _run(tiny_cfg, out, 0, capsys)
    line = _one_line(err)
    assert rc == 2 and "No space left on device" in line and str(out / "work" / "language") in line
    monkeypatch.undo()
    assert _run(tiny_cfg, out, 0, capsys)[0] == 0
    _same_splits(out, fresh[0])


def test_an_output_below_a_file_is_one_line(tiny_cfg, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    rc, err = _run(tiny_cfg, tmp_path / "afile" / "run", 0, capsys)
    line = _one_line(err)
    assert rc == 2 and "Not a directory" in line and "afile" in line


def test_prefect_home_is_never_inside_the_repository(monkeypatch):
    """Regression (fixed by the CLI redesign): Prefect's database lived in the repository."""
    from hardneg.cli import prefect_env_defaults
    from tests.helpers import REPO_ROOT

    monkeypatch.delenv("PREFECT_HOME", raising=False)
    prefect_env_defaults()
    home = Path(os.environ["PREFECT_HOME"]).resolve()
    assert REPO_ROOT.resolve() not in [home, *home.parents]
