"""Print in view: a flip is not made of a photo that shows print, which a mirror turns backwards.

Two sources, either one enough:

- **The graph names something that carries print**: a name the word tables call a surface of text or of
  pictures (a sign, a label, a screen, a magazine: `Words.surface_kind`), or one of `PRINT_NAMES`, things
  that usually carry letters or digits: packaging (a cereal box, a carton), books, keyboards and
  clocks, vehicles that are lettered as a rule (a bus, a taxi), jerseys with numbers. Only the name is
  known, not whether its print faces the camera, so this errs towards refusing; things that carry print
  only sometimes (a car, a truck, a bottle, a shirt) are left to the pixels.
- **The pixels show lines of print** (`core.pixels.text.find_print`): letters in a row on a plain ground,
  whatever the graph says (lettering along a counter's edge that no annotator boxed).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from PIL import Image

from hardneg.core.pixels.text import find_print
from hardneg.core.words.table import Words

PRINT_NAMES = frozenset(
    {
        *("book", "books", "notebook", "magazine", "newspaper", "paper", "papers", "menu", "poster", "card"),
        *("cards", "ticket", "receipt", "envelope", "letter", "letters", "word", "words", "writing", "text"),
        *("number", "numbers", "logo", "brand", "label", "sticker", "graffiti"),
        *("box", "boxes", "carton", "package", "packet", "cereal"),
        *("keyboard", "laptop", "computer", "monitor", "screen", "phone", "cellphone", "cell phone", "remote"),
        *("remote control", "clock", "watch", "calculator", "meter", "parking meter"),
        *("bus", "taxi", "ambulance", "license plate", "jersey"),
    }
)


def printed_name(names: Iterable[str], words: Words) -> str | None:
    """The first name that carries print (module docstring), or None."""
    for name in names:
        key = name.strip().lower()
        if key in PRINT_NAMES or words.surface_kind(key) in ("text", "pictures"):
            return name
        last = key.split()[-1] if key else ""
        if last in PRINT_NAMES and last not in {"plate", "paper"}:  # "cereal box", "water bottle"
            return name
    return None


def print_refusal(image: Image.Image | np.ndarray, names: Iterable[str], words: Words) -> str | None:
    """Why a mirror of this photo would show print backwards (module docstring), or None."""
    if (name := printed_name(names, words)) is not None:
        return f"the picture holds print ({name!r}): mirrored text gives the flip away"
    found = find_print(np.asarray(image))
    if found:
        x, y, w, h = found[0].box
        where = f"{len(found)} line(s), the largest at {x},{y} {w}x{h}"
        return f"the pixels show print ({where}): a mirror shows it backwards"
    return None
