"""The demo world's scene graphs: seeded planning and placement of objects, relations from their boxes.

`generate_graphs` is the graph half of the demo world (`core/demo/world.py`, whose docstring says what
a graph holds); the pictures are drawn from these graphs by `core/demo/render.py`. Kept apart from the
renderer because a graph never depends on pixels. Scene i is a pure function of (seed, i).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hardneg.core.demo.catalog import (
    BASE_SIZE,
    CHAIR_BACK,
    INDOOR_NAMES,
    MATERIALS,
    NAME_COLORS,
    ONABLE,
    OUTDOOR_NAMES,
    PAINT,
    PATTERNED_NAMES,
    PATTERNS,
    PLAIN_ONLY_MATERIALS,
    SIZE_SCALE,
    STUFF,
    STUFF_COLORS,
    STUFF_NAMES,
    SUPPORT_SEAT,
    WEATHER_BY_SKY,
)

IMAGE_ID_BASE = 2_400_000  # GQA-like numeric string ids
OBJECT_ID_BASE = 3_000_000

MIN_OBJECTS, MAX_OBJECTS = 5, 10  # foreground objects per scene
PLACE_TRIES = 150  # rejection-sampling draws per object before it is dropped
PAD = 6  # px kept free between foreground objects so boxes never overlap


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


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return str(options[int(rng.integers(len(options)))])


def _colors_for(name: str) -> tuple[str, ...]:
    return NAME_COLORS.get(name, tuple(PAINT))


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
