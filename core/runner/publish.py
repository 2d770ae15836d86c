"""Publishing the write stage's outputs all at once, so a failed write (or `hardneg split`) never leaves
good output half-replaced.

The write stage writes `splits/`, `rejects.jsonl` and `manifest.json` into a staging folder
beside them (`begin`), then `publish` marks the staging complete and swaps each output in: the old one
moves aside into a backup folder, the new one takes its place. A crash before the mark leaves the old
outputs untouched; a crash after it is finished (rolled forward) by `recover`, which every run and every
write calls first. So at any moment each output is the old one or the new one, never half of either.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from hardneg.core.io import atomic_write_bytes

log = logging.getLogger("hardneg")

STAGING = ".write-new"  # hidden: never mistaken for output, never matched by the temp-file cleaner
BACKUP = ".write-old"
COMPLETE = "_complete"  # in STAGING: everything is written, the swap may (and must) finish
OUTPUTS = ("splits", "rejects.jsonl", "manifest.json")


def begin(root: Path) -> Path:
    """A fresh, empty staging folder for the outputs (after finishing or discarding an earlier one)."""
    recover(root)
    staging = root / STAGING
    staging.mkdir(parents=True)
    return staging


def publish(root: Path) -> None:
    """Swap every staged output in, old ones out; the staging must hold the complete set."""
    atomic_write_bytes(root / STAGING / COMPLETE, b"")  # from here on a crash rolls forward
    _roll_forward(root)
    _discard(root)


def recover(root: Path) -> None:
    """Finish a swap that was marked complete; otherwise drop the staging (the old outputs were never
    touched). Either way drop the backup of the outputs the last swap replaced."""
    if (root / STAGING / COMPLETE).exists():
        _roll_forward(root)
    _discard(root)


def _roll_forward(root: Path) -> None:
    staging, backup = root / STAGING, root / BACKUP
    backup.mkdir(exist_ok=True)
    for name in OUTPUTS:
        new, cur, old = staging / name, root / name, backup / name
        if not new.exists():  # already swapped in
            continue
        if cur.exists():
            _remove(old)
            os.replace(cur, old)
        os.replace(new, cur)


def _discard(root: Path) -> None:
    _remove(root / STAGING)
    _remove(root / BACKUP)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink(missing_ok=True)


# -- the run's published outputs as one transaction ---------------------------------------------------
#
# The write stage's swap keeps its own files whole; the run's other outputs (data/, the card, the exports,
# the report) are built by later stages, in place. So that a run (or `hardneg split`) that fails anywhere
# after the first of them leaves the previous set whole, the first stage that writes a published output
# opens a transaction: every output there is hard-linked into TXN (no bytes copied; writers always
# replace files, never rewrite them in place, so the links keep the old content). The end of the run
# commits (drops TXN); a failure, or the next start after a crash, rolls back: each output goes back to
# what TXN holds (removed if it did not exist), and the stages that wrote into the outputs during the
# transaction are reset, so the next run redoes them. Rolling back only renames and removes: it needs no
# free space, and a crash in the middle of it is finished by the next start.

TXN = ".publish-old"
TXN_NAMES = "_names.json"  # the outputs the transaction covers, and which of them existed when it opened
TXN_STAGES = "_stages"  # one empty file per stage opened during the transaction


def open_transaction(root: Path, names: tuple[str, ...], stage: str) -> None:
    """Open the transaction (once per run) before `stage` writes into the published `names`."""
    txn = root / TXN
    if not txn.exists():
        tmp = root / f"{TXN}.tmp"
        _remove(tmp)
        tmp.mkdir()
        present = [n for n in names if (root / n).exists()]
        for n in present:
            _link_tree(root / n, tmp / n)
        atomic_write_bytes(tmp / TXN_NAMES, orjson.dumps({"names": list(names), "present": present}))
        (tmp / TXN_STAGES).mkdir()
        os.replace(tmp, txn)  # from here on the old outputs are safe
    (txn / TXN_STAGES / stage).touch()


@contextmanager
def publishing(root: Path) -> Iterator[None]:
    """Around a run's stages: their outputs stand when every stage finished, and are rolled back when one
    fails (or the run is interrupted)."""
    try:
        yield
    except BaseException:
        if stages := rollback(root):
            log.warning("the run's outputs are back as they were; %s will be redone", ", ".join(stages))
        raise
    commit(root)


def commit(root: Path) -> None:
    """The run finished: its outputs stand, the old ones go."""
    _remove(root / TXN)


def rollback(root: Path) -> list[str]:
    """Put the outputs back as they were when the transaction opened and reset the stages it opened
    (their work folders go: the next run redoes them); returns those stages. Idempotent."""
    txn = root / TXN
    _remove(root / f"{TXN}.tmp")
    if not txn.exists():
        return []
    _discard(root)  # a write stage's own swap in flight belongs to the failed transaction
    stages = sorted(p.name for p in (txn / TXN_STAGES).iterdir()) if (txn / TXN_STAGES).exists() else []
    for name in stages:
        _remove(root / "work" / name)
    state = orjson.loads((txn / TXN_NAMES).read_bytes())
    for name in state["names"]:
        saved = txn / name
        if name in state["present"]:
            if saved.exists() or saved.is_symlink():  # not yet put back
                _remove(root / name)
                os.replace(saved, root / name)
        else:
            _remove(root / name)
    _remove(txn)
    return stages


def _link_tree(src: Path, dst: Path) -> None:
    """`dst` as a copy of `src` made of hard links (a copy where links are refused); symlinks as links."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        dst.mkdir()
        for child in src.iterdir():
            _link_tree(child, dst / child.name)
    else:
        try:
            os.link(src, dst)
        except OSError:  # a file system without hard links
            shutil.copy2(src, dst)
