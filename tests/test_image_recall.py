"""Recolours a person accepts are made: an object on a ground of its own colours is judged by the edge
between them, and objects annotated on the object are left out of its recolour. Boxes on scikit-image's
and matplotlib's sample photos are drawn by hand."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.core.pixels import recolour as dye
from hardneg.core.pixels.masks import object_mask
from hardneg.core.pixels.whole import whole_object
from hardneg.core.records import SceneGraph, SceneObject
from hardneg.generators.images.edits import inside_of
from tests.helpers import image_negative_row
from tests.test_image_verified import photo

skdata = pytest.importorskip("skimage.data")

ROCKET = (306, 124, 30, 282)  # the white rocket on its pad against a pale sky (skimage's "rocket")
NAME_TAG = (78, 483, 90, 34)  # Grace Hopper's grey name tag on her black jacket (matplotlib's sample)


def grace() -> np.ndarray:
    import matplotlib.cbook

    path = matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)
    return np.asarray(Image.open(path).convert("RGB"))


def test_a_white_rocket_on_a_pale_sky_is_recoloured():
    # The sky's pale pixels have colours the rocket's shaded white has, but an edge runs between them: the
    # mask found the rocket's outline. Before, 'colours just around the mask' refused every such object.
    rocket = skdata.rocket()
    whole = whole_object(rocket, ROCKET)
    assert dye.refusal(rocket, whole, "white", "blue") is None


def test_a_grey_name_tag_on_a_black_jacket_is_recoloured():
    rgb = grace()
    whole = whole_object(rgb, NAME_TAG)
    assert dye.refusal(rgb, whole, "gray", "blue") is None


def shaded_red(h: int = 80, w: int = 120) -> np.ndarray:
    """A red panel, shaded from left to right, from the photo's top to its bottom, on a grey wall."""
    img = np.full((h, w + 40, 3), 128, np.uint8)
    ramp = np.linspace(1.0, 0.6, w)[None, :, None]
    img[:, 20 : 20 + w] = (np.array([200, 30, 30]) * ramp).astype(np.uint8)
    return img


def test_a_mask_that_misses_half_of_its_object_is_still_refused():
    img = shaded_red()
    mask = np.zeros(img.shape[:2], bool)
    mask[:, 20:80] = True  # the left half of the panel: its colour goes on, with no edge, past the mask
    share = dye.like_outside(img, mask, dye.members(img, mask, "red"), "red")
    assert share > dye.OUTSIDE_LIKE
    whole_mask = np.zeros(img.shape[:2], bool)
    whole_mask[:, 20:140] = True
    assert dye.like_outside(img, whole_mask, dye.members(img, whole_mask, "red"), "red") < dye.OUTSIDE_LIKE


def pillow_and_bear() -> tuple[np.ndarray, tuple[int, int, int, int], tuple[int, int, int, int]]:
    """A white pillow, shaded, on a dark blue bed, with a cream bear sitting on it (near enough to the
    pillow's white that a recolour of the pillow's white pixels takes it in)."""
    img = np.zeros((160, 220, 3), np.uint8)
    img[:] = (40, 50, 90)
    yy, xx = np.mgrid[0:100, 0:160]
    shade = (235 - 0.25 * xx - 0.1 * yy).astype(np.uint8)
    img[30:130, 30:190] = np.stack([shade, shade, shade - 4], axis=-1)
    bear = (yy - 50) ** 2 / 30**2 + (xx - 80) ** 2 / 22**2 <= 1
    img[30:130, 30:190][bear] = (215, 200, 180)
    return img, (30, 30, 160, 100), (86, 48, 48, 64)


def test_an_object_sitting_on_the_recoloured_object_is_left_out():
    img, pillow, bear = pillow_and_bear()
    backend = OpenCVInpainter()
    fur = (img == (215, 200, 180)).all(axis=-1)
    core = cv2.erode(fur.astype(np.uint8), np.ones((7, 7), np.uint8)).astype(bool)

    def run(inside: tuple[tuple[int, int, int, int], ...]) -> np.ndarray:
        region = EditRegion(pillow, "recolor", "an orange pillow", color="orange", source_color="white", inside=inside)
        return np.asarray(backend.run([InpaintJob("p", Image.fromarray(img), (region,), 1, 0)])[0][0])

    with_bear = run(())
    assert np.abs(with_bear[core].astype(int) - img[core]).max() > 20  # the cut takes the bear in: tinted
    without = run((bear,))
    assert (without[core] == img[core]).all()  # left out: the bear keeps its colours, bit for bit
    x, y = pillow[:2]
    corner = (slice(y + 5, y + 20), slice(x + 5, x + 40))
    assert np.abs(without[corner].astype(int) - img[corner]).max() > 20  # the pillow itself is recoloured


def test_the_objects_inside_a_box_are_those_lying_on_it():
    objs = {
        "p": SceneObject("p", "pillow", 30, 30, 160, 100),
        "b": SceneObject("b", "teddy bear", 86, 48, 48, 64),
        "p2": SceneObject("p2", "pillow", 32, 31, 158, 98),  # a second box of the pillow: not on it
        "l": SceneObject("l", "lamp", 170, 10, 60, 60),  # mostly outside
    }
    graph = SceneGraph("1", 220, 160, objs)
    assert inside_of(graph, objs["p"]) == ((86, 48, 48, 64),)
    assert inside_of(None, objs["p"]) == ()


def test_no_halo_of_the_old_colour_is_left_round_what_sits_on_the_object():
    # Visual Genome photo 4: a teddy bear sits on the white pillow. The bear's own cut takes in a rim of
    # the pillow; left out whole, that rim stays white round the bear on an orange pillow (26% of the white
    # pixels beside the bear recoloured before), a halo a person sees.
    rgb, graph = photo("4")
    objs = graph["objects"].values()
    pillow = next(o for o in objs if o["name"] == "pillow" and "white" in o["attributes"])
    bear = next(o for o in objs if o["name"] == "teddy bear")
    pbox, bbox = ((o["x"], o["y"], o["w"], o["h"]) for o in (pillow, bear))
    region = EditRegion(pbox, "recolor", "", color="orange", source_color="white", inside=(bbox,))
    out = np.asarray(OpenCVInpainter().run([InpaintJob("p", Image.fromarray(rgb), (region,), 1, 0)])[0][0])
    moved = np.abs(out.astype(int) - rgb).max(axis=-1) > 20
    whole = whole_object(rgb, pbox)
    x0, y0, x1, y1 = whole.mask.box
    white = np.zeros(rgb.shape[:2], bool)
    white[y0:y1, x0:x1] = dye.members(rgb[y0:y1, x0:x1], whole.mask.mask, "white")
    fur = object_mask(rgb, bbox).full(rgb.shape).astype(np.uint8)
    k = np.ones((3, 3), np.uint8)
    beside = cv2.dilate(fur, k, iterations=4).astype(bool) & whole.mask.full(rgb.shape) & white
    assert beside.sum() > 500
    assert moved[beside].mean() > 0.45
    assert moved[cv2.erode(fur, k, iterations=3).astype(bool)].mean() < 0.05  # the bear itself keeps its colours


def star_flag(cut: int) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A white five-pointed star on a dark blue field, and a hand box round it whose bottom stops `cut` px
    above the star's two lowest tips (0: the box holds the whole star)."""
    img = np.zeros((160, 160, 3), np.uint8)
    img[:] = (20, 30, 110)
    cx, cy, r_out, r_in = 80, 82, 40, 16
    pts = []
    for k in range(10):
        r = r_out if k % 2 == 0 else r_in
        a = -np.pi / 2 + k * np.pi / 5
        pts.append((cx + r * np.cos(a), cy + r * np.sin(a)))
    poly = np.round(np.array(pts)).astype(np.int32)
    cv2.fillPoly(img, [poly], (235, 235, 230))
    x0, y0 = poly[:, 0].min() - 4, poly[:, 1].min() - 4
    x1, y1 = poly[:, 0].max() + 5, poly[:, 1].max() + 5 - (cut + 5 if cut else 0)
    return img, (int(x0), int(y0), int(x1 - x0), int(y1 - y0))


def test_a_box_that_stops_above_the_thin_tips_of_its_object_cuts_it():
    # The star's two lowest points cross the box's bottom side only as thin tips: where the mask touches
    # the side is narrow, as where an object ends inside its box, but beyond the side the photo carries
    # on in the star's white. Before, only a wide contact was a cut: the tips were left white.
    img, box = star_flag(cut=6)
    whole = whole_object(img, box)
    assert "bottom" in whole.cut
    assert not whole.usable
    full, box = star_flag(cut=0)
    assert whole_object(full, box).cut == ()  # the box round the whole star: nothing crosses it


def test_the_edits_filter_judges_the_mask_the_recolour_edited():
    # The backend leaves the bear on the pillow out of the recolour; the record of the edit names it, and
    # the filter leaves it out of the object it reads too. Before, the filter read the bear's fur as pillow
    # that kept its old colours (88% of the pixels recoloured, 12% left) and rejected every such recolour.
    from hardneg.filters.base import Item
    from hardneg.filters.scorers.edit_check import EditCheckFilter
    from hardneg.generators.images.edits import on_it

    img, pillow, bear = pillow_and_bear()
    region = EditRegion(pillow, "recolor", "an orange pillow", color="orange", source_color="white", inside=(bear,))
    out = OpenCVInpainter().run([InpaintJob("p", Image.fromarray(img), (region,), 1, 0)])[0][0]
    edit = {"op": "set_attribute", "object": "p", "from": "white", "to": "orange", **on_it((region,))}
    assert edit["inside"] == [[list(bear)]]
    record = image_negative_row(edit)
    item = Item(0, "image_candidate", record, "", Image.fromarray(img), candidate=out, boxes=(pillow,))
    scores = EditCheckFilter().score([item])[0]
    assert scores["recolor_hit"] >= 0.95 and scores["recolor_left"] <= 0.02, scores
    bare = {k: v for k, v in edit.items() if k != "inside"}  # unrecorded: the fur is read as unchanged pillow
    scores = EditCheckFilter().score([Item(0, "image_candidate", image_negative_row(bare), "", Image.fromarray(img),
                                           candidate=out, boxes=(pillow,))])[0]  # fmt: skip
    assert scores["recolor_left"] > 0.05, scores
