"""Thumbnails with boxes drawn on them (the report's pictures; the app draws on a canvas instead)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from hardneg.review.boxes import Box

log = logging.getLogger(__name__)


def thumbnail(src: Path, boxes: Sequence[Box], out: Path, max_side: int = 360, quality: int = 78) -> bool:
    """Write `src` shrunk to `max_side` with `boxes` (in `src` pixels) drawn; False if it cannot be read."""
    try:
        with Image.open(src) as im:
            width = im.width
            im.draft("RGB", (max_side, max_side))  # JPEG: decode at a reduced scale, much faster
            im = im.convert("RGB")
            im.thumbnail((max_side, max_side), Image.BICUBIC, reducing_gap=2.0)
            scale = im.width / width
    except (OSError, ValueError) as e:  # a missing or corrupt image: the card says so instead
        log.warning("cannot read image %s: %s", src, e)
        return False
    draw = ImageDraw.Draw(im)
    width = max(2, round(max(im.size) / 160))
    for b in boxes:
        x0, y0 = b.x * scale, b.y * scale
        x1, y1 = x0 + max(b.w * scale, 1), y0 + max(b.h * scale, 1)
        draw.rectangle((x0, y0, x1, y1), outline=b.color, width=width)
    out.parent.mkdir(parents=True, exist_ok=True)
    im.save(out, "JPEG", quality=quality, optimize=True)
    return True
