"""The demo world's pictures: `render_scene` draws a GQA-format graph, `glyph_masks` one object's shape.

The image half of the demo world (`core/demo/world.py`): a textured background from the graph's stuff,
location and weather, then every foreground object as a glyph filling its box, with its color, pattern
and material visible. Kept apart from graph generation (`core/demo/graphs.py`): it reads any GQA-format
graph (a real one or an edited one too), not only the demo world's.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import orjson
from PIL import Image, ImageDraw

from hardneg.core.demo.catalog import (
    CHAIR_BACK,
    PAINT,
    PATTERNS,
    RGB,
    STUFF,
    STUFF_NAMES,
    STUFF_RGB,
    SUPPORT_SEAT,
)

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
    color = next((a for a in attrs if a in PAINT), "gray")
    base = PAINT[color]
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
