"""The report's assets folder, RUN/report/assets/: thumbnails and plots under a byte budget, named
deterministically. URLs are relative to RUN/report/, where the section pages are."""

from __future__ import annotations

import html
import logging
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from hardneg.review.boxes import Box
from hardneg.review.report.draw import thumbnail

log = logging.getLogger(__name__)

FOLDER = "assets"  # inside RUN/report/
MAX_BYTES = 25_000_000  # the whole folder; the issue asks for a report that stays small on GQA


def esc(v: object) -> str:
    return html.escape(str(v), quote=True)


class Assets:
    """Writes files into RUN/report/assets/, refusing new ones once `max_bytes` is spent."""

    def __init__(self, run_root: Path, max_bytes: int = MAX_BYTES):
        self.dir = run_root / "report" / FOLDER
        if self.dir.exists():
            shutil.rmtree(self.dir)  # ours alone: rebuilt from scratch each time
        self.dir.mkdir(parents=True)
        self.max_bytes = max_bytes
        self.used = 0
        self.refused = 0
        self._thumbs: dict[tuple[str, tuple[Box, ...], int], str | None] = {}

    def _account(self, path: Path) -> bool:
        self.used += path.stat().st_size
        if self.used > self.max_bytes:
            path.unlink()
            self.refused += 1
            return False
        return True

    def has_room(self) -> bool:
        return self.used < self.max_bytes

    def thumb(self, name: str, src: Path | None, boxes: Sequence[Box], max_side: int) -> str | None:
        """Relative URL of a thumbnail of `src` with `boxes`, or None (no image, unreadable, or over budget)."""
        if src is None or not self.has_room():
            return None
        key = (str(src), tuple(boxes), max_side)
        if key in self._thumbs:
            return self._thumbs[key]
        fname = re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".jpg"
        out = self.dir / fname
        url = f"{FOLDER}/{fname}" if thumbnail(src, boxes, out, max_side) and self._account(out) else None
        self._thumbs[key] = url
        return url

    def plot(self, name: str, make: Callable[[Path], None]) -> str | None:
        if not self.has_room():
            return None
        fname = re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".png"
        out = self.dir / fname
        make(out)
        return f"{FOLDER}/{fname}" if self._account(out) else None


def img_tag(url: str | None, alt: str, cls: str = "") -> str:
    if url is None:
        return f'<div class="noimg {esc(cls)}">{esc(alt)}: image not available</div>'
    return f'<img src="{esc(url)}" alt="{esc(alt)}" class="{esc(cls)}">'
