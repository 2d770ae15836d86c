"""`OpenCVInpainter` on demo-world images: real edits, exact paste-back, seeded candidates."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("cv2", reason="OpenCV not installed (pip install opencv-python-headless)")

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.core.colors import COLORS
from hardneg.core.demo.catalog import STUFF_NAMES
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import glyph_masks, render_scene

Box = tuple[int, int, int, int]
BLUE_HUE_DEG = 226.0  # hue of COLORS["blue"] (40, 80, 210)


@pytest.fixture(scope="module")
def world() -> dict[str, dict[str, Any]]:
    return generate_graphs(12, seed=0)


def box_of(obj: dict[str, Any]) -> Box:
    return (obj["x"], obj["y"], obj["w"], obj["h"])


def find(world: dict[str, dict[str, Any]], want: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first (graph, object) whose object satisfies `want`."""
    for graph in world.values():
        for obj in graph["objects"].values():
            if obj["name"] not in STUFF_NAMES and want(obj):
                return graph, obj
    raise AssertionError("the demo world has no such object; change the seed")


def plain_red(obj: dict[str, Any]) -> bool:
    attrs = obj["attributes"]
    return "red" in attrs and "glass" not in attrs and min(obj["w"], obj["h"]) >= 30


def body_mask(graph: dict[str, Any], obj: dict[str, Any]) -> np.ndarray:
    """The pixels that carry `obj`'s colour in the rendered image (the demo's own glyph), image-sized."""
    body, _ = glyph_masks(obj["name"], obj["w"], obj["h"])
    full = np.zeros((graph["height"], graph["width"]), bool)
    full[obj["y"] : obj["y"] + obj["h"], obj["x"] : obj["x"] + obj["w"]] = body
    return full


def outside(shape: tuple[int, int], boxes: list[Box], grow: int) -> np.ndarray:
    keep = np.ones(shape, bool)
    for x, y, w, h in boxes:
        keep[max(0, y - grow) : y + h + grow, max(0, x - grow) : x + w + grow] = False
    return keep


def hue_deg(img: Image.Image, mask: np.ndarray) -> np.ndarray:
    """HSV hue in degrees of the saturated pixels under `mask`."""
    import cv2

    hsv = cv2.cvtColor(np.asarray(img), cv2.COLOR_RGB2HSV_FULL).astype(np.float32)
    sel = mask & (hsv[..., 1] > 60)
    return hsv[..., 0][sel] * 360.0 / 256.0


def circular_mean(deg: np.ndarray) -> float:
    rad = np.radians(deg)
    return float(np.degrees(np.arctan2(np.sin(rad).mean(), np.cos(rad).mean())) % 360.0)


def angle_gap(a: float, b: float) -> float:
    return abs((a - b + 180.0) % 360.0 - 180.0)


def test_recolor_moves_hue_to_target_and_keeps_outside(world: dict[str, dict[str, Any]]) -> None:
    graph, obj = find(world, plain_red)
    src = render_scene(graph)
    inp = OpenCVInpainter()
    job = InpaintJob("neg-recolor", src, (EditRegion(box_of(obj), "recolor", f"a blue {obj['name']}", "blue"),), 4, 7)
    cands = inp.run([job])[0]

    assert len(cands) == 4
    body = body_mask(graph, obj)
    before = hue_deg(src, body)
    assert angle_gap(circular_mean(before), 0.0) < 20, "the chosen object should start red"
    keep = outside((src.height, src.width), [box_of(obj)], inp.dilate_px)
    for cand in cands:
        assert cand.size == src.size and cand.mode == "RGB"
        after = hue_deg(cand, body)
        assert angle_gap(circular_mean(after), BLUE_HUE_DEG) < 25  # purple is 55 degrees away
        assert np.mean([angle_gap(h, BLUE_HUE_DEG) < 30 for h in after]) > 0.8  # most of the body, not a patch
        assert np.array_equal(np.asarray(cand)[keep], np.asarray(src)[keep])
    arrays = [np.asarray(c) for c in cands]
    for i in range(len(arrays)):
        for j in range(i + 1, len(arrays)):
            assert not np.array_equal(arrays[i], arrays[j]), f"candidates {i} and {j} are identical"
    again = OpenCVInpainter().run([job])[0]
    assert [c.tobytes() for c in again] == [c.tobytes() for c in cands]


def test_a_recolour_asked_again_of_one_object_is_judged_once(world, monkeypatch) -> None:
    """A search asks whether one object can be recoloured for every colour it tries, and again in later
    rounds: the verdict of (object, old colour, new colour) is made once, the same each time it is asked."""
    from hardneg.core.pixels import recolour as dye

    graph, obj = find(world, plain_red)
    src, inp, made = render_scene(graph), OpenCVInpainter(), []
    judge = dye.refusal
    monkeypatch.setattr(dye, "refusal", lambda *a: made.append(a[2:]) or judge(*a))
    blue, green = (EditRegion(box_of(obj), "recolor", "", c, source_color="red") for c in ("blue", "green"))
    first = [inp.refusal(src, r) for r in (blue, green, blue, green, blue)]
    assert first[0::2] == [first[0]] * 3 and first[1::2] == [first[1]] * 2
    assert made == [("red", "blue"), ("red", "green")]
    assert OpenCVInpainter().refusal(src, blue) == first[0]  # what a fresh backend says


def test_each_photo_asked_about_gets_its_own_verdict(world) -> None:
    """The backend keeps the last photo it read (a search asks about one photo many times in a row): another
    photo asked in between, even one like it, is read afresh, and the first one asked again is the first."""
    graph, obj = find(world, plain_red)
    src = render_scene(graph)
    other = src.copy()
    x, y, w, h = box_of(obj)
    other.paste((40, 160, 60), (x, y, x + w, y + h))  # the red object is green in this one
    inp, blue = OpenCVInpainter(), EditRegion(box_of(obj), "recolor", "", "blue", source_color="red")
    asked = [inp.refusal(im, blue) for im in (src, other, src, other)]
    assert asked == [OpenCVInpainter().refusal(im, blue) for im in (src, other, src, other)]
    assert asked[0] != asked[1]


def test_recolor_other_parts_keep_their_colour(world: dict[str, dict[str, Any]]) -> None:
    graph, obj = find(world, lambda o: o["name"] == "flower" and "red" in o["attributes"] and o["w"] >= 30)
    src = render_scene(graph)
    cand = OpenCVInpainter().run([InpaintJob("k", src, (EditRegion(box_of(obj), "recolor", "", "blue"),), 1, 0)])[0][0]
    _, parts = glyph_masks(obj["name"], obj["w"], obj["h"])
    centre = next(m for m, key in parts if key == "center")
    x, y, w, h = box_of(obj)
    diff = np.abs(np.asarray(cand, np.int16) - np.asarray(src, np.int16))[y : y + h, x : x + w].max(axis=2)
    assert np.median(diff[centre]) == 0, "the yellow centre of a red flower is not the colour to change"


def test_replace_with_donor(world: dict[str, dict[str, Any]]) -> None:
    graph, obj = find(world, plain_red)
    src = render_scene(graph)
    donor_graph, donor_obj = find(world, lambda o: o["name"] == "ball" and o["w"] >= 30)
    dx, dy, dw, dh = box_of(donor_obj)
    donor = render_scene(donor_graph).crop((dx, dy, dx + dw, dy + dh))
    region = EditRegion(box_of(obj), "replace", "a ball", donor=donor)
    inp = OpenCVInpainter()
    cands = inp.run([InpaintJob("neg-replace", src, (region,), 3, 1)])[0]

    x, y, w, h = box_of(obj)
    keep = outside((src.height, src.width), [box_of(obj)], inp.dilate_px)
    for cand in cands:
        inside = np.abs(np.asarray(cand, np.int16) - np.asarray(src, np.int16))[y : y + h, x : x + w]
        assert (inside.max(axis=2) > 30).mean() > 0.3
        assert np.array_equal(np.asarray(cand)[keep], np.asarray(src)[keep])
    assert not np.array_equal(np.asarray(cands[0]), np.asarray(cands[1]))


def test_remove_fills_with_background(world: dict[str, dict[str, Any]]) -> None:
    graph, obj = find(world, plain_red)
    src = render_scene(graph)
    inp = OpenCVInpainter()
    cands = inp.run([InpaintJob("neg-remove", src, (EditRegion(box_of(obj), "remove", "floor"),), 3, 2)])[0]

    ring = ~outside((src.height, src.width), [box_of(obj)], 16) & outside((src.height, src.width), [box_of(obj)], 8)
    body = body_mask(graph, obj)
    ring_mean = np.asarray(src, np.float32)[ring].mean(axis=0)

    def dist(img: Image.Image) -> float:
        return float(np.abs(np.asarray(img, np.float32)[body] - ring_mean).mean())

    keep = outside((src.height, src.width), [box_of(obj)], inp.dilate_px)
    for cand in cands:
        assert dist(cand) < 0.5 * dist(src)
        assert np.array_equal(np.asarray(cand)[keep], np.asarray(src)[keep])


def test_swap_changes_both_regions(world: dict[str, dict[str, Any]]) -> None:
    graph, a = find(world, plain_red)
    b = next(
        o
        for o in graph["objects"].values()
        if o["name"] not in STUFF_NAMES and o is not a and "red" not in o["attributes"] and min(o["w"], o["h"]) >= 20
    )
    color_b = next(c for c in b["attributes"] if c in COLORS)
    src = render_scene(graph)
    regions = (EditRegion(box_of(a), "recolor", "", color_b), EditRegion(box_of(b), "recolor", "", "red"))
    inp = OpenCVInpainter()
    cand = inp.run([InpaintJob("neg-swap", src, regions, 2, 3)])[0][0]

    diff = np.abs(np.asarray(cand, np.int16) - np.asarray(src, np.int16)).max(axis=2)
    for obj in (a, b):
        assert (diff[body_mask(graph, obj)] > 20).mean() > 0.5, f"{obj['name']} did not change"
    keep = outside((src.height, src.width), [box_of(a), box_of(b)], inp.dilate_px)
    assert not diff[keep].any()


def test_supports() -> None:
    inp = OpenCVInpainter()
    box = (10, 10, 20, 20)
    assert inp.supports(EditRegion(box, "recolor", "", "blue"))
    assert inp.supports(EditRegion(box, "recolor", "", " Grey "))
    # a shade word cannot be verified in the pixels (light blue and blue are one colour term): not painted
    assert not inp.supports(EditRegion(box, "recolor", "", "Light Blue "))
    assert not inp.supports(EditRegion(box, "recolor", "", "sparkly"))
    assert not inp.supports(EditRegion(box, "recolor", "", "dark"))  # not one colour
    assert not inp.supports(EditRegion(box, "recolor", "", None))
    assert not inp.supports(EditRegion(box, "replace", "a wooden cup"))
    assert inp.supports(EditRegion(box, "replace", "a cup", donor=Image.new("RGB", (8, 8))))
    assert inp.supports(EditRegion(box, "remove", ""))
    img = Image.new("RGB", (64, 64), (90, 120, 150))
    with pytest.raises(ValueError, match="cannot replace"):
        inp.run([InpaintJob("k", img, (EditRegion(box, "replace", "a wooden cup"),), 1, 0)])


def test_boxes_are_clipped_and_empty_boxes_rejected(world: dict[str, dict[str, Any]]) -> None:
    graph, obj = find(world, plain_red)
    src = render_scene(graph)
    inp = OpenCVInpainter()
    x, y, w, h = box_of(obj)
    spill = (x, y, src.width, src.height)  # spills past the right and bottom edges
    cand = inp.run([InpaintJob("k", src, (EditRegion(spill, "recolor", "", "green"),), 1, 0)])[0][0]
    assert cand.size == src.size
    assert inp.run([InpaintJob("k", src, (EditRegion((x, y, w, h), "remove", ""),), 0, 0)]) == [[]]
    with pytest.raises(ValueError, match="empty"):
        inp.run([InpaintJob("k", src, (EditRegion((src.width + 5, 0, 10, 10), "remove", ""),), 1, 0)])


def test_throughput_is_logged(world: dict[str, dict[str, Any]]) -> None:
    """Candidates per second on CPU (printed with -s); recorded, not asserted."""
    jobs = []
    for graph in list(world.values())[:4]:
        src = render_scene(graph)
        objs = [o for o in graph["objects"].values() if o["name"] not in STUFF_NAMES]
        jobs.append(
            InpaintJob(f"{graph['width']}-rc", src, (EditRegion(box_of(objs[0]), "recolor", "", "blue"),), 5, 0)
        )
        jobs.append(InpaintJob(f"{graph['width']}-rm", src, (EditRegion(box_of(objs[1]), "remove", ""),), 5, 0))
    t0 = time.perf_counter()
    out = OpenCVInpainter().run(jobs)
    dt = time.perf_counter() - t0
    n = sum(len(c) for c in out)
    assert n == sum(j.n for j in jobs)
    print(f"\nopencv inpaint: {n} candidates in {dt:.2f}s = {n / dt:.1f} candidates/s")
