"""Publishing the write stage's outputs all at once, so a failed write (or `hardneg split`) never leaves
good output half-replaced.

The write stage writes `splits/`, `rejects.jsonl`, `stats.*` and `manifest.json` into a staging folder
beside them (`begin`), then `publish` marks the staging complete and swaps each output in: the old one
moves aside into a backup folder, the new one takes its place. A crash before the mark leaves the old
outputs untouched; a crash after it is finished (rolled forward) by `recover`, which every run and every
write calls first. So at any moment each output is the old one or the new one, never half of either.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hardneg.core.io import atomic_write_bytes

STAGING = ".write-new"  # hidden: never mistaken for output, never matched by the temp-file cleaner
BACKUP = ".write-old"
COMPLETE = "_complete"  # in STAGING: everything is written, the swap may (and must) finish
OUTPUTS = ("splits", "rejects.jsonl", "stats.json", "stats.md", "manifest.json")


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
