"""The demo world's vocabulary: names, colors, sizes, patterns, materials and background stuff.

Shared by graph generation (`core/demo/graphs.py`) and rendering (`core/demo/render.py`), so the
picture shows exactly what the graph says; a module of its own so neither of those imports the other.
Callers import these names from here (`core/demo/world.py` builds the world from them).
"""

from __future__ import annotations

RGB = tuple[int, int, int]

# The demo's paint: the sRGB each colour name is drawn with. Not the colour table (`core/colors.py`, the
# reference an edit paints and a check measures): every demo image, and so every output of a demo run, is
# drawn with these values, a few units off the references, and they stay as they are. Each lies inside its
# name's range by that table's rule (tests/test_demo_world.py checks it), so a check reading a demo image
# sees the colour its graph names.
PAINT: dict[str, RGB] = {
    "red": (210, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 215),
    "yellow": (240, 212, 40),
    "white": (242, 242, 238),
    "black": (28, 28, 30),
    "orange": (242, 138, 30),
    "purple": (135, 50, 175),
    "brown": (130, 80, 40),
    "gray": (128, 128, 128),
}

# px (w, h) of a medium object; "small" and "large" scale it (SIZE_SCALE), so sizes are comparable
# within a name only, as in GQA ("a large cup" can be smaller than "a small house").
BASE_SIZE: dict[str, tuple[int, int]] = {
    "ball": (56, 56),
    "box": (84, 76),
    "cup": (54, 46),
    "plate": (90, 30),
    "bottle": (30, 86),
    "tree": (90, 140),
    "house": (120, 110),
    "car": (130, 62),
    "lamp": (52, 96),
    "book": (44, 58),
    "flower": (48, 72),
    "chair": (64, 92),
}
FOREGROUND_NAMES: tuple[str, ...] = tuple(BASE_SIZE)
# Scale ranges leave a gap (0.68 -> 1.1) so every large object is clearly bigger than every small one.
SIZE_SCALE: dict[str, tuple[float, float]] = {"small": (0.55, 0.68), "large": (1.1, 1.3)}

OUTDOOR_NAMES = ("tree", "house", "car", "ball", "flower", "chair", "box", "bottle")
INDOOR_NAMES = ("cup", "plate", "bottle", "lamp", "book", "chair", "box", "ball", "flower")
# Background "stuff": poor referents that target filtering should drop; (upper, lower) per location.
STUFF = {"outdoors": ("sky", "ground"), "indoors": ("wall", "floor")}
STUFF_NAMES = frozenset(n for pair in STUFF.values() for n in pair)
STUFF_COLORS = {
    "sky": ("blue", "blue", "gray", "white"),
    "ground": ("green", "green", "brown", "gray"),
    "wall": ("white", "yellow", "gray", "blue", "green"),
    "floor": ("brown", "brown", "gray", "white"),
}
STUFF_RGB: dict[str, dict[str, RGB]] = {
    "sky": {"blue": (135, 185, 235), "gray": (165, 170, 178), "white": (226, 231, 238)},
    "ground": {"green": (95, 150, 70), "brown": (145, 108, 66), "gray": (138, 138, 132)},
    "wall": {
        "white": (228, 225, 218),
        "yellow": (232, 215, 160),
        "gray": (178, 178, 174),
        "blue": (162, 182, 212),
        "green": (172, 202, 166),
    },
    "floor": {"brown": (150, 105, 62), "gray": (140, 140, 138), "white": (214, 213, 208)},
}
WEATHER_BY_SKY = {"blue": "sunny", "gray": "overcast", "white": "cloudy"}

# Supports and where on them an item rests, as a fraction of the support's height from its top
# (a chair is drawn from the side: back on the left, seat at half height).
SUPPORT_SEAT = {"box": 0.0, "chair": 0.5}
CHAIR_BACK = 0.2  # fraction of a chair's width taken by its back; items sit right of it
ONABLE = frozenset({"cup", "book", "lamp", "plate", "bottle", "ball", "flower"})

PATTERNS = ("plain", "striped", "dotted", "checkered")
PATTERNED_NAMES = frozenset({"ball", "box", "cup", "plate", "book", "lamp"})
MATERIALS: dict[str, tuple[str, ...]] = {
    "box": ("wooden", "metal", "plastic"),
    "cup": ("glass", "metal", "plastic"),
    "plate": ("glass", "metal", "plastic"),
    "bottle": ("glass", "plastic", "metal"),
    "chair": ("wooden", "metal", "plastic"),
    "lamp": ("glass", "metal", "plastic"),
}
PLAIN_ONLY_MATERIALS = frozenset({"wooden", "glass"})  # grain / translucency would hide a pattern
NAME_COLORS: dict[str, tuple[str, ...]] = {
    "tree": ("green", "green", "green", "yellow", "orange", "red", "brown"),
    "house": ("white", "red", "yellow", "blue", "gray", "brown"),
    "flower": ("red", "yellow", "white", "purple", "orange", "blue"),
}
