"""The demo world: deterministic, in GQA's format, and its images show what its graphs say."""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from PIL import Image

from hardneg.core.demo.catalog import BASE_SIZE, FOREGROUND_NAMES, PAINT, SIZE_SCALE, STUFF_NAMES
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import glyph_masks, render_scene
from hardneg.core.demo.world import DemoWorld, build_demo_world
from hardneg.core.words.attribute_table import AttributeTable

INVERSE = {
    "to the left of": "to the right of",
    "to the right of": "to the left of",
    "above": "below",
    "below": "above",
    "on": "under",
    "under": "on",
    "next to": "next to",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> DemoWorld:
    return build_demo_world(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def graphs(world: DemoWorld) -> dict[str, dict[str, Any]]:
    return orjson.loads(world.scene_graphs.read_bytes())


def _objects(graphs: dict[str, dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(iid, oid, o) for iid, g in graphs.items() for oid, o in g["objects"].items()]


def _center(o: dict[str, Any]) -> tuple[float, float]:
    return o["x"] + o["w"] / 2, o["y"] + o["h"] / 2


def test_world_paths_and_fields(world: DemoWorld, tmp_path: Path) -> None:
    assert world.n_scenes == 40 and world.seed == 0
    assert world.scene_graphs.name == "demo_sceneGraphs.json" and world.scene_graphs.is_file()
    assert world.images == world.scene_graphs.parent / "images" and world.images.is_dir()
    with pytest.raises(dataclasses.FrozenInstanceError):
        world.seed = 1  # type: ignore[misc]


def test_same_seed_same_bytes_other_seed_other_world(tmp_path: Path) -> None:
    a = build_demo_world(tmp_path / "a", n_scenes=6, seed=3)
    b = build_demo_world(tmp_path / "b", n_scenes=6, seed=3)
    c = build_demo_world(tmp_path / "c", n_scenes=6, seed=4)
    assert a.scene_graphs.read_bytes() == b.scene_graphs.read_bytes()
    jpgs = sorted(p.name for p in a.images.glob("*.jpg"))
    assert len(jpgs) == 6 and jpgs == sorted(p.name for p in b.images.glob("*.jpg"))
    for name in jpgs:
        assert (a.images / name).read_bytes() == (b.images / name).read_bytes(), name
    assert a.scene_graphs.read_bytes() != c.scene_graphs.read_bytes()
    assert (a.images / jpgs[0]).read_bytes() != (c.images / jpgs[0]).read_bytes()


def test_smaller_world_is_a_prefix_of_a_larger_one() -> None:
    small, large = generate_graphs(5, seed=7), generate_graphs(9, seed=7)
    assert small == {k: large[k] for k in small}


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    for n in (0, -1, 2.5):
        with pytest.raises(ValueError, match="n_scenes"):
            generate_graphs(n)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        build_demo_world(tmp_path, n_scenes=2, seed=-1)


def test_gqa_format(world: DemoWorld, graphs: dict[str, dict[str, Any]]) -> None:
    table = AttributeTable.load()
    assert len(graphs) == 40
    all_ids = [oid for _, oid, _ in _objects(graphs)]
    assert len(all_ids) == len(set(all_ids)), "object ids must be unique across the world"
    optional = Counter()
    for iid, g in graphs.items():
        assert iid.isdigit() and all(oid.isdigit() for oid in g["objects"])
        assert set(g) <= {"width", "height", "location", "weather", "objects"}
        optional.update(k for k in ("location", "weather") if k in g)
        assert isinstance(g["width"], int) and isinstance(g["height"], int)
        assert g["width"] > 0 and g["height"] > 0
        assert g.get("location", "indoors") in ("indoors", "outdoors")
        assert isinstance(g["objects"], dict) and g["objects"]
        for oid, o in g["objects"].items():
            assert set(o) == {"name", "x", "y", "w", "h", "attributes", "relations"}
            assert isinstance(o["name"], str)
            assert all(isinstance(o[k], int) for k in "xywh")
            assert o["w"] > 0 and o["h"] > 0
            assert o["x"] >= 0 and o["y"] >= 0
            assert o["x"] + o["w"] <= g["width"] and o["y"] + o["h"] <= g["height"]
            assert isinstance(o["attributes"], list) and o["attributes"]
            for a in o["attributes"]:
                assert table.category(a) is not None, f"{a!r} is not in the attribute table"
            assert isinstance(o["relations"], list)
            pairs = [(r["name"], r["object"]) for r in o["relations"]]
            assert len(pairs) == len(set(pairs)), f"duplicate relation on {oid}"
            for r in o["relations"]:
                assert set(r) == {"name", "object"}
                assert r["object"] in g["objects"], f"{oid} points at missing {r['object']}"
                assert r["object"] != oid, f"self-relation on {oid}"
        with Image.open(world.images / f"{iid}.jpg") as im:
            im.load()
            assert im.format == "JPEG" and im.mode == "RGB"
            assert im.size == (g["width"], g["height"])
    # The optional keys are exercised both ways.
    assert 0 < optional["location"] < 40 and 0 < optional["weather"] < 40


def test_attributes_every_object_carries(graphs: dict[str, dict[str, Any]]) -> None:
    table = AttributeTable.load()
    for _, oid, o in _objects(graphs):
        cats = Counter(table.category(a) for a in o["attributes"])
        assert cats["color"] == 1, (oid, o["attributes"])
        if o["name"] in STUFF_NAMES:
            assert o["attributes"] == [a for a in o["attributes"] if table.category(a) == "color"]
        else:
            assert cats["size"] == 1, (oid, o["attributes"])
            assert all(v == 1 for v in cats.values()), (oid, o["attributes"])
    names = {o["name"] for _, _, o in _objects(graphs)}
    assert set(FOREGROUND_NAMES) <= names
    assert {"ground", "floor"} <= names


def test_relations_are_stored_both_ways(graphs: dict[str, dict[str, Any]]) -> None:
    n = 0
    for _iid, g in graphs.items():
        objs = g["objects"]
        for oid, o in objs.items():
            for r in o["relations"]:
                assert r["name"] in INVERSE, r["name"]
                back = {"name": INVERSE[r["name"]], "object": oid}
                assert back in objs[r["object"]]["relations"], (oid, r)
                n += 1
    assert n >= 1500, f"only {n} relations in 40 scenes"


def test_relations_agree_with_geometry(graphs: dict[str, dict[str, Any]]) -> None:
    seen = Counter()
    for g in graphs.values():
        objs = g["objects"]
        for oid, a in objs.items():
            for r in a["relations"]:
                b = objs[r["object"]]
                (ax, ay), (bx, by) = _center(a), _center(b)
                seen[r["name"]] += 1
                if r["name"] == "to the left of":
                    assert ax < bx, (oid, r)
                elif r["name"] == "to the right of":
                    assert ax > bx, (oid, r)
                elif r["name"] == "above":
                    assert ay < by and a["y"] + a["h"] <= b["y"] + 0.1 * min(a["h"], b["h"]), (oid, r)
                elif r["name"] == "below":
                    assert ay > by, (oid, r)
                elif r["name"] == "next to":
                    gap = max(b["x"] - (a["x"] + a["w"]), a["x"] - (b["x"] + b["w"]))
                    assert 0 <= gap <= 0.1 * g["width"], (oid, r)
                elif r["name"] == "on":
                    bottom = a["y"] + a["h"]
                    overlap = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
                    assert overlap >= 0.8 * a["w"], (oid, r)
                    if b["name"] in STUFF_NAMES:  # standing on the ground/floor
                        assert b["y"] <= bottom <= b["y"] + b["h"], (oid, r)
                    else:  # resting on the top of a box or the seat of a chair
                        assert b["y"] <= bottom <= b["y"] + 0.55 * b["h"], (oid, r)
                        assert a["name"] not in STUFF_NAMES
    for name in INVERSE:
        assert seen[name] > 0, f"no {name!r} relation in the world"
    on_fg = sum(
        1
        for g in graphs.values()
        for o in g["objects"].values()
        for r in o["relations"]
        if r["name"] == "on" and g["objects"][r["object"]]["name"] not in STUFF_NAMES
    )
    assert on_fg >= 10, "too few objects resting on other objects"


def test_foreground_boxes_do_not_overlap_except_on_pairs(graphs: dict[str, dict[str, Any]]) -> None:
    for g in graphs.values():
        fg = {oid: o for oid, o in g["objects"].items() if o["name"] not in STUFF_NAMES}
        on = {(oid, r["object"]) for oid, o in fg.items() for r in o["relations"] if r["name"] == "on"}
        ids = sorted(fg)
        for i, p in enumerate(ids):
            for q in ids[i + 1 :]:
                a, b = fg[p], fg[q]
                ix = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
                iy = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
                if ix > 0 and iy > 0:
                    assert (p, q) in on or (q, p) in on, (p, q)


@pytest.mark.parametrize("name", FOREGROUND_NAMES)
def test_glyph_fills_its_box_tightly(name: str) -> None:
    bw, bh = BASE_SIZE[name]
    for scale in (SIZE_SCALE["small"][0], 1.0, SIZE_SCALE["large"][1]):
        w, h = round(bw * scale), round(bh * scale)
        if name == "flower":
            h = max(h, w + 6)
        body, parts = glyph_masks(name, w, h)
        assert body.shape == (h, w) and body.any()
        union = body.copy()
        for m, _ in parts:
            union |= m
        rows, cols = np.flatnonzero(union.any(axis=1)), np.flatnonzero(union.any(axis=0))
        assert (rows[0], rows[-1], cols[0], cols[-1]) == (0, h - 1, 0, w - 1), (name, w, h)
        assert union.mean() > 0.25, f"{name} glyph is mostly empty"


def _region_stats(world: DemoWorld, graphs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean RGB and luma spread over the central half of every foreground box, read from the JPEGs."""
    out = []
    for iid, g in graphs.items():
        with Image.open(world.images / f"{iid}.jpg") as im:
            px = np.asarray(im.convert("RGB"), dtype=np.float32)
        for oid, o in g["objects"].items():
            if o["name"] in STUFF_NAMES:
                continue
            x0, y0 = o["x"] + o["w"] // 4, o["y"] + o["h"] // 4
            x1, y1 = o["x"] + (3 * o["w"]) // 4, o["y"] + (3 * o["h"]) // 4
            crop = px[y0:y1, x0:x1]
            luma = crop @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
            mean = crop.reshape(-1, 3).mean(axis=0)
            out.append({"id": oid, "obj": o, "mean": mean, "std": float(luma.std())})
    return out


# Names whose box center is body (takes the object's color), not a trunk, stem or empty space.
SOLID_NAMES = ("ball", "box", "book", "cup", "bottle")
COLOR_CHECKS = {
    "red": lambda r, g, b: r > g + 60 and r > b + 60,
    "green": lambda r, g, b: g > r + 40 and g > b + 40,
    "blue": lambda r, g, b: b > r + 60 and b > g + 40,
    "yellow": lambda r, g, b: min(r, g) > b + 80,
    "white": lambda r, g, b: min(r, g, b) > 170,
    "black": lambda r, g, b: max(r, g, b) < 90,
}


def test_rendered_colors_match_the_graph(world: DemoWorld, graphs: dict[str, dict[str, Any]]) -> None:
    checked = Counter()
    for s in _region_stats(world, graphs):
        o = s["obj"]
        attrs = set(o["attributes"])
        if o["name"] not in SOLID_NAMES or attrs & {"striped", "dotted", "checkered", "glass"}:
            continue
        for color, ok in COLOR_CHECKS.items():
            if color in attrs:
                r, g, b = (float(v) for v in s["mean"])
                assert ok(r, g, b), f"{s['id']} {o['attributes']} renders as mean RGB {(r, g, b)}"
                checked[color] += 1
    assert sum(checked.values()) >= 25 and len(checked) >= 5, checked


def test_rendered_patterns_are_visible(world: DemoWorld, graphs: dict[str, dict[str, Any]]) -> None:
    patterned, plain = [], []
    for s in _region_stats(world, graphs):
        attrs = set(s["obj"]["attributes"])
        if s["obj"]["name"] not in ("ball", "book", "box", "cup"):
            continue
        if attrs & {"striped", "dotted", "checkered"}:
            patterned.append(s["std"])
        elif "plain" in attrs and not attrs & {"wooden", "metal", "glass", "plastic"}:
            plain.append(s["std"])
    assert len(patterned) >= 10 and len(plain) >= 5
    assert min(patterned) > 2 * max(plain), (min(patterned), max(plain))


def test_large_objects_are_drawn_larger(graphs: dict[str, dict[str, Any]]) -> None:
    areas: dict[tuple[str, str], list[int]] = defaultdict(list)
    for _, _, o in _objects(graphs):
        for size in ("small", "large"):
            if size in o["attributes"]:
                areas[(o["name"], size)].append(o["w"] * o["h"])
    compared = 0
    for name in FOREGROUND_NAMES:
        small, large = areas.get((name, "small")), areas.get((name, "large"))
        if small and large:
            assert np.mean(large) > 2 * np.mean(small), name
            assert min(large) > max(small), name
            compared += 1
    assert compared >= 8


def test_enough_repetition_for_every_difficulty(graphs: dict[str, dict[str, Any]]) -> None:
    repeated = once = shared_color = identical_twins = told_by_attribute = 0
    for g in graphs.values():
        fg = [o for o in g["objects"].values() if o["name"] not in STUFF_NAMES]
        counts = Counter(o["name"] for o in fg)
        repeated += any(c > 1 for c in counts.values())
        once += any(c == 1 for c in counts.values())
        colors = defaultdict(set)
        for o in fg:
            for a in set(o["attributes"]) & set(PAINT):
                colors[a].add(o["name"])
        shared_color += any(len(names) > 1 for names in colors.values())
        by_name = defaultdict(list)
        for o in fg:
            by_name[o["name"]].append(sorted(o["attributes"]))
        identical_twins += any(len(v) != len({tuple(a) for a in v}) for v in by_name.values())
        distinct = [len(v) > 1 and len({tuple(a) for a in v}) == len(v) for v in by_name.values()]
        told_by_attribute += any(distinct)
    assert repeated >= 25, repeated
    assert once >= 30, once
    assert shared_color >= 25, shared_color
    assert identical_twins >= 3, identical_twins  # only relations tell them apart
    assert told_by_attribute >= 10, told_by_attribute


def test_render_scene_is_a_pure_function_of_the_graph() -> None:
    graph = generate_graphs(1, seed=11)["2400000"]
    a, b = render_scene(graph), render_scene(graph)
    assert a.size == (graph["width"], graph["height"])
    assert np.array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="objects"):
        render_scene({"width": 10, "height": 10})


def test_rerendering_an_edited_graph_changes_only_the_edited_box() -> None:
    graph = generate_graphs(3, seed=2)["2400002"]
    before = np.asarray(render_scene(graph), dtype=np.int16)
    edited = copy.deepcopy(graph)
    oid, obj = next((k, o) for k, o in edited["objects"].items() if o["name"] not in STUFF_NAMES)
    old = next(a for a in obj["attributes"] if a in PAINT)
    obj["attributes"] = [("blue" if old != "blue" else "red") if a == old else a for a in obj["attributes"]]
    after = np.asarray(render_scene(edited), dtype=np.int16)
    changed = np.abs(after - before).sum(axis=2) > 0
    inside = np.zeros_like(changed)
    inside[obj["y"] : obj["y"] + obj["h"], obj["x"] : obj["x"] + obj["w"]] = True
    assert changed[inside].mean() > 0.2, f"recoloring {oid} barely shows"
    assert not changed[~inside].any(), "pixels outside the edited box changed"


def test_the_demo_paint_reads_as_the_colour_it_names() -> None:
    """The demo draws with its own RGB values (its images must not change), a few units off the colour
    table's references; the table's range rule must still read each as the colour the graph names."""
    from hardneg.core import colors

    for name, rgb in PAINT.items():
        assert colors.in_range(colors.to_lab(np.array([rgb], np.uint8)), name)[0], name
