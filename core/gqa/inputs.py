"""What a run read from its inputs, by content: the scene-graph files' digest and the run's own photos.

A run reads its inputs once, in the ingest stage, and never again: every later stage, `hardneg split`,
the report and the review app read the run folder only. So a run folder moved or copied elsewhere still
re-splits, and nothing a maintainer does to the input photos afterwards (an edit, a re-link, a move) can
change a published file.

- **The scene graphs** are identified by their bytes (`graphs_digest`): the ingest stage's fingerprint
  holds it, so any edit of a graph file reruns ingest, and a touch, a copy or a hard link does not.
- **The photos**: ingest reads every image a kept graph names once, checks it, and writes the very bytes
  it checked into the run's photo store (`photo_store`, `work/ingest/photos/<image id>.jpg`). Everything
  after ingest reads the store; published copies (`data/`, the exports) are hard links into it, inside
  the run folder.
- **Resuming** (`photos_changed`): ingest records, for every image it looked at, the digest of its bytes
  (or that it was missing) and the file's stat identity when read. A resumed run re-hashes only the files
  whose stat identity changed since (an edit changes the ctime even when the mtime is set back), and
  redoes ingest when a file's content, or its presence, changed. Stat identity is only a cache key:
  a file whose inode or ctime changed but whose bytes did not changes nothing.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hardneg.core.gqa.stream import graph_files
from hardneg.core.io import stat_key

PHOTOS = "photos"  # the store's folder inside the ingest stage's folder
_BLOCK = 1 << 20


def photo_store(root: Path) -> Path:
    """The run's own copies of the photos it kept: `<run>/work/ingest/photos/`."""
    return root / "work" / "ingest" / PHOTOS


def bytes_digest(data: bytes) -> str:
    """The digest of one file's bytes, as ingest records it."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_content_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            h.update(block)
    return h.hexdigest()


def graphs_digest(scene_graphs: Path) -> str:
    """A digest of the bytes of every scene-graph file the run reads (one file, or a folder's files in
    name order, each with its name inside the folder: a renamed file reorders what is read). Each file is
    read once per process while its stat identity stays the same (a run asks in the driver and in ingest)."""
    h = hashlib.blake2b(digest_size=16)
    files = graph_files(scene_graphs)
    base = scene_graphs if scene_graphs.is_dir() else scene_graphs.parent
    for path in files:
        content = _memo_digest(str(path.resolve()), tuple(stat_key(path.stat())))
        h.update(os.fsencode(os.path.relpath(path, base)) + b"\0" + content.encode() + b"\n")
    return h.hexdigest()


@functools.lru_cache(maxsize=64)
def _memo_digest(path: str, identity: tuple[int, ...]) -> str:
    return file_content_digest(Path(path))


def photo_record(image_id: str, path: Path) -> dict[str, Any]:
    """What ingest records of one image before it reads it: the file's stat identity (None: no regular file
    there); ingest adds the digest of the bytes it then read (None: none could be). Taken before the read,
    so a file that changes while it is read is hashed again on resume."""
    try:
        st = path.lstat()
        ident = stat_key(st) if stat.S_ISREG(st.st_mode) else None
    except OSError:
        ident = None
    return {"image_id": image_id, "digest": None, "stat": ident}


def photos_changed(images: Path, records: Iterable[dict[str, Any]]) -> str | None:
    """Why the images ingest recorded are no longer what it read (the first image found), or None.
    Files whose stat identity is as recorded are trusted unread; the others are hashed again."""
    for r in records:
        path = images / f"{r['image_id']}.jpg"
        try:
            st = path.lstat()
        except FileNotFoundError:
            if r["stat"] is not None:
                return f"image {path.name} is gone"
            continue
        except OSError as e:
            return f"image {path.name} cannot be read ({e.strerror or e})"
        if not stat.S_ISREG(st.st_mode):
            if r["stat"] is not None:
                return f"image {path.name} is no regular file any more"
            continue
        if r["stat"] is None:
            return f"image {path.name} appeared"
        if stat_key(st) == r["stat"]:
            continue
        try:
            now = file_content_digest(path)
        except OSError as e:
            return f"image {path.name} cannot be read ({e.strerror or e})"
        if r["digest"] is None or now != r["digest"]:
            # a file ingest refused for its bytes (digest None) that is now readable changed too
            return f"image {path.name} changed"
    return None
