"""A sample's claims against its photo (core/pixels/claims.py) and the twin search (core/pixels/twins.py).

Real photos with hand-made graphs: the Visual Genome photos of tests/data/photos8 and scikit-image's samples,
each case looked at by eye. The "two identical objects" and "a mirror" cases are real photos with a real
object copied into them (a second red car beside the first, or its mirror image), so the twin is known
exactly; the twin search's threshold was set on the eight real photos, where no region of another object
reaches it.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from PIL import Image

from hardneg.core.certify import Certifier
from hardneg.core.executor import GraphIndex
from hardneg.core.pixels.claims import Photo, PositiveCheck, judge_negative, judge_positive
from hardneg.core.pixels.twins import POSSIBLE, STRONG, find_twin
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from tests.helpers import PHOTOS, graph, node, obj

skimage_data = pytest.importorskip("skimage.data")

RED_CAR = (239, 347, 136, 126)  # photo 2: the back of a red car
RED_SHIRT = (241, 289, 59, 101)  # photo 1: a red long-sleeved shirt (a clean GrabCut)
GREY_SHIRT = (384, 306, 37, 66)  # photo 1: the grey shirt under the other man's jacket
CROSSWALK = (0, 492, 366, 107)  # photo 2: white stripes on a grey road
FLAG = (0, 0, 100, 512)  # astronaut: the flag behind her, red and white stripes and a blue canton
SUIT = (20, 250, 345, 262)  # astronaut: her orange suit


@cache
def vg(image: str) -> np.ndarray:
    return np.asarray(Image.open(PHOTOS / "images" / f"{image}.jpg").convert("RGB"))


@cache
def words_and_certifier() -> tuple[Words, AttributeTable, Certifier]:
    words, table = Words.load(), AttributeTable.load()
    return words, table, Certifier(words, table)


def check(rgb: np.ndarray, g: SceneGraph, path: PathNode, *, twins: bool = False) -> PositiveCheck:
    words, table, certifier = words_and_certifier()
    return judge_positive(Photo(rgb, g), path, path.id or "", GraphIndex(g, table), certifier, words, twins=twins)


def rules(c: PositiveCheck) -> list[str]:
    return [f.rule for f in c.findings]


def with_car(at: tuple[int, int], *, mirrored: bool = False) -> np.ndarray:
    """Photo 2 with a copy of its red car pasted at (x, y): two identical cars, or a car and its reflection."""
    rgb = vg("2").copy()
    x, y, w, h = RED_CAR
    car = rgb[y : y + h, x : x + w]
    rgb[at[1] : at[1] + h, at[0] : at[0] + w] = car[:, ::-1] if mirrored else car
    return rgb


# -- the twin search -----------------------------------------------------------------------------------------


def test_two_identical_objects_and_a_mirror_image_are_found() -> None:
    copy = find_twin(with_car((600, 440)), RED_CAR).best
    assert copy is not None and copy.strong and not copy.mirrored and abs(copy.box[0] - 600) <= 3
    mirror = find_twin(with_car((600, 440), mirrored=True), RED_CAR).best
    assert mirror is not None and mirror.strong and mirror.mirrored
    plain = find_twin(with_car((600, 440), mirrored=True), RED_CAR, mirrored=False).best
    assert plain is None or not plain.possible  # a reflection is found only by the mirrored search


def test_no_twin_where_there_is_none_or_the_graph_annotates_it() -> None:
    alone = find_twin(vg("2"), RED_CAR).best
    assert alone is None or alone.score < POSSIBLE
    explained = find_twin(with_car((600, 440)), RED_CAR, [(600, 440, 136, 126)]).best
    assert explained is None or explained.score < POSSIBLE
    for name in ("astronaut", "coffee"):  # real photos of one of each
        best = find_twin(getattr(skimage_data, name)(), (160, 20, 120, 110)).best
        assert best is None or best.score < STRONG


def test_a_plain_or_tiny_box_is_not_searched() -> None:
    flat = np.full((200, 300, 3), 128, np.uint8)
    assert find_twin(flat, (20, 20, 60, 60)).skipped.startswith("the box is too plain")
    assert find_twin(vg("1"), (399, 288, 11, 9)).skipped.startswith("the box is too small")


# -- colour claims of positives ------------------------------------------------------------------------------


def test_a_colour_the_photo_contradicts_drops_and_one_it_bears_out_does_not() -> None:
    g = graph(obj("s", "suit", box=SUIT), width=512, height=512)
    white = check(skimage_data.astronaut(), g, node("suit", "white", oid="s"))
    assert rules(white) == ["colour_contradicted"] and "orange" in white.findings[0].reason
    assert check(skimage_data.astronaut(), g, node("suit", "orange", oid="s")).findings == []
    # a white object: the crosswalk's stripes on a grey road
    g = graph(obj("c", "crosswalk", box=CROSSWALK), width=800, height=600)
    assert check(vg("2"), g, node("crosswalk", "white", oid="c")).findings == []


def test_a_striped_object_carries_no_single_colour_and_no_same_colour() -> None:
    g = graph(obj("f", "flag", box=FLAG), obj("s", "suit", ("orange",), box=SUIT), width=512, height=512)
    red = check(skimage_data.astronaut(), g, node("flag", "red", oid="f"))
    assert rules(red) == ["multicoloured"] and "blue" in red.findings[0].reason
    same = check(skimage_data.astronaut(), g, node("flag", same=[("color", node("suit"))], oid="f"))
    assert rules(same) == ["multicoloured"]
    assert rules(check(skimage_data.astronaut(), g, node("flag", "multicolored", oid="f"))) == []


def test_a_person_has_no_one_colour_to_share() -> None:
    """The raw graph calls the walking man "white" (his skin) and the crosswalk white: "the walking man
    sharing the same color as the crosswalk" is no claim about colours a person can check."""
    g = graph(obj("m", "man", ("white",), box=(324, 320, 142, 255)), obj("c", "crosswalk", ("white",), box=CROSSWALK),
              width=800, height=600)  # fmt: skip
    same = check(vg("2"), g, node("man", same=[("color", node("crosswalk"))], oid="m"))
    assert rules(same) == ["multicoloured"] and "person" in same.findings[0].reason
    assert check(vg("2"), g, node("man", "white", oid="m")).findings == []  # on a person "white" is not judged


def test_the_photo_settles_or_confirms_the_graphs_doubt_of_a_twin() -> None:
    """Another shirt with no colour annotated may be grey: the photo shows it red, so "the gray shirt" is
    unique after all. A second red car with no colour annotated: "the red car" is not."""
    g = graph(obj("a", "shirt", ("gray",), box=GREY_SHIRT), obj("b", "shirt", box=RED_SHIRT), width=800, height=600)
    settled = check(vg("1"), g, node("shirt", "gray", oid="a"))
    assert settled.resolved is not None and "shirt b" in settled.resolved and settled.findings == []
    g = graph(obj("a", "car", ("red",), box=RED_CAR), obj("b", "car", box=(560, 380, 136, 126)), width=800, height=600)
    twin = check(with_car((560, 380)), g, node("car", "red", oid="a"))
    assert rules(twin) == ["colour_twin"] and twin.resolved is None
    g = graph(obj("a", "car", ("red",), box=RED_CAR), width=800, height=600)
    assert check(with_car((560, 380)), g, node("car", "red", oid="a")).resolved is None  # nothing to settle


def test_the_twin_search_makes_a_risk_finding() -> None:
    g = graph(obj("a", "car", box=RED_CAR), width=800, height=600)
    found = check(with_car((600, 440)), g, node("car", oid="a"), twins=True)
    assert rules(found) == ["photo_twin"] and "outside every annotated 'car'" in found.findings[0].reason
    g = graph(obj("a", "car", box=RED_CAR), obj("b", "car", box=(600, 440, 136, 126)), width=800, height=600)
    assert rules(check(with_car((600, 440)), g, node("car", oid="a"), twins=True)) == []


# -- colour text negatives -------------------------------------------------------------------------------------


def test_a_colour_negative_the_photo_shows_is_still_true() -> None:
    words, table, _ = words_and_certifier()
    g = graph(obj("c", "crosswalk", ("gray",), box=CROSSWALK), width=800, height=600)
    photo, index = Photo(vg("2"), g), GraphIndex(g, table)
    positive = node("crosswalk", "gray", oid="c")
    checked, found = judge_negative(photo, positive, node("crosswalk", "white"), "c", index, words)
    assert checked and found is not None and found.rule == "colour_still_true" and "white 75%" in found.reason
    assert judge_negative(photo, positive, node("crosswalk", "black"), "c", index, words) == (True, None)
    assert judge_negative(photo, positive, node("road", "gray"), "c", index, words) == (False, None)
    assert photo.masks_made == 1  # one object, masked once for all three
