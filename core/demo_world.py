"""The demo world: a seeded procedural dataset in GQA's format, graphs and rendered images.

The embedded default dataset (configs/demo.yaml), so the whole pipeline runs offline on CPU with no
download. `build_demo_world` writes `demo_sceneGraphs.json` (one JSON object, image id -> graph, exactly
GQA's `*_sceneGraphs.json`, SPEC section 2) and `images/<image_id>.jpg`.

The graph is the ground truth of the picture, which real GQA is not:
- every foreground object carries a color and a size; names that can show a pattern
  (`PATTERNED_NAMES`) always carry one ("plain" included) and names that can show a material
  (`MATERIALS`) always carry one, so an attribute missing from the graph is also missing from the image;
- every attribute is drawn so it can be seen (fill color, box size, stripes/dots/checks, wood grain,
  metal gradient, translucent glass, glossy plastic);
- relations come from the boxes and are stored both ways as GQA does ("to the left of"/"to the right of",
  "above"/"below", "next to", "on"/"under"); boxes are tight around the drawn glyph and inside the image.

Scenes repeat names 2-3 times (sharing a color and differing in size/pattern, or identical and told
apart only by relations), keep some names single, and share colors across names, so paths of every
difficulty level and structure (SPEC 1.1-1.2) exist.

Everything is a pure function of (n_scenes, seed): scene i depends only on (seed, i), and object ids
count up through the scenes, so a smaller world is a prefix of a larger one with the same seed.
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from PIL import Image, ImageDraw

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "demo_world@v1"  # bump when the output for a given seed changes

IMAGE_ID_BASE = 2_400_000  # GQA-like numeric string ids
OBJECT_ID_BASE = 3_000_000
JPEG_QUALITY = 90  # fixed, no optimize/progressive: identical bytes on every build

RGB = tuple[int, int, int]

COLORS: dict[str, RGB] = {
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

MIN_OBJECTS, MAX_OBJECTS = 5, 10  # foreground objects per scene
PLACE_TRIES = 150  # rejection-sampling draws per object before it is dropped
PAD = 6  # px kept free between foreground objects so boxes never overlap


@dataclass(slots=True, frozen=True)
class DemoWorld:
    """Where a built demo world lies: GQA-format graphs and their images."""

    scene_graphs: Path
    images: Path
    n_scenes: int
    seed: int


@dataclass(slots=True, eq=False)  # identity semantics: objects link to each other (support <-> item)
class _Obj:
    """A foreground object while a scene is planned and placed."""

    name: str
    size: str
    color: str
    pattern: str | None
    material: str | None
    w: int = 0
    h: int = 0
    x: int = 0
    y: int = 0
    group: int = -1  # index of its same-name group; -1 for a name that appears once
    identical: bool = False  # in a group told apart only by relations
    support: _Obj | None = None  # what it stands on (None: the ground or floor)
    item: _Obj | None = None  # what stands on it
    rels: list[tuple[str, _Obj]] = field(default_factory=list)

    def attributes(self) -> list[str]:
        out = [self.size, self.color]
        if self.pattern is not None:
            out.append(self.pattern)
        if self.material is not None:
            out.append(self.material)
        return out


# ---------------------------------------------------------------------------------------------------
# Graph generation
# ---------------------------------------------------------------------------------------------------


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def _colors_for(name: str) -> tuple[str, ...]:
    return NAME_COLORS.get(name, tuple(COLORS))


def _sample_obj(
    rng: np.random.Generator,
    name: str,
    color: str | None = None,
    size: str | None = None,
    pattern: str | None = None,
) -> _Obj:
    """An object of `name` with every attribute it must carry; given ones are kept."""
    material = _pick(rng, MATERIALS[name]) if name in MATERIALS else None
    if color is None:
        wood_brown = material == "wooden" and rng.random() < 0.5  # wood is often left brown
        color = "brown" if wood_brown else _pick(rng, _colors_for(name))
    size = size or _pick(rng, ("small", "large"))
    if name in PATTERNED_NAMES:
        if pattern is None:
            pattern = "plain" if rng.random() < 0.45 else _pick(rng, PATTERNS[1:])
        if pattern != "plain" and material in PLAIN_ONLY_MATERIALS:
            material = _pick(rng, tuple(m for m in MATERIALS[name] if m not in PLAIN_ONLY_MATERIALS))
    else:
        pattern = None
    return _Obj(name=name, size=size, color=color, pattern=pattern, material=material)


def _plan_group(rng: np.random.Generator, name: str, count: int, group: int) -> list[_Obj]:
    """`count` objects of one name, in one of three ways to tell them apart."""
    mode = _pick(rng, ("colors", "colors", "shared_color", "shared_color", "shared_color", "identical"))
    if mode == "identical":  # only their relations tell them apart
        proto = _sample_obj(rng, name)
        return [
            _Obj(
                proto.name,
                proto.size,
                proto.color,
                proto.pattern,
                proto.material,
                group=group,
                identical=True,
            )
            for _ in range(count)
        ]
    if mode == "colors":
        colors = [str(c) for c in rng.permutation(list(dict.fromkeys(_colors_for(name))))[:count]]
        objs = [_sample_obj(rng, name, color=c) for c in colors]
    else:  # one color, differing in size / pattern / material where the name allows
        color = _pick(rng, _colors_for(name))
        objs = []
        for _ in range(count):
            cand = _sample_obj(rng, name, color=color)
            for _retry in range(10):
                if all(cand.attributes() != o.attributes() for o in objs):
                    break
                cand = _sample_obj(rng, name, color=color)
            objs.append(cand)
    for o in objs:
        o.group = group
    return objs


def _plan_objects(rng: np.random.Generator, outdoors: bool) -> list[_Obj]:
    """Names and attributes of a scene's foreground objects, with repeats and shared colors."""
    pool = OUTDOOR_NAMES if outdoors else INDOOR_NAMES
    n = int(rng.integers(MIN_OBJECTS, MAX_OBJECTS + 1))
    n_groups = int(rng.choice(4, p=[0.1, 0.45, 0.35, 0.1]))
    order = [str(s) for s in rng.permutation(pool)]
    counts: dict[str, int] = {}
    remaining = n
    for _ in range(n_groups):
        c = 2 if rng.random() < 0.65 else 3
        if remaining - c < 1:  # leave room for at least one name that appears once
            break
        counts[order.pop()] = c
        remaining -= c
    while remaining > 0 and order:
        counts[order.pop()] = 1
        remaining -= 1
    # Most scenes get a support so "on"/"under" exist (more often indoors, where things stand on things).
    if not ({"box", "chair"} & counts.keys()) and rng.random() < (0.45 if outdoors else 0.75):
        singles = [k for k, c in counts.items() if c == 1]
        if sum(counts.values()) >= MAX_OBJECTS and singles:
            del counts[singles[-1]]
        counts[_pick(rng, ("box", "chair"))] = 1
    objs: list[_Obj] = []
    for g, (name, c) in enumerate(counts.items()):
        if c == 1:
            objs.append(_sample_obj(rng, name))
        else:
            objs.extend(_plan_group(rng, name, c, g))
    # Share a color across names on purpose ("the X that has the same color as the Y").
    if rng.random() < 0.75:
        singles = [o for o in objs if o.group < 0]
        if singles:
            s = singles[int(rng.integers(len(singles)))]
            donors = [o.color for o in objs if o.name != s.name and o.color in _colors_for(s.name)]
            if donors:
                s.color = donors[int(rng.integers(len(donors)))]
    # Sizes in px: identical repeats share one scale so they look alike too.
    scales: dict[int, tuple[float, float]] = {}
    for k, o in enumerate(objs):
        key = o.group if o.identical else -1 - k
        if key not in scales:
            lo, hi = SIZE_SCALE[o.size]
            scales[key] = (float(rng.uniform(lo, hi)), float(rng.uniform(0.92, 1.08)))
        s, aspect = scales[key]
        bw, bh = BASE_SIZE[o.name]
        o.w = max(12, round(bw * s * aspect))
        o.h = max(12, round(bh * s / aspect))
        if o.name == "flower":  # the head is a w x w disc above the stem
            o.h = max(o.h, o.w + 6)
    return objs


def _seat(o: _Obj) -> tuple[int, int, int]:
    """(left, right, y) in object coordinates of the surface an item can rest on."""
    left = int(np.ceil(CHAIR_BACK * o.w)) + 2 if o.name == "chair" else 0
    return left, o.w, round(SUPPORT_SEAT[o.name] * o.h)


def _assign_supports(rng: np.random.Generator, objs: list[_Obj], outdoors: bool) -> None:
    supports = [o for o in objs if o.name in SUPPORT_SEAT]
    cands = [objs[int(i)] for i in rng.permutation(len(objs)) if objs[int(i)].name in ONABLE]
    cands.sort(key=lambda o: not o.identical)  # lifting one of identical twins makes "on" distinguish them
    p_on = 0.55 if outdoors else 0.85
    for s in [supports[int(i)] for i in rng.permutation(len(supports))]:
        if rng.random() >= p_on:
            continue
        left, right, _ = _seat(s)
        for c in cands:
            if c.support is None and c.item is None and c.w <= right - left - 2:
                c.support, s.item = s, c
                break


def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int], pad: int) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def _place(rng: np.random.Generator, objs: list[_Obj], width: int, height: int, horizon: int) -> list[_Obj]:
    """Stand objects on the ground/floor, items on their supports; no two boxes overlap."""
    standing = [o for o in objs if o.support is None]
    standing.sort(key=lambda o: -(o.w * o.h + (o.item.w * o.item.h if o.item else 0)))
    taken: list[tuple[int, int, int, int]] = []  # x0, y0, x1, y1 (exclusive) of placed stacks
    placed: list[_Obj] = []
    for o in standing:
        it = o.item
        off_x = seat_y = 0
        if it is not None:
            left, right, seat_y = _seat(o)
            off_x = int(rng.integers(left, right - it.w + 1))
        up = max(0, it.h - seat_y) if it is not None else 0  # how far the item sticks out above
        lo_bottom = max(horizon + 8, o.h + up + 2)
        hi_bottom = height - 3
        if lo_bottom > hi_bottom or o.w + 4 > width:
            continue
        for _ in range(PLACE_TRIES):
            x = int(rng.integers(2, width - o.w - 1))
            y = int(rng.integers(lo_bottom, hi_bottom + 1)) - o.h
            stack = (x, y - up, x + o.w, y + o.h)
            if not any(_overlaps(stack, t, PAD) for t in taken):
                break
        else:
            continue
        taken.append(stack)
        o.x, o.y = x, y
        placed.append(o)
        if it is not None:
            it.x, it.y = x + off_x, y + seat_y - it.h
            placed.append(it)
    for o in objs:  # forget links to dropped objects
        if o.item is not None and o.item not in placed:
            o.item = None
    return [o for o in objs if o in placed]


def _add_geometric_relations(objs: list[_Obj], width: int, height: int) -> None:
    """Spatial relations from the boxes, each stored on both ends as GQA does."""
    for i, a in enumerate(objs):
        for b in objs[i + 1 :]:
            if a.support is b or b.support is a:  # "on"/"under" already says it
                continue
            v_overlap = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
            h_overlap = min(a.x + a.w, b.x + b.w) - max(a.x, b.x)
            min_w, min_h = min(a.w, b.w), min(a.h, b.h)
            dx = (b.x + b.w / 2) - (a.x + a.w / 2)
            # Left/right: centers clearly apart, in the same band of rows, not stacked on each other.
            if abs(dx) >= max(10.0, 0.25 * min_w) and v_overlap > -0.15 * height and h_overlap < 0.5 * min_w:
                left, right = (a, b) if dx > 0 else (b, a)
                left.rels.append(("to the left of", right))
                right.rels.append(("to the right of", left))
            # Above/below: one ends (nearly) where the other starts, in a shared column.
            tol = 0.1 * min_h
            if h_overlap >= 0.25 * min_w:
                if a.y + a.h <= b.y + tol:
                    a.rels.append(("above", b))
                    b.rels.append(("below", a))
                elif b.y + b.h <= a.y + tol:
                    b.rels.append(("above", a))
                    a.rels.append(("below", b))
            # Next to: a small horizontal gap and a real vertical overlap.
            gap = max(b.x - (a.x + a.w), a.x - (b.x + b.w))
            if 0 <= gap <= max(20.0, 0.05 * width) and v_overlap >= 0.3 * min_h:
                a.rels.append(("next to", b))
                b.rels.append(("next to", a))


def _generate_scene(seed: int, index: int, first_object_id: int) -> dict[str, Any]:
    rng = np.random.default_rng((seed, index))
    outdoors = bool(rng.random() < 0.5)
    width = int(rng.integers(480, 641))
    height = int(rng.integers(360, 481))
    horizon = round(height * (rng.uniform(0.34, 0.48) if outdoors else rng.uniform(0.38, 0.52)))
    objs: list[_Obj] = []
    for _attempt in range(30):  # re-plan a crowded scene rather than ship one with too few objects
        objs = _plan_objects(rng, outdoors)
        _assign_supports(rng, objs, outdoors)
        objs = _place(rng, objs, width, height, horizon)
        if len(objs) >= MIN_OBJECTS:
            break
    _add_geometric_relations(objs, width, height)

    location = "outdoors" if outdoors else "indoors"
    upper, lower = STUFF[location]
    ground_color = _pick(rng, STUFF_COLORS[lower])
    ground = _Obj(lower, "", ground_color, None, None, w=width, h=height - horizon, y=horizon)
    stuff = [ground]
    sky_color = None
    if rng.random() < 0.6:  # the upper stuff is in some graphs only (GQA labels it unevenly too)
        sky_color = _pick(rng, STUFF_COLORS[upper])
        stuff.append(_Obj(upper, "", sky_color, None, None, w=width, h=horizon))
    for o in objs:
        if o.support is not None:
            o.rels.append(("on", o.support))
            o.support.rels.append(("under", o))
        else:
            o.rels.append(("on", ground))
            ground.rels.append(("under", o))

    everything = objs + stuff
    ids = {id(o): str(first_object_id + k) for k, o in enumerate(everything)}
    objects: dict[str, Any] = {}
    for o in everything:
        attrs = [o.color] if o.name in STUFF_NAMES else o.attributes()
        rels = sorted({(name, ids[id(t)]) for name, t in o.rels}, key=lambda r: (r[1], r[0]))
        objects[ids[id(o)]] = {
            "name": o.name,
            "x": o.x,
            "y": o.y,
            "w": o.w,
            "h": o.h,
            "attributes": attrs,
            "relations": [{"name": n, "object": t} for n, t in rels],
        }
    graph: dict[str, Any] = {"width": width, "height": height}
    if rng.random() < 0.7:  # optional keys, present on some scenes only
        graph["location"] = location
    if outdoors and rng.random() < 0.6:
        graph["weather"] = WEATHER_BY_SKY[sky_color] if sky_color else "sunny"
    graph["objects"] = objects
    return graph


def generate_graphs(n_scenes: int = 40, seed: int = 0) -> dict[str, dict[str, Any]]:
    """The demo world's scene graphs in GQA's format: image id -> graph."""
    if not isinstance(n_scenes, int) or n_scenes < 1:
        raise ValueError(f"n_scenes must be a positive int, got {n_scenes!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    graphs: dict[str, dict[str, Any]] = {}
    next_object_id = OBJECT_ID_BASE
    for i in range(n_scenes):
        graph = _generate_scene(seed, i, next_object_id)
        next_object_id += len(graph["objects"])
        graphs[str(IMAGE_ID_BASE + i)] = graph
    return graphs


# ---------------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------------

_PART_RGB: dict[str, RGB] = {
    "trunk": (105, 70, 40),
    "roof": (78, 62, 60),
    "door": (75, 50, 35),
    "window": (185, 215, 240),
    "wheel": (30, 30, 32),
    "hub": (165, 165, 170),
    "stem_metal": (92, 92, 98),
    "stem": (55, 135, 55),
    "pages": (238, 232, 215),
    "cap": (45, 45, 50),
}


def _part_rgb(key: str, base: RGB, color: str) -> RGB:
    if key == "shade":  # a darker line of the object's own color (lid, rim, spine)
        return _darker(base) if _luma(base) > 60 else _lighter(base, 0.35)
    if key == "center":
        return (120, 70, 30) if color in ("yellow", "orange") else (250, 205, 50)
    return _PART_RGB[key]


def _luma(c: RGB | np.ndarray) -> float:
    return float(0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2])


def _darker(c: RGB, f: float = 0.5) -> RGB:
    return (round(c[0] * f), round(c[1] * f), round(c[2] * f))


def _lighter(c: RGB, f: float) -> RGB:
    return tuple(round(v + (255 - v) * f) for v in c)  # type: ignore[return-value]


def glyph_masks(name: str, w: int, h: int) -> tuple[np.ndarray, list[tuple[np.ndarray, str]]]:
    """The drawn shape of `name` in a w x h box: the body mask (takes the object's color, pattern
    and material) and fixed-color parts (wheels, trunk, ...). Their union touches all four edges,
    so the box is tight around the glyph."""
    if w < 4 or h < 4:
        raise ValueError(f"glyph box too small: {w}x{h}")
    x1, y1 = w - 1, h - 1

    def X(f: float) -> int:  # a fraction of the width, in pixels
        return min(x1, max(0, round(f * x1)))

    def Y(f: float) -> int:
        return min(y1, max(0, round(f * y1)))

    body = Image.new("L", (w, h), 0)
    db = ImageDraw.Draw(body)
    parts: list[tuple[Image.Image, str]] = []

    def part(key: str) -> ImageDraw.ImageDraw:
        im = Image.new("L", (w, h), 0)
        parts.append((im, key))
        return ImageDraw.Draw(im)

    if name == "ball":
        db.ellipse([0, 0, x1, y1], fill=255)
    elif name == "box":
        db.rectangle([0, 0, x1, y1], fill=255)
        part("shade").rectangle([0, Y(0.2), x1, Y(0.2) + 1], fill=255)  # the lid's edge
    elif name == "cup":
        db.ellipse([X(0.52), Y(0.14), x1, Y(0.74)], fill=255)  # handle ring
        db.ellipse([X(0.66), Y(0.3), X(0.88), Y(0.58)], fill=0)
        db.polygon([(0, 0), (X(0.74), 0), (X(0.64), y1), (X(0.1), y1)], fill=255)
        part("shade").rectangle([1, 0, X(0.72), 1], fill=255)  # rim
    elif name == "plate":
        db.ellipse([0, 0, x1, y1], fill=255)
        part("shade").ellipse([X(0.18), Y(0.22), X(0.82), Y(0.78)], outline=255, width=2)
    elif name == "bottle":
        db.rounded_rectangle([0, Y(0.36), x1, y1], radius=max(1, X(0.25)), fill=255)
        db.rectangle([X(0.3), Y(0.08), X(0.7), Y(0.45)], fill=255)
        part("cap").rectangle([X(0.26), 0, X(0.74), Y(0.09)], fill=255)
    elif name == "tree":
        db.polygon([(X(0.5), 0), (0, Y(0.8)), (x1, Y(0.8))], fill=255)
        db.polygon([(X(0.5), Y(0.2)), (X(0.06), Y(0.62)), (X(0.94), Y(0.62))], fill=255)
        part("trunk").rectangle([X(0.4), Y(0.8), X(0.6), y1], fill=255)
    elif name == "house":
        db.rectangle([X(0.1), Y(0.42), X(0.9), y1], fill=255)
        part("roof").polygon([(0, Y(0.44)), (X(0.5), 0), (x1, Y(0.44))], fill=255)
        part("door").rectangle([X(0.42), Y(0.68), X(0.58), y1], fill=255)
        win = part("window")
        win.rectangle([X(0.18), Y(0.54), X(0.33), Y(0.7)], fill=255)
        win.rectangle([X(0.67), Y(0.54), X(0.82), Y(0.7)], fill=255)
    elif name == "car":
        r = max(2, round(0.22 * h))
        db.rounded_rectangle([0, Y(0.36), x1, Y(0.8)], radius=max(1, Y(0.12)), fill=255)
        db.polygon([(X(0.18), Y(0.4)), (X(0.3), 0), (X(0.68), 0), (X(0.84), Y(0.4))], fill=255)
        glass_pane = [(X(0.27), Y(0.36)), (X(0.34), Y(0.1)), (X(0.65), Y(0.1)), (X(0.75), Y(0.36))]
        part("window").polygon(glass_pane, fill=255)
        wheel, hub = part("wheel"), part("hub")
        for cx in (X(0.23), X(0.77)):
            wheel.ellipse([cx - r, y1 - 2 * r, cx + r, y1], fill=255)
            q = max(1, r // 2)
            hub.ellipse([cx - q, y1 - r - q, cx + q, y1 - r + q], fill=255)
    elif name == "lamp":
        db.polygon([(X(0.22), 0), (X(0.78), 0), (x1, Y(0.42)), (0, Y(0.42))], fill=255)
        part("stem_metal").rectangle([X(0.45), Y(0.42), X(0.55), Y(0.9)], fill=255)
        part("stem_metal").ellipse([X(0.18), Y(0.86), X(0.82), y1], fill=255)
    elif name == "book":
        db.rectangle([0, 0, x1, y1], fill=255)
        part("shade").rectangle([X(0.1), 0, X(0.1) + 1, y1], fill=255)  # spine
        part("pages").rectangle([X(0.92), Y(0.03), x1, Y(0.97)], fill=255)
    elif name == "flower":
        c = x1 / 2
        rp = 0.21 * x1
        d = c - rp
        for k in range(8):  # 8 petals: the ones at 0/90/180/270 degrees touch the box edges
            a = k * np.pi / 4
            px, py = c + d * np.cos(a), c - d * np.sin(a)
            db.ellipse([round(px - rp), round(py - rp), round(px + rp), round(py + rp)], fill=255)
        q = 0.2 * x1
        part("center").ellipse([round(c - q), round(c - q), round(c + q), round(c + q)], fill=255)
        stem = part("stem")
        sw = max(1, round(0.05 * x1))
        stem.rectangle([round(c) - sw, round(c + d + rp) - 1, round(c) + sw, y1], fill=255)
        stem.ellipse([round(c), Y(0.78), round(c + 0.35 * x1), Y(0.88)], fill=255)  # leaf
    elif name == "chair":
        back = X(CHAIR_BACK - 0.02)
        seat = round(SUPPORT_SEAT["chair"] * h)
        db.rectangle([0, 0, back, Y(0.62)], fill=255)  # back
        db.rectangle([0, seat, x1, Y(0.62)], fill=255)  # seat
        db.rectangle([0, Y(0.62), X(0.13), y1], fill=255)  # back leg
        db.rectangle([X(0.87), Y(0.62), x1, y1], fill=255)  # front leg
        db.rectangle([0, Y(0.82), x1, Y(0.85)], fill=255)  # stretcher
    else:  # a name from elsewhere (e.g. a real GQA graph): a plain block
        db.rectangle([0, 0, x1, y1], fill=255)

    body_mask = np.asarray(body) > 127
    part_masks = [(np.asarray(im) > 127, key) for im, key in parts]
    for m, _ in part_masks:  # parts sit on top of the body
        body_mask &= ~m
    return body_mask, part_masks


def _texture(fill: np.ndarray, w: int, h: int, material: str | None, pattern: str | None, base: RGB) -> float:
    """Paint material and pattern onto `fill` (h x w x 3, the body color); return the body's opacity."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    alpha = 1.0
    if material == "wooden":  # grain: wavy darker lines
        period = 7.0
        wave = yy + 2.5 * np.sin(xx / 11.0 + 0.7 * (w % 7))
        fill[(wave % period) < 1.6] *= 0.62
    elif material == "metal":  # cylindrical shading with a bright specular band
        t = xx / max(1, w - 1)
        shade = 0.62 + 0.55 * np.exp(-(((t - 0.32) / 0.22) ** 2))
        fill *= shade[..., None]
        band = np.exp(-(((t - 0.3) / 0.06) ** 2))[..., None]
        fill += (255.0 - fill) * 0.55 * band
    elif material == "glass":  # lighter and see-through, with a highlight streak
        fill += (255.0 - fill) * 0.4
        alpha = 0.62
        streak = np.abs((xx - 0.22 * w) + 0.35 * (yy - 0.5 * h)) < max(1.5, 0.06 * w)
        fill[streak] = fill[streak] * 0.3 + 255.0 * 0.7
    elif material == "plastic":  # glossy: one soft white spot
        r2 = ((xx - 0.3 * w) / (0.16 * w + 1)) ** 2 + ((yy - 0.28 * h) / (0.16 * h + 1)) ** 2
        fill += (255.0 - fill) * (0.75 * np.exp(-r2 * 2.0))[..., None]
    if pattern in ("striped", "dotted", "checkered"):
        pc = np.array(_lighter(base, 0.65) if _luma(base) < 110 else _darker(base, 0.42), dtype=np.float32)
        p = float(np.clip(min(w, h) / 4.5, 6.0, 16.0))  # period: at least a few repeats on a small object
        if pattern == "striped":
            on = ((xx + yy) % p) < p * 0.45
        elif pattern == "dotted":
            row = np.floor(yy / p)
            cx = (np.floor((xx - (row % 2) * p / 2) / p) + 0.5) * p + (row % 2) * p / 2
            cy = (row + 0.5) * p
            on = (xx - cx) ** 2 + (yy - cy) ** 2 <= (0.27 * p) ** 2
        else:
            q = max(4.0, p * 0.6)
            on = ((np.floor(xx / q) + np.floor(yy / q)) % 2) == 1
        fill[on] = pc
    return alpha


def _draw_object(canvas: np.ndarray, obj: dict[str, Any]) -> None:
    H, W = canvas.shape[:2]
    x0, y0 = max(0, int(obj["x"])), max(0, int(obj["y"]))
    x1, y1 = min(W, int(obj["x"]) + int(obj["w"])), min(H, int(obj["y"]) + int(obj["h"]))
    w, h = x1 - x0, y1 - y0
    if w < 4 or h < 4:
        return
    attrs = obj.get("attributes", [])
    color = next((a for a in attrs if a in COLORS), "gray")
    base = COLORS[color]
    material = next((a for a in attrs if a in ("wooden", "metal", "glass", "plastic")), None)
    pattern = next((a for a in attrs if a in PATTERNS), None)
    body, parts = glyph_masks(obj["name"], w, h)
    fill = np.empty((h, w, 3), dtype=np.float32)
    fill[:] = base
    alpha = _texture(fill, w, h, material, pattern, base)
    region = canvas[y0:y1, x0:x1]
    blended = alpha * fill + (1.0 - alpha) * region
    region[body] = blended[body]
    union = body.copy()
    for m, key in parts:
        region[m] = _part_rgb(key, base, color)
        union |= m
    pad = np.pad(union, 1)
    inner = pad[1:-1, 1:-1] & pad[:-2, 1:-1] & pad[2:, 1:-1] & pad[1:-1, :-2] & pad[1:-1, 2:]
    edge = union & ~inner
    region[edge] = (150, 150, 150) if _luma(base) < 50 else (32, 32, 34)


def _background(graph: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    W, H = int(graph["width"]), int(graph["height"])
    objs = list(graph["objects"].values())
    by_name = {o["name"]: o for o in objs if o["name"] in STUFF_NAMES}
    outdoors = graph.get("location") == "outdoors" or "ground" in by_name or "sky" in by_name
    _, lower = STUFF["outdoors" if outdoors else "indoors"]
    horizon = int(np.clip(by_name[lower]["y"], 0, H)) if lower in by_name else H // 2

    def stuff_rgb(name: str, default: str) -> np.ndarray:
        attrs = by_name.get(name, {}).get("attributes", [])
        if not attrs and name == "sky":
            default = {"overcast": "gray", "cloudy": "white"}.get(graph.get("weather", ""), default)
        c = next((a for a in attrs if a in STUFF_RGB[name]), default)
        return np.array(STUFF_RGB[name][c], dtype=np.float32)

    canvas = np.empty((H, W, 3), dtype=np.float32)
    yy = np.arange(H, dtype=np.float32)[:, None, None]
    xx = np.arange(W, dtype=np.float32)[None, :, None]
    top, bot = canvas[:horizon], canvas[horizon:]
    if outdoors:
        sky = stuff_rgb("sky", "blue")
        t = yy[:horizon] / max(1, horizon)
        top[:] = sky * (0.86 + 0.14 * t) + (255.0 - sky) * 0.25 * t  # lighter toward the horizon
        sky_attrs = by_name.get("sky", {}).get("attributes", [])
        grey_sky = any(a in ("gray", "white") for a in sky_attrs)
        cloudy = grey_sky or graph.get("weather") in ("cloudy", "overcast")
        if cloudy:
            for _ in range(int(rng.integers(2, 5))):  # soft clouds
                cx, cy = rng.uniform(0, W), rng.uniform(0, max(1, horizon * 0.7))
                rx, ry = rng.uniform(40, 90), rng.uniform(12, 24)
                d = ((xx[0, :, 0][None, :] - cx) / rx) ** 2 + ((yy[:horizon, 0, 0][:, None] - cy) / ry) ** 2
                top += ((255.0 - top) * 0.5 * np.exp(-d * 1.5)[..., None]).astype(np.float32)
        ground = stuff_rgb("ground", "green")
        t = (yy[horizon:] - horizon) / max(1, H - horizon)
        bot[:] = ground * (0.85 + 0.2 * t)  # darker in the distance
        bot += rng.normal(0.0, 11.0, size=(H - horizon, W, 1)).astype(np.float32)  # grass / gravel grain
        bot += rng.normal(0.0, 4.0, size=(H - horizon, W, 3)).astype(np.float32)
    else:
        wall = stuff_rgb("wall", "white")
        top[:] = wall
        top += np.where((xx % 28) < 14, 4.0, -4.0).astype(np.float32)  # faint wallpaper bands
        top += rng.normal(0.0, 2.5, size=(horizon, W, 1)).astype(np.float32)
        floor = stuff_rgb("floor", "brown")
        bot[:] = floor
        fy = yy[horizon:] - horizon
        if "brown" in by_name.get("floor", {}).get("attributes", ["brown"]):  # planks
            plank = np.floor(fy / 22.0)
            bot += ((plank * 37.0) % 17.0 - 8.0).astype(np.float32)
            bot[((fy % 22.0) < 1.5)[:, 0, 0]] *= 0.7
        else:  # tiles
            grout = ((fy % 44.0) < 2.0) | ((xx % 44.0) < 2.0)
            bot[np.broadcast_to(grout[..., 0], bot.shape[:2])] *= 0.78
        bot += rng.normal(0.0, 3.0, size=(H - horizon, W, 1)).astype(np.float32)
        canvas[max(0, horizon - 3) : horizon] *= 0.6  # skirting board line
    return canvas


def render_scene(graph: dict[str, Any]) -> Image.Image:
    """Draw a GQA-format graph: textured background, then each foreground object in its box.

    A pure function of the graph, so equal graphs give equal images. The background's noise is seeded
    from the scene's size, location, weather and stuff only, so re-rendering a graph with a foreground
    object renamed or recolored changes pixels inside that object's box only (a true image edit)."""
    for key in ("width", "height", "objects"):
        if key not in graph:
            raise ValueError(f"scene graph has no {key!r}")
    scene_key = {
        "size": [graph["width"], graph["height"]],
        "location": graph.get("location"),
        "weather": graph.get("weather"),
        "stuff": sorted(
            [o["name"], o["x"], o["y"], o["w"], o["h"], sorted(o.get("attributes", []))]
            for o in graph["objects"].values()
            if o["name"] in STUFF_NAMES
        ),
    }
    rng = np.random.default_rng(zlib.crc32(orjson.dumps(scene_key, option=orjson.OPT_SORT_KEYS)))
    canvas = _background(graph, rng)
    objects = graph["objects"]
    fg = {oid: o for oid, o in objects.items() if o["name"] not in STUFF_NAMES}
    edges = [(oid, r) for oid, o in fg.items() for r in o.get("relations", [])]
    items = {oid for oid, r in edges if r["name"] == "on" and r["object"] in fg}
    # Far (higher bottom edge) first, items after the supports they rest on.
    for oid in sorted(fg, key=lambda k: (k in items, fg[k]["y"] + fg[k]["h"], k)):
        _draw_object(canvas, fg[oid])
    return Image.fromarray(np.clip(canvas + 0.5, 0, 255).astype(np.uint8), "RGB")


def build_demo_world(out_dir: Path, n_scenes: int = 40, seed: int = 0) -> DemoWorld:
    """Write the demo world's graphs (`demo_sceneGraphs.json`) and images (`images/<id>.jpg`)."""
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    graphs = generate_graphs(n_scenes, seed)
    images = out_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    for image_id, graph in graphs.items():
        render_scene(graph).save(images / f"{image_id}.jpg", "JPEG", quality=JPEG_QUALITY)
    scene_graphs = out_dir / "demo_sceneGraphs.json"
    scene_graphs.write_bytes(orjson.dumps(graphs, option=orjson.OPT_SORT_KEYS))
    n_obj = sum(len(g["objects"]) for g in graphs.values())
    n_rel = sum(len(o["relations"]) for g in graphs.values() for o in g["objects"].values())
    logger.info(
        "demo world (%s, seed %d): %d scenes, %d objects, %d relations in %.2fs -> %s",
        GENERATOR_VERSION,
        seed,
        n_scenes,
        n_obj,
        n_rel,
        time.perf_counter() - t0,
        out_dir,
    )
    return DemoWorld(scene_graphs=scene_graphs, images=images, n_scenes=n_scenes, seed=seed)
