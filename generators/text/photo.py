"""What the photo says against a colour a text negative claims.

A graph annotates one colour of an object that often has several: a white bus with a red stripe is
annotated "white", and "the red bus" is then still true. Where the run has its images, a negative that
puts a colour on an object (a replaced or swapped colour) is refused when the photo shows that colour on
any object the changed node could be: at least `SHOWN` of the pixels of its box are of the colour by the
one colour rule (`core/colors.py`). The box holds some background too, so this refuses a few negatives
that were false; a negative that may be true is worse than none.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from hardneg.core.colors import colour_name, in_range, to_lab
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.records import SceneObject

SHOWN = 0.1  # of a box's pixels of the claimed colour: the object may well show it
MAX_SIDE = 320  # images are read down to this longest side: a share of pixels needs no more
CACHED = 16  # images held at once (a unit's positives come image by image)


class PhotoColours:
    """The share of an object's box that shows a colour, from the run's images (None without them)."""

    def __init__(self, images: Path | None) -> None:
        self.images = images
        self._cache: OrderedDict[str, tuple[np.ndarray, float] | None] = OrderedDict()

    def _image(self, image_id: str) -> tuple[np.ndarray, float] | None:
        """(the image as RGB, downscaled, and the scale from graph pixels to it), or None when unreadable."""
        if image_id in self._cache:
            self._cache.move_to_end(image_id)
            return self._cache[image_id]
        from PIL import Image

        got: tuple[np.ndarray, float] | None = None
        try:
            with Image.open(image_file(self.images, image_id)) as im:  # type: ignore[arg-type]
                width = im.width
                im.draft("RGB", (MAX_SIDE, MAX_SIDE))  # a JPEG decodes at a fraction of its size
                small = im.convert("RGB")
                small.thumbnail((MAX_SIDE, MAX_SIDE))
                got = (np.asarray(small), small.width / width)
        except (OSError, ValueError):
            got = None  # ingest checked every image; one gone since proves nothing either way
        self._cache[image_id] = got
        if len(self._cache) > CACHED:
            self._cache.popitem(last=False)
        return got

    def shown(self, image_id: str, obj: SceneObject, word: str) -> float | None:
        """The share of `obj`'s box whose pixels are the colour `word`; None without an image or for a word
        the colour table does not measure."""
        name = colour_name(word)
        if self.images is None or name is None:
            return None
        got = self._image(image_id)
        if got is None:
            return None
        rgb, scale = got
        x, y, w, h = obj.box
        x0, y0 = int(x * scale), int(y * scale)
        x1, y1 = max(x0 + 1, round((x + w) * scale)), max(y0 + 1, round((y + h) * scale))
        crop = rgb[y0:y1, x0:x1]
        if crop.size == 0:
            return None
        return float(in_range(to_lab(crop), name).mean())
