"""Small file helpers: atomic writes and JSON Lines, so an interrupted run never leaves half a file."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

TEMP_MARK = ".tmp"  # temp files are ".<name>.tmp<pid>": hidden, and never a finished file's name


def temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write_chunks(path, (data,), hashed=False)


def atomic_write_chunks(path: Path, chunks: Iterable[bytes], hashed: bool = True) -> tuple[int, str]:
    """Write the chunks to a temp file as they come (never all in memory at once), then rename it into
    place; returns the size and the sha1 hex digest of what was written ("" unless `hashed`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    h, size = hashlib.sha1() if hashed else None, 0
    try:
        with tmp.open("wb") as f:
            for chunk in chunks:
                f.write(chunk)
                if h is not None:
                    h.update(chunk)
                size += len(chunk)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)  # a full disk mid-write leaves no stray file behind
        if e.filename is None:  # a failed write() names no file: say which one
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return size, h.hexdigest() if h is not None else ""


# What a user can do about an OS error (`hardneg.cli` prints it as one line).
OS_ERROR_FIXES = {
    errno.EACCES: "make it writable (and readable) for this user, or choose another --output",
    errno.EPERM: "make it writable (and readable) for this user, or choose another --output",
    errno.EROFS: "that file system is read-only: choose an --output on a writable disk",
    errno.ENOSPC: "the disk is full: free some space, or choose an --output on another disk",
    errno.EDQUOT: "the disk quota is used up: free some space, or choose an --output on another disk",
    errno.ENOENT: "check that the path exists",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "a folder is where a file was expected: check the path",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter --output",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or lower `workers`",
}


# A permission error outside the run folder is on something the run reads (an input image, a scene-graph
# file): its own permissions are the fix, and another --output would not help.
OUTSIDE_FIX = "it is outside the run folder (an input the run reads): make it readable for this user"


def os_error_message(e: OSError, where: Path | None = None) -> str:
    """One line for an OS error: what failed, on which path (`where`, the run folder, when the error names
    none), and what to do about it."""
    path = e.filename if e.filename is not None else where
    what = e.strerror or str(e) or type(e).__name__
    line = f"{what}: {path}" if path is not None else what
    if e.filename2 is not None:
        line += f" -> {e.filename2}"
    fix = OS_ERROR_FIXES.get(e.errno)  # type: ignore[arg-type]
    if e.errno in (errno.EACCES, errno.EPERM) and where is not None and path is not None:
        p, run = Path(os.path.abspath(os.fsdecode(path))), Path(os.path.abspath(where))
        fix = fix if p == run or run in p.parents else OUTSIDE_FIX
    return f"{line}; {fix}" if fix else line


def not_writable(folder: Path) -> str | None:
    """None when this user may create files in `folder`, else why not and what to do. A read-only file
    system (EROFS) is named as such: `os.access` refuses it too, but no permission change would help."""
    if os.access(folder, os.W_OK):
        return None
    if os.statvfs(folder).f_flag & os.ST_RDONLY:
        return f"{folder} is on a read-only file system; choose an --output on a writable disk"
    return f"cannot write in {folder} (permission denied); make it writable for this user, or choose another --output"


def clean_temp_files(folder: Path, recursive: bool = True) -> int:
    """Remove temp files an interrupted writer left under `folder` (or only in it); returns how many."""
    n = 0
    for p in (folder.rglob if recursive else folder.glob)(f".*{TEMP_MARK}*"):
        if p.is_file():
            p.unlink(missing_ok=True)
            n += 1
    return n


def dumps(obj: Any, indent: bool = False) -> bytes:
    opt = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(obj, option=opt | orjson.OPT_NON_STR_KEYS)


def write_json(path: Path, obj: Any, indent: bool = True) -> None:
    atomic_write_bytes(path, dumps(obj, indent) + b"\n")


def write_jsonl(path: Path, rows: Iterable[Any]) -> int:
    """Write rows atomically, one at a time; returns the count."""
    count = 0

    def lines() -> Iterator[bytes]:
        nonlocal count
        for r in rows:
            count += 1
            yield dumps(r) + b"\n"

    atomic_write_chunks(path, lines(), hashed=False)
    return count


def read_jsonl(path: Path) -> Iterator[Any]:
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                yield orjson.loads(line)


class JsonArrayWriter:
    """Stream a JSON array to disk one element per line; renamed into place on close."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._tmp = temp_path(path)
        self._f = self._tmp.open("wb")
        self._f.write(b"[")
        self.count = 0

    def write(self, obj: Any) -> None:
        self._f.write(b"\n" if self.count == 0 else b",\n")
        self._f.write(dumps(obj))
        self.count += 1

    def close(self) -> None:
        self._f.write(b"\n]\n" if self.count else b"]\n")
        self._f.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        """Give up: the unfinished file removed, nothing put in place."""
        self._f.close()
        self._tmp.unlink(missing_ok=True)


def iter_json_array(path: Path) -> Iterator[Any]:
    """The records of a JSON array written by `JsonArrayWriter` (one element per line), streamed; another
    layout is parsed whole."""
    with path.open("rb") as f:
        first = f.readline().strip()
        if first not in (b"[", b"[]"):
            yield from orjson.loads(first + f.read())
            return
        for line in f:
            line = line.strip().rstrip(b",")
            if line and line != b"]":
                yield orjson.loads(line)


def digest(*parts: Any) -> str:
    """A short stable hash of JSON-able parts."""
    return hashlib.sha1(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()[:16]


def stat_key(st: os.stat_result) -> list[int]:
    """What says a file is as it was without reading it: size, mtime, ctime, inode. Only ever a cache key in
    front of a content digest: an edit changes the ctime even when the mtime is set back, and a file whose
    stat changed (a copy, a new link) is read again, never taken for changed."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def file_digest(path: Path) -> str:
    h = hashlib.sha1()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]
