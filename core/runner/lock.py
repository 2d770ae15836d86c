"""One writer per run folder: `hardneg run`, the Prefect flow and `hardneg split` hold
`<run>/work/.hardneg.lock` (in the run's private part, with the stages' work: nothing a dataset upload
reads) while they write, so two runs (two overlapping scheduled runs, a split during a run) never write one folder
at once. The second refuses at once with who holds it.

An advisory `flock` on the file: the operating system drops it when the holder exits, however it exits,
so a killed run never leaves a stale lock behind. The file itself stays (it is empty of meaning without
the lock) and says who held it last.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from pathlib import Path

import orjson

from hardneg.core.errors import HardnegError

LOCK_FILE = ".hardneg.lock"


def lock_path(root: Path) -> Path:
    return root / "work" / LOCK_FILE


def holder(root: Path) -> str | None:
    """Who holds the run folder's lock now, or None when nobody does (a lock file left by a process that
    ended holds nothing: the operating system dropped its lock)."""
    path = lock_path(root)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(path)
    finally:
        os.close(fd)  # closing drops the shared lock it took, if it took one
    return None


class RunBusy(HardnegError):
    """Another process is writing the run folder."""


class RunLock:
    def __init__(self, root: Path, what: str = "hardneg run") -> None:
        self.root = root
        self.what = what
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        path = lock_path(self.root)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunBusy(f"{self.root} is being written by {_holder(path)}; wait for it to finish") from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "what": self.what, "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, orjson.dumps(info), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _holder(path: Path) -> str:
    try:
        info = orjson.loads(path.read_bytes())
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["since"]))
        return f"{info['what']} (pid {info['pid']} on {info['host']}, since {since})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
