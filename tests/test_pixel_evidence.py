"""The pixel primitives on real photos: object masks and their trust (core/pixels/masks.py), colour naming
(core/colors.py) and the verdicts on colour claims (core/pixels/evidence.py).

Every case below was looked at by eye (the crop with its mask overlaid): the Visual Genome photos in
tests/data/photos8 with boxes and attributes from their raw graphs, and scikit-image's sample photos
with boxes drawn by hand. What each case shows is in its comment.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from PIL import Image

from hardneg.core import colors
from hardneg.core.colors import TERMS, read_colours
from hardneg.core.pixels.evidence import (
    ColourVerdict,
    colour_evidence,
    colour_word,
    is_colour_claim,
    judge_colour,
    multicoloured,
    same_colour,
    verify_recolour,
)
from hardneg.core.pixels.masks import ObjectMask, fill_holes, grabcut, object_mask
from tests.helpers import PHOTOS

skimage_data = pytest.importorskip("skimage.data")

VG = PHOTOS / "images"  # tests/data/photos8: the Visual Genome ones (ids 1, 2, 4, 5)

# Raw Visual Genome boxes (xywh) with the graph's colour attributes, and what the photo shows.
VG_SHIRT = ("1", (241, 289, 59, 101))  # "red, orange": a red long-sleeved shirt, shaded down one side
VG_PANTS = ("1", (245, 384, 38, 118))  # "black": black trousers
VG_SNEAKERS = ("1", (243, 489, 52, 26))  # "grey": dark sneakers with white trim; GrabCut keeps the trim
VG_CAR_WHITE = ("1", (708, 342, 91, 174))  # "white": a white car among other white vehicles
VG_CAR_RED = ("2", (239, 347, 136, 126))  # "red": the back of a red car, a man's dark sleeve over it
VG_SIGN = ("2", (230, 287, 22, 67))  # "black": a black sign on its pole
VG_PADDING = ("4", (407, 284, 72, 27))  # "blue": a turquoise-blue chair seat
VG_PICTURE = ("4", (0, 230, 92, 129))  # "black": a poster of blue water in a black frame: two colours
VG_AIRCON = ("5", (186, 20, 180, 57))  # "white": a white air conditioner on a cream wall


@cache
def vg(image: str) -> np.ndarray:
    return np.asarray(Image.open(VG / f"{image}.jpg").convert("RGB"))


@cache
def sample(name: str) -> np.ndarray:
    return getattr(skimage_data, name)()


def evidence(case: tuple[str, tuple[int, int, int, int]], *words: str) -> tuple[ObjectMask, list[ColourVerdict]]:
    image, box = case
    mask, _, verdicts = colour_evidence(vg(image), box, list(words))
    return mask, verdicts


def reading(rgb: np.ndarray, box: tuple[int, int, int, int]) -> tuple[ObjectMask, colors.ColourReading]:
    mask = object_mask(rgb, box)
    x0, y0, x1, y1 = mask.box
    return mask, read_colours(rgb[y0:y1, x0:x1], mask.mask)


# -- masks -----------------------------------------------------------------------------------------------


def test_a_clean_cut_is_trusted_and_keeps_to_the_object() -> None:
    mask, _ = reading(*((vg(VG_SHIRT[0]), VG_SHIRT[1])))
    assert mask.method == "grabcut" and mask.usable, mask.problems
    assert 0.6 < mask.coverage < 0.9 and mask.edge_contact < 0.3 and mask.main_share > 0.95
    full = mask.full(vg("1").shape)
    assert full.sum() == mask.mask.sum() and not full[:, :241].any()  # nothing outside the box


def test_a_collapsed_cut_is_retried_from_the_box_centre_and_says_so() -> None:
    rgb, box = vg(VG_CAR_WHITE[0]), VG_CAR_WHITE[1]
    x, y, w, h = box
    window = rgb[y - 35 : y + h + 35, x - 35 : x + w + 1]
    assert grabcut(window, (35, 35, 35 + w, 35 + h), 5, 0) is None  # the box-initialised cut finds nothing
    mask = object_mask(rgb, box)
    assert mask.method == "seeded" and mask.collapsed and mask.coverage > 0.2
    bare = object_mask(rgb, box, seeded_retry=False)
    assert bare.method == "box" and bare.coverage == 1.0 and not bare.usable
    assert bare.problems == ("no outline found: the mask is the whole box",)


def test_a_mask_that_kept_a_part_is_not_usable() -> None:
    # the air conditioner: GrabCut keeps its dark slit; the sneakers: only their white trim
    for case, coverage in ((VG_AIRCON, 0.1), (VG_SNEAKERS, 0.15)):
        mask, _ = reading(vg(case[0]), case[1])
        assert mask.coverage < coverage and not mask.usable
        assert any("a part of the object at most" in p for p in mask.problems)
    # the black helmet against the black backdrop: only its white rim and glints are cut out
    mask, _ = reading(sample("astronaut"), (275, 342, 237, 170))
    assert not mask.usable and mask.coverage < 0.2


def test_a_box_that_is_the_whole_image_has_no_background_to_model() -> None:
    mask, _ = reading(sample("chelsea"), (0, 0, 451, 300))
    assert mask.method == "box" and not mask.usable


def test_holes_are_filled_up_to_a_size() -> None:
    ring = np.zeros((40, 40), bool)
    ring[5:35, 5:35] = True
    ring[10:30, 10:30] = False  # a 400-pixel hole
    ring[7:9, 7:9] = False  # a 4-pixel hole
    small = fill_holes(ring, max_hole=50)
    assert small[7:9, 7:9].all() and not small[10:30, 10:30].any()
    assert fill_holes(ring)[5:35, 5:35].all()  # no limit: every hole


def test_the_inpainting_backend_cuts_with_the_same_grabcut() -> None:
    from hardneg.backends.inpaint import Rect
    from hardneg.backends.inpaint_opencv import _grabcut

    rgb, (x, y, w, h) = vg(VG_SHIRT[0]), VG_SHIRT[1]
    window = rgb[y - 20 : y + h + 20, x - 20 : x + w + 20]
    old = _grabcut(window, Rect(20, 20, 20 + w, 20 + h), 5, 7)
    new = grabcut(window, (20, 20, 20 + w, 20 + h), 5, 7)
    assert old is not None and new is not None and np.array_equal(old, new)


# -- naming ----------------------------------------------------------------------------------------------


def lab_of(*rgb: tuple[int, int, int]) -> np.ndarray:
    return colors.to_lab(np.array([rgb], np.uint8))[0]


def test_reference_colours_get_their_basic_names() -> None:
    cases = {
        (240, 240, 236): "white", (25, 25, 28): "black", (128, 128, 128): "gray", (200, 35, 35): "red",
        (240, 135, 30): "orange", (240, 210, 40): "yellow", (45, 150, 60): "green", (40, 80, 210): "blue",
        (130, 55, 170): "purple", (240, 140, 180): "pink", (125, 80, 45): "brown", (210, 180, 140): "beige",
        (25, 35, 110): "blue", (150, 195, 235): "blue", (80, 50, 25): "brown", (128, 20, 35): "red",
        (255, 69, 0): "orange", (170, 190, 215): "white",  # a white in blue shade has no hue to name
    }  # fmt: skip
    names = colors.name_pixels(lab_of(*cases))
    assert [TERMS[i] for i in names] == list(cases.values())


def test_shading_keeps_a_red_shirt_red() -> None:
    # Its shaded side has red's hue at half the lightness: named pixel by pixel much of it is brown or
    # black; named with its sector's lit lightness it stays red.
    rgb, box = vg(VG_SHIRT[0]), VG_SHIRT[1]
    mask = object_mask(rgb, box)
    x0, y0, x1, y1 = mask.box
    robust = read_colours(rgb[y0:y1, x0:x1], mask.mask)
    plain = read_colours(rgb[y0:y1, x0:x1], mask.mask, robust=False)
    assert robust.shares["red"] > 0.85 and robust.dominant == "red"
    assert plain.shares["red"] < robust.shares["red"] - 0.1


def test_specular_glints_are_set_aside_but_a_white_object_stays_white() -> None:
    red = np.zeros((60, 60, 3), np.uint8)
    red[...] = (190, 30, 35)
    red[20:23, 30:33] = 255  # two small glints
    red[40:42, 10:13] = 250
    shiny = read_colours(red, np.ones((60, 60), bool))
    assert shiny.shares == {"red": 1.0} and shiny.highlights > 0
    white = np.full((60, 60, 3), 245, np.uint8)
    assert read_colours(white, np.ones((60, 60), bool)).shares == {"white": 1.0}


def test_read_colours_checks_its_mask() -> None:
    with pytest.raises(ValueError, match="does not match"):
        read_colours(np.zeros((4, 4, 3), np.uint8), np.ones((3, 4), bool))
    assert read_colours(np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), bool)).pixels == 0


# -- verdicts on Visual Genome's own attributes -------------------------------------------------------------


def test_attributes_the_photo_bears_out_are_supported() -> None:
    for case, word in ((VG_SHIRT, "red"), (VG_PANTS, "black"), (VG_SIGN, "black"), (VG_PADDING, "blue")):
        _, (verdict,) = evidence(case, word)
        assert verdict.verdict == "supported", verdict.reason
    _, (verdict,) = evidence(VG_CAR_RED, "red")  # the man's sleeve and the windows are dark: still red
    assert verdict.verdict == "supported" and not verdict.multicoloured, verdict.reason


def test_a_neighbouring_colour_is_not_contradicted() -> None:
    _, (orange,) = evidence(VG_SHIRT, "orange")  # the graph says red and orange; red is orange's neighbour
    assert orange.verdict == "unknown" and orange.support < 0.1


def test_colour_negatives_are_contradicted_or_caught_still_true() -> None:
    _, verdicts = evidence(VG_SHIRT, "blue", "white", "green")
    assert [v.verdict for v in verdicts] == ["contradicted"] * 3
    _, (white,) = evidence(VG_CAR_RED, "white")
    assert white.verdict == "contradicted" and not white.shows
    _, (red,) = evidence(VG_CAR_RED, "red")  # "the red car" as a negative here would still be true
    assert red.shows


def test_a_two_coloured_object_carries_no_single_colour() -> None:
    mask, (black,) = evidence(VG_PICTURE, "black")
    assert mask.usable and set(black.multicoloured) == {"blue", "black"}
    assert black.verdict == "unknown" and black.shows  # black is there, but so is a large blue


def test_an_unusable_mask_gives_no_verdict() -> None:
    _, (white,) = evidence(VG_AIRCON, "white")
    assert white.verdict == "unknown" and white.reason.startswith("mask: covers")


def test_a_seeded_mask_may_support_but_not_contradict() -> None:
    # the parking meter's box: the seeded cut takes its grey post, not the orange head the graph means
    mask, (orange,) = evidence(("1", (574, 327, 32, 143)), "orange")
    assert mask.method == "seeded" and orange.verdict == "unknown" and "seeded" in orange.reason
    assert orange.support < 0.1 and orange.against > 0.6


# -- verdicts on scikit-image's photos, boxes by hand ---------------------------------------------------------


def test_the_astronauts_suit_is_orange_not_white() -> None:
    _, suit = reading(sample("astronaut"), (20, 250, 345, 262))
    assert judge_colour(suit, "orange").verdict == "supported"
    assert judge_colour(suit, "white").verdict == "contradicted"
    assert judge_colour(suit, "red").verdict == "unknown"  # its darker folds are red-orange


def test_the_flag_is_multicoloured() -> None:
    _, flag = reading(sample("astronaut"), (0, 0, 100, 512))
    assert set(multicoloured(flag)) == {"red", "blue"}
    assert judge_colour(flag, "multicolored").verdict == "supported"
    assert judge_colour(flag, "red").verdict == "unknown" and judge_colour(flag, "red").shows


def test_a_red_saucer_and_a_spoon_that_reflects_it() -> None:
    _, saucer = reading(sample("coffee"), (75, 80, 405, 310))
    assert judge_colour(saucer, "red").verdict == "supported"
    assert judge_colour(saucer, "white").verdict == "contradicted"
    _, spoon = reading(sample("coffee"), (322, 65, 103, 262))
    assert spoon.dominant == "brown"  # the polished spoon shows the saucer and the table
    assert judge_colour(spoon, "silver").verdict == "unknown"
    assert judge_colour(spoon, "gray").verdict == "contradicted"


def test_a_white_rocket_in_dusk_light_is_not_called_black_nor_denied_white() -> None:
    _, rocket = reading(sample("rocket"), (300, 125, 40, 285))
    assert rocket.dominant == "beige"  # the low sun warms it
    assert judge_colour(rocket, "white").verdict == "unknown"
    assert judge_colour(rocket, "black").verdict == "contradicted"


def test_light_and_dark_two_word_colours() -> None:
    blue = np.zeros((40, 40, 3), np.uint8)
    pale, navy = blue.copy(), blue.copy()
    pale[...] = (150, 195, 235)
    navy[...] = (25, 35, 110)
    full = np.ones((40, 40), bool)
    pale_r, navy_r = read_colours(pale, full), read_colours(navy, full)
    assert judge_colour(pale_r, "light blue").verdict == "supported"
    assert judge_colour(pale_r, "navy").verdict == "contradicted"
    assert judge_colour(navy_r, "dark blue").verdict == "supported"
    assert judge_colour(navy_r, "Light Blue").verdict == "contradicted"
    assert judge_colour(navy_r, "blue").verdict == "supported"


def test_compound_words_and_words_that_are_no_colour() -> None:
    half = np.zeros((40, 40, 3), np.uint8)
    half[:, :20] = 240
    half[:, 20:] = 15
    r = read_colours(half, np.ones((40, 40), bool))
    assert judge_colour(r, "black and white").verdict == "supported"
    assert judge_colour(r, "white").verdict == "unknown"  # two large colours
    assert judge_colour(r, "wooden").verdict == "unknown" and not is_colour_claim("wooden")
    assert colour_word("Light Grey ") == colour_word("light gray") and is_colour_claim("colorful")


# -- two objects, and an edit --------------------------------------------------------------------------------


def test_same_colour_of_two_objects() -> None:
    _, pants = reading(vg(VG_PANTS[0]), VG_PANTS[1])
    _, sign = reading(vg(VG_SIGN[0]), VG_SIGN[1])
    _, shirt = reading(vg(VG_SHIRT[0]), VG_SHIRT[1])
    _, picture = reading(vg(VG_PICTURE[0]), VG_PICTURE[1])
    assert same_colour(pants, sign).verdict == "supported"
    assert same_colour(pants, shirt).verdict == "contradicted"
    mixed = same_colour(picture, sign)
    assert mixed.verdict == "unknown" and "multi-coloured" in mixed.reason


def test_a_recolour_is_verified_on_the_whole_mask() -> None:
    from hardneg.backends.inpaint import EditRegion, InpaintJob
    from hardneg.backends.inpaint_opencv import OpenCVInpainter

    rgb, box = sample("astronaut"), (20, 250, 345, 262)
    region = EditRegion(box, "recolor", "a blue suit", color="blue", source_color="orange")
    (edited,) = OpenCVInpainter().run([InpaintJob("suit", Image.fromarray(rgb), (region,), 1, 0)])[0]
    after = np.asarray(edited)
    mask = object_mask(rgb, box)
    x0, y0, x1, y1 = mask.box

    def under_mask(img: np.ndarray) -> colors.ColourReading:
        return read_colours(img[y0:y1, x0:x1], mask.mask)

    assert verify_recolour(under_mask(after), "orange", "blue").verdict == "supported"
    assert verify_recolour(under_mask(rgb), "orange", "blue").verdict == "contradicted"
    half = after.copy()
    half[:, :190] = rgb[:, :190]  # an edit that left the suit's left half orange
    partial = verify_recolour(under_mask(half), "orange", "blue")
    assert partial.verdict == "contradicted" and partial.against > 0.25
