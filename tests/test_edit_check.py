"""The edit checks (filters/scorers/edit_check.py) on small drawn scenes: a convincing edit passes, the artifacts the
offline backend leaves on real photos (speckled recolours, smooth blobs, pasted rectangles, kept parts of
the original) fail with a reason naming the check, and a change of thresholds re-decides without scoring."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

pytest.importorskip("cv2", reason="OpenCV not installed (pip install opencv-python-headless)")

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.core import colors
from hardneg.core.colors import COLORS
from hardneg.core.errors import ConfigError
from hardneg.filters.base import Item
from hardneg.filters.decide import Rule, decide_image
from hardneg.filters.registry import build, filter_class, thresholds
from hardneg.filters.scorers.edit_check import EditCheckFilter, EditThresholds
from tests.helpers import image_negative_row

Box = tuple[int, int, int, int]
W, H = 160, 120


def noise(seed: int, base: tuple[int, int, int], amp: int, size: tuple[int, int] = (W, H)) -> np.ndarray:
    """A uniform colour with per-pixel noise of +-amp: grain, grass or fabric at this scale."""
    rng = np.random.default_rng(seed)
    arr = np.array(base, np.int16) + rng.integers(-amp, amp + 1, (size[1], size[0], 3))
    return np.clip(arr, 0, 255).astype(np.uint8)


def textured(seed: int = 0) -> np.ndarray:
    """A coarse texture (blotches 3 px wide) over mid brown: a gravel path."""
    rng = np.random.default_rng(seed)
    small = rng.integers(60, 200, (H // 3 + 1, W // 3 + 1), dtype=np.uint8)
    grain = np.kron(small, np.ones((3, 3), np.uint8))[:H, :W].astype(np.int16)
    arr = np.stack([grain + 20, grain, grain - 30], axis=2)
    return np.clip(arr, 0, 255).astype(np.uint8)


def image(arr: np.ndarray) -> Image.Image:
    return Image.fromarray(arr, "RGB")


def item(
    source: Image.Image, candidate: Image.Image, edit: dict[str, Any], boxes: tuple[Box, ...], nid: int = 1
) -> Item:
    return Item(nid, "image_candidate", image_negative_row(edit), "the thing", source, candidate=candidate, boxes=boxes)


def scores_of(*items: Item) -> list[dict[str, float]]:
    return EditCheckFilter().score(items)


def keep(scores: dict[str, float]) -> tuple[bool, str | None]:
    return EditCheckFilter.keep(scores, EditThresholds())


def run_backend(source: Image.Image, *regions: EditRegion, n: int = 1) -> list[Image.Image]:
    return OpenCVInpainter().run([InpaintJob("test", source, tuple(regions), n, 0)])[0]


# -- recolour ---------------------------------------------------------------------------------------------


def bowl_scene() -> tuple[Image.Image, Box]:
    """A white bowl (an ellipse with a little grain) on a brown table."""
    arr = noise(1, (120, 80, 50), 6)
    im = image(arr)
    ImageDraw.Draw(im).ellipse((50, 40, 110, 85), fill=(236, 236, 232))
    return im, (46, 36, 68, 54)


def test_a_full_recolour_passes_and_specks_only_fail() -> None:
    source, box = bowl_scene()
    edit = {"op": "set_attribute", "object": "1", "from": "white", "to": "red"}
    full = run_backend(source, EditRegion(box, "recolor", "a red bowl", color="red", source_color="white"))[0]
    specks = np.asarray(source).copy()
    bowl = colors.in_range(colors.to_lab(specks), "white")
    ys, xs = np.nonzero(bowl)
    pick = np.random.default_rng(0).choice(len(ys), size=len(ys) // 12, replace=False)
    specks[ys[pick], xs[pick]] = COLORS["red"]  # a few red specks on a white bowl
    s_full, s_specks = scores_of(item(source, full, edit, (box,)), item(source, image(specks), edit, (box,)))
    assert s_full["recolor_hit"] > 0.8 and s_full["recolor_left"] < 0.1
    assert keep(s_full) == (True, None)
    assert s_specks["recolor_hit"] < 0.2 and s_specks["recolor_left"] > 0.8
    ok, why = keep(s_specks)
    assert not ok and why is not None and why.startswith("recolour:") and "now have the new colour" in why


def test_swap_of_colours_checks_each_object_its_own_way() -> None:
    """swap_attributes {"from": [A1, A2]}: object 1 goes A1 -> A2, object 2 A2 -> A1."""
    arr = noise(3, (128, 128, 128), 4)
    im = image(arr)
    draw = ImageDraw.Draw(im)
    draw.ellipse((10, 30, 60, 80), fill=COLORS["red"])
    draw.ellipse((95, 30, 145, 80), fill=COLORS["blue"])
    a, b = (6, 26, 58, 58), (91, 26, 58, 58)
    edit = {"op": "swap_attributes", "objects": ["1", "2"], "from": ["red", "blue"]}
    regions = (
        EditRegion(a, "recolor", "a blue ball", color="blue", source_color="red"),
        EditRegion(b, "recolor", "a red ball", color="red", source_color="blue"),
    )
    swapped = run_backend(im, *regions)[0]
    only_one = run_backend(im, regions[0])[0]
    s_swap, s_one = scores_of(item(im, swapped, edit, (a, b)), item(im, only_one, edit, (a, b)))
    assert keep(s_swap) == (True, None), s_swap
    assert s_one["recolor_hit"] < 0.1  # the worst region decides: the blue ball never turned red
    assert not keep(s_one)[0]


def test_a_non_colour_attribute_gets_no_recolour_score() -> None:
    source, box = bowl_scene()
    edit = {"op": "set_attribute", "object": "1", "from": "plastic", "to": "wooden"}
    (s,) = scores_of(item(source, source.copy(), edit, (box,)))
    assert "recolor_hit" not in s and "trace" not in s and set(s) == {"smear", "paste_edge"}


# -- removal ----------------------------------------------------------------------------------------------


def test_a_smooth_blob_on_texture_fails_and_a_small_removal_on_a_flat_wall_passes() -> None:
    path = image(textured(4))
    ImageDraw.Draw(path).rectangle((50, 30, 110, 90), fill=(200, 40, 40))  # a big red crate on gravel
    crate: Box = (50, 30, 61, 61)
    blob = run_backend(path, EditRegion(crate, "remove", "gravel"))[0]

    wall = image(noise(5, (200, 196, 186), 2))
    ImageDraw.Draw(wall).ellipse((74, 54, 86, 66), fill=(40, 40, 45))  # a small dark hook on a plain wall
    hook: Box = (73, 53, 14, 14)
    clean = run_backend(wall, EditRegion(hook, "remove", "wall"))[0]

    edit = {"op": "remove", "object": "1"}
    s_blob, s_clean = scores_of(item(path, blob, edit, (crate,), 1), item(wall, clean, edit, (hook,), 2))
    assert s_blob["smear"] > 0.6
    ok, why = keep(s_blob)
    assert not ok and why is not None and "smear:" in why
    assert s_clean["smear"] < 0.1 and s_clean["trace"] < 0.2 and s_clean["fill_mismatch"] < 0.1
    assert keep(s_clean) == (True, None), s_clean


# -- replacement ------------------------------------------------------------------------------------------


def donor_ball() -> tuple[np.ndarray, np.ndarray]:
    """A green ball on a light-blue backdrop (its crop's background), and its soft mask."""
    d = np.zeros((40, 40, 3), np.uint8)
    d[:] = (170, 200, 235)
    im = image(d)
    ImageDraw.Draw(im).ellipse((4, 4, 36, 36), fill=(40, 140, 60))
    mask = Image.new("L", (40, 40), 0)
    ImageDraw.Draw(mask).ellipse((4, 4, 36, 36), fill=255)
    import cv2

    alpha = cv2.GaussianBlur(np.asarray(mask, np.float32) / 255.0, (0, 0), 1.2)
    return np.asarray(im), alpha


def test_a_pasted_rectangle_fails_and_a_masked_feathered_paste_passes() -> None:
    background = noise(6, (150, 150, 140), 5)
    source = image(background.copy())
    ImageDraw.Draw(source).ellipse((60, 40, 100, 80), fill=(90, 60, 150))  # a purple ball to rename
    box: Box = (58, 38, 44, 44)
    d_rgb, alpha = donor_ball()
    rect = background.copy()
    rect[40:80, 60:100] = d_rgb  # the donor crop with its backdrop: a rectangle
    masked = background.copy().astype(np.float32)
    masked[40:80, 60:100] = alpha[..., None] * d_rgb + (1 - alpha[..., None]) * masked[40:80, 60:100]
    edit = {"op": "rename", "object": "1", "name": "ball", "kept": "unknown keys are ignored"}
    s_rect, s_masked = scores_of(
        item(source, image(rect), edit, (box,)), item(source, image(masked.round().astype(np.uint8)), edit, (box,))
    )
    assert s_rect["paste_edge"] > 0.15
    ok, why = keep(s_rect)
    assert not ok and why is not None and "pasted rectangle" in why
    assert s_masked["paste_edge"] < 0.1 and s_masked["trace"] < 0.2
    assert keep(s_masked) == (True, None), s_masked


def car_scene() -> tuple[Image.Image, Box]:
    """A car on gravel: a red body with two windows, two black wheels with grey hubs."""
    im = image(textured(7))
    draw = ImageDraw.Draw(im)
    draw.rectangle((40, 40, 120, 80), fill=(190, 30, 30))
    draw.rectangle((50, 46, 75, 60), fill=(150, 190, 220))
    draw.rectangle((85, 46, 110, 60), fill=(150, 190, 220))
    for cx in (58, 102):
        draw.ellipse((cx - 12, 72, cx + 12, 96), fill=(20, 20, 20))
        draw.ellipse((cx - 5, 79, cx + 5, 89), fill=(170, 170, 170))
    return im, (40, 40, 81, 57)


def test_a_replacement_that_keeps_the_wheels_fails() -> None:
    source, box = car_scene()
    d_rgb, alpha = donor_ball()
    import cv2

    big_rgb = cv2.resize(d_rgb, (44, 44))
    big_a = cv2.resize(alpha, (44, 44))[..., None]
    # the old car removed where GrabCut found its body; the wheels were missed and stay; a bike is pasted on
    kept = np.asarray(source).copy()
    gravel = textured(7)
    kept[40:72, 40:121] = gravel[40:72, 40:121]
    region = kept[28:72, 58:102].astype(np.float32)
    kept[28:72, 58:102] = (big_a * big_rgb + (1 - big_a) * region).round().astype(np.uint8)
    clean = gravel.copy()
    region = clean[28:72, 58:102].astype(np.float32)
    clean[28:72, 58:102] = (big_a * big_rgb + (1 - big_a) * region).round().astype(np.uint8)
    edit = {"op": "rename", "object": "1", "name": "bike"}
    s_kept, s_clean = scores_of(item(source, image(kept), edit, (box,)), item(source, image(clean), edit, (box,)))
    assert s_kept["trace"] > 0.3 > s_clean["trace"]
    ok, why = keep(s_kept)
    assert not ok and why is not None and why.startswith("trace:")


def test_a_faded_ghost_of_the_original_fails() -> None:
    source, box = car_scene()
    gravel = textured(7)
    ghost = (0.5 * np.asarray(source, np.float32) + 0.5 * gravel).round().astype(np.uint8)
    (s,) = scores_of(item(source, image(ghost), {"op": "remove", "object": "1"}, (box,)))
    assert s["trace"] > 0.5
    assert not keep(s)[0]


def test_the_real_backend_swap_of_very_different_sizes_is_rejected() -> None:
    source, car = car_scene()
    ImageDraw.Draw(source).rectangle((130, 20, 136, 34), fill=(240, 240, 80))  # a yellow straw
    straw: Box = (130, 20, 7, 15)
    crop = lambda b: source.crop((b[0], b[1], b[0] + b[2], b[1] + b[3]))  # noqa: E731
    regions = (
        EditRegion(car, "replace", "a straw", donor=crop(straw)),
        EditRegion(straw, "replace", "a car", donor=crop(car)),
    )
    cand = run_backend(source, *regions)[0]
    (s,) = scores_of(item(source, cand, {"op": "swap_names", "objects": ["1", "2"]}, (car, straw)))
    assert not keep(s)[0], s


# -- the contract -----------------------------------------------------------------------------------------


def test_flips_and_items_without_boxes_score_nothing() -> None:
    source, _ = bowl_scene()
    flipped = source.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    assert scores_of(item(source, flipped, {"op": "flip"}, ())) == [{}]
    assert scores_of(item(source, flipped, {"op": "flip"}, ((1, 1, 5, 5),))) == [{}]


def test_the_source_mask_is_made_once_per_negative() -> None:
    import hardneg.core.pixels.whole as object_masks  # the verifier's whole-object mask

    source, box = bowl_scene()
    cands = run_backend(source, EditRegion(box, "recolor", "a red bowl", color="red", source_color="white"), n=3)
    edit = {"op": "set_attribute", "object": "1", "from": "white", "to": "red"}
    calls = []
    real = object_masks.object_mask
    try:
        object_masks.object_mask = lambda *a, **k: calls.append(1) or real(*a, **k)  # type: ignore[assignment]
        out = scores_of(*(item(source, c, edit, (box,)) for c in cands))
    finally:
        object_masks.object_mask = real  # type: ignore[assignment]
    assert len(calls) == 1 and all(keep(s)[0] for s in out)


def test_registered_and_thresholds_re_decide_without_re_scoring() -> None:
    assert filter_class("edits") is EditCheckFilter
    f = build("edits", {})
    assert f.version == "edits@v4" and f.targets == frozenset({"image_candidate"})
    stored = [
        {f.version: {"recolor_hit": 0.45, "recolor_left": 0.1}},
        {f.version: {"recolor_hit": 0.9, "recolor_left": 0.02, "recolor_specks": 0.3}},
    ]
    strict = decide_image(stored, [Rule(filter_class("edits"), thresholds("edits", {}))])
    assert not strict.keep
    reasons = dict(strict.losers)
    assert "needs 95%" in reasons[0] and "specks" in reasons[1]
    looser = {"min_recolor_hit": 0.4, "max_recolor_left": 0.3}
    loose = decide_image(stored, [Rule(filter_class("edits"), thresholds("edits", looser))])
    assert loose.keep and loose.candidate == 0
    with pytest.raises(ConfigError, match="unknown key"):
        thresholds("edits", {"min_hit": 0.4})


def test_keep_names_every_failing_check() -> None:
    ok, why = keep({"trace": 0.6, "smear": 0.9, "paste_edge": 0.3, "fill_mismatch": 0.5})
    assert not ok and why is not None
    for word in ("trace:", "smear:", "pasted rectangle:", "removal fill:"):
        assert word in why
    assert keep({}) == (True, None)  # no scores: the filter did not apply


def test_the_colour_table_is_one_table() -> None:
    lab = colors.to_lab(np.array([[COLORS["white"], COLORS["brown"], COLORS["orange"]]], np.uint8))
    assert colors.in_range(lab, "white").tolist() == [[True, False, False]]
    assert colors.in_range(lab, "brown")[0, 1] and colors.closer(lab, "orange", "brown")[0, 2]
    assert colors.colour_name(" Cream Colored ") == "cream colored" and colors.colour_name("wooden") is None
