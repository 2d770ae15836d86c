"""Negative images whose certificate describes the pixels: on small drawn photos, every way an edit used
to leave its expression true (or look fake) is refused, each case one test that failed before the rule."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.backends.lexicon import LexiconBackend
from hardneg.core.edits import apply_edit
from hardneg.core.executor import execute
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.resources import data_path
from hardneg.core.rows import PositiveRow
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.images.edits import Carried, Donor, ImageContext, paste_fit, swap_names_edit, swap_refusal
from hardneg.generators.images.stage import make_image_negatives
from tests.helpers import graph, index, node, obj, positive_row

W, H = 500, 400


def _photo(folder: Path, image_id: str, shapes: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]) -> None:
    """A flat background with filled boxes (xywh, colour)."""
    im = Image.new("RGB", (W, H), (200, 205, 195))
    d = ImageDraw.Draw(im)
    for (x, y, w, h), colour in shapes:
        d.rectangle((x, y, x + w, y + h), fill=colour)
    folder.mkdir(exist_ok=True)
    im.save(folder / f"{image_id}.jpg", quality=95)


def _positive(pid: int, g: SceneGraph, path: PathNode, text: str) -> PositiveRow:
    x, y, w, h = g.objects[path.id or ""].box
    return positive_row(path, text, image_id=g.image_id, id=pid, tuple_type="1_hop", level=2, width=W, height=H,
                        template="t", bbox=[x, y, w, h])  # fmt: skip


def _make(
    tmp_path: Path, positives: list[PositiveRow], graphs: dict[str, SceneGraph], types: tuple[str, ...], **kw: Any
):
    names = Counter({o.name: 2 for g in graphs.values() for o in g.objects.values()})
    ctx = ImageContext(
        table=AttributeTable.load(),
        words=Words.load(),
        vocab={"names": names | Counter(kw.pop("names", {})), "attributes": Counter(), "relations": Counter()},
        donors=kw.pop("donors", {}),
        images_dir=tmp_path / "images",
        out_dir=tmp_path / "run" / "images",
        seed=0,
        candidates=1,
        types=types,
        **kw,
    )
    lexicon = LexiconBackend(Lexicon.load(data_path("templates/lexicon.v1.yaml")))
    return make_image_negatives(positives, graphs, ctx, lexicon, OpenCVInpainter())


def test_a_swap_moves_each_crops_looks_so_a_plain_ball_by_a_black_car_is_still_there(tmp_path: Path):
    # "the plain ball which is alongside the black car": exchange the two crops and a plain ball still
    # stands alongside a black car. The swap used to be certified by names alone.
    g = graph(
        obj("b", "ball", ("plain",), (("alongside", "c"),), box=(60, 200, 100, 90)),
        obj("c", "car", ("black",), box=(300, 190, 110, 100)),
        image_id="img1",
    )
    _photo(tmp_path / "images", "img1", [((60, 200, 100, 90), (230, 230, 230)), ((300, 190, 110, 100), (20, 20, 20))])
    path = node("ball", "plain", rel=[("alongside", node("car", "black", oid="c"))], oid="b")
    rows, rejects, _ = _make(tmp_path, [_positive(1, g, path, "the plain ball alongside the black car")],
                             {"img1": g}, ("swap_object",))  # fmt: skip
    assert rows == []
    assert any("may leave the expression true" in r.reason for r in rejects)


def test_a_swapped_crop_carries_its_looks_in_the_recorded_edit():
    g = graph(obj("b", "ball", ("plain", "small"), box=(0, 0, 10, 10)), obj("c", "car", ("black", "large")))
    ctx = ImageContext(AttributeTable.load(), Words.load(), {}, {}, Path("."), Path("."), 0)
    edit = swap_names_edit(g.objects["b"], g.objects["c"], ctx)
    edited = apply_edit(g, edit)
    assert (edited.objects["b"].name, set(edited.objects["b"].attributes)) == ("car", {"small", "black"})
    assert (edited.objects["c"].name, set(edited.objects["c"].attributes)) == ("ball", {"large", "plain"})
    assert execute(node("ball", "plain"), index(edited)) == {"c"}  # the plain ball moved, it did not vanish


def test_a_donor_brings_what_its_crop_holds(tmp_path: Path):
    # "the car" -> a van whose donor crop holds a car: the picture still shows a car.
    g = graph(obj("1", "car", ("red",), box=(100, 150, 160, 100)), image_id="img1")
    _photo(tmp_path / "images", "img1", [((100, 150, 160, 100), (200, 30, 30))])
    _photo(tmp_path / "images", "img2", [((40, 40, 170, 110), (30, 30, 200)), ((60, 60, 120, 80), (20, 20, 20))])
    with_car = Donor("img2", "9", (40, 40, 170, 110), ("blue",), (Carried("car", ("black",), (0.1, 0.2, 0.7, 0.7)),))
    bare = Donor("img2", "9", (40, 40, 170, 110), ("blue",))
    path = node("car", oid="1")
    positive = _positive(1, g, path, "the car")
    rows, rejects, _ = _make(tmp_path, [positive], {"img1": g}, ("replace_object",), donors={"van": [with_car]},
                             names={"van": 1})  # fmt: skip
    assert rows == [] and any("executor matches" in r.reason for r in rejects)
    rows, _, _ = _make(tmp_path, [positive], {"img1": g}, ("replace_object",), donors={"van": [bare]},
                       names={"van": 1})  # fmt: skip
    assert [r.edit["name"] for r in rows] == ["van"]
    assert rows[0].edit["attributes"] == ["blue"] and rows[0].edit["donor"] == {"image_id": "img2", "object": "9"}


def test_a_donor_is_never_blown_up_or_squeezed_into_another_shape():
    assert paste_fit((0, 0, 100, 100), (90, 95)) is None
    assert "enlarged" in (paste_fit((0, 0, 400, 400), (50, 50)) or "")  # a thumbnail over a table's box
    assert "covers" in (paste_fit((0, 0, 300, 60), (40, 120)) or "")  # a standing bottle in a lying box


def test_swaps_need_boxes_apart_and_of_a_like_size(tmp_path: Path):
    straw, table = obj("s", "straw", box=(200, 100, 12, 60)), obj("t", "table", box=(20, 180, 460, 200))
    assert "size" in (swap_refusal(straw, table) or "")
    man, bike = obj("m", "man", box=(100, 50, 120, 200)), obj("b", "bike", box=(90, 150, 150, 120))
    assert "overlap" in (swap_refusal(man, bike) or "")
    assert swap_refusal(obj("a", "cup", box=(10, 10, 50, 60)), obj("b", "bowl", box=(200, 10, 60, 55))) is None
    # and the search never makes such a swap: "the straw left of the table"
    g = graph(straw, table, image_id="img1")
    _photo(tmp_path / "images", "img1", [(table.box, (120, 80, 40)), (straw.box, (250, 250, 250))])
    path = node("straw", rel=[("on", node("table", oid="t"))], oid="s")
    rows, rejects, _ = _make(tmp_path, [_positive(1, g, path, "the straw on the table")], {"img1": g},
                             ("swap_object",))  # fmt: skip
    assert rows == [] and any("differ" in r.reason and "size" in r.reason for r in rejects)


def test_a_flip_is_refused_when_another_object_that_could_be_the_target_lands_on_the_named_side(tmp_path: Path):
    # "the dog to the left of the car": mirrored, the puppy (a dog the graph names otherwise) stands left
    # of the car. The executor looks for "dog" only, so the flip used to pass.
    g = graph(
        obj("d", "dog", rels=(("to the left of", "c"),), box=(40, 200, 80, 60)),
        obj("c", "car", box=(200, 180, 120, 90)),
        obj("p", "puppy", box=(400, 220, 60, 40)),
        image_id="img1",
    )
    _photo(tmp_path / "images", "img1", [((40, 200, 80, 60), (90, 60, 30)), ((200, 180, 120, 90), (30, 30, 200))])
    path = node("dog", rel=[("to the left of", node("car", oid="c"))], oid="d")
    rows, rejects, _ = _make(tmp_path, [_positive(1, g, path, "the dog to the left of the car")], {"img1": g},
                             ("flip",))  # fmt: skip
    assert rows == [] and any("puppy" in r.reason for r in rejects)


def test_no_flip_of_a_picture_that_holds_print_and_at_most_two_per_photo(tmp_path: Path):
    def scene(extra: tuple = ()) -> SceneGraph:
        return graph(
            obj("a", "dog", rels=(("to the left of", "b"),), box=(40, 200, 60, 60)),
            obj("b", "chair", rels=(("to the left of", "c"),), box=(200, 200, 60, 60)),
            obj("c", "car", rels=(("to the left of", "d"),), box=(320, 200, 60, 60)),
            obj("d", "lamp", box=(420, 180, 60, 80)),
            *extra,
            image_id="img1",
        )

    _photo(tmp_path / "images", "img1", [((40, 200, 60, 60), (200, 30, 30))])
    g = scene()
    pairs = (("dog", "a", "chair", "b"), ("chair", "b", "car", "c"), ("car", "c", "lamp", "d"))
    paths = [node(a, rel=[("to the left of", node(b, oid=bid))], oid=aid) for a, aid, b, bid in pairs]
    positives = [_positive(k, g, p, f"p{k}") for k, p in enumerate(paths)]
    rows, rejects, _ = _make(tmp_path, positives, {"img1": g}, ("flip",))
    assert len(rows) == 2 and any("max_flips_per_image" in r.reason for r in rejects)
    signed = scene((obj("s", "sign", box=(200, 20, 100, 50)),))
    rows, rejects, _ = _make(tmp_path, positives, {"img1": signed}, ("flip",))
    assert rows == [] and any("holds print ('sign')" in r.reason for r in rejects)


def test_edits_that_describe_the_pixels_apply_and_malformed_ones_are_named():
    g = graph(obj("a", "car", ("red", "large")), obj("b", "ball", ("blue",), box=(200, 10, 40, 40)))
    e = {"op": "rename", "object": "a", "name": "van", "attributes": ["large", "white"],
         "adds": [{"id": "a+0", "name": "bicycle", "attributes": ["black"], "box": [15, 15, 10, 10]}]}  # fmt: skip
    edited = apply_edit(g, e)
    assert (edited.objects["a"].name, edited.objects["a"].attributes) == ("van", ("large", "white"))
    assert edited.objects["a+0"].name == "bicycle" and execute(node("bicycle"), index(edited)) == {"a+0"}
    swapped = apply_edit(g, {"op": "swap_names", "objects": ["a", "b"], "attributes": [["large", "blue"], ["red"]]})
    assert (swapped.objects["a"].name, swapped.objects["b"].attributes) == ("ball", ("red",))
    for bad in (
        {**e, "adds": [{"id": "b", "name": "x", "box": [0, 0, 1, 1]}]},  # an id that is taken
        {**e, "adds": [{"name": "x"}]},
        {**e, "attributes": "white"},
        {"op": "swap_names", "objects": ["a", "b"], "attributes": [["x"]]},
    ):
        with pytest.raises(ValueError):
            apply_edit(g, bad)


def test_two_like_objects_apart_are_swapped_and_the_swap_is_certified(tmp_path: Path):
    # The rules leave the swap that copy-paste can show: two objects of one size and shape, apart.
    g = graph(
        obj("a", "ball", ("red",), (("to the left of", "b"),), box=(60, 150, 90, 90)),
        obj("b", "clock", ("blue",), box=(320, 150, 90, 90)),
        image_id="img1",
    )
    im = Image.new("RGB", (W, H), (200, 205, 195))
    d = ImageDraw.Draw(im)
    d.ellipse((62, 152, 148, 238), fill=(210, 30, 30))
    d.ellipse((322, 152, 408, 238), fill=(30, 40, 210))
    (tmp_path / "images").mkdir()
    im.save(tmp_path / "images" / "img1.jpg", quality=95)
    path = node("ball", "red", rel=[("to the left of", node("clock", "blue", oid="b"))], oid="a")
    rows, rejects, _ = _make(tmp_path, [_positive(1, g, path, "the red ball to the left of the blue clock")],
                             {"img1": g}, ("swap_object",))  # fmt: skip
    assert [r.negative_type for r in rows] == ["swap_object"], [r.reason for r in rejects]
    edit = rows[0].edit
    assert edit["attributes"] == [["blue"], ["red"]]  # each crop's colour went with it
    out = np.asarray(Image.open(tmp_path / "run" / rows[0].candidates[0]).convert("RGB"), dtype=int)
    assert out[195, 105, 2] > 150 and out[195, 365, 0] > 150  # blue where the red ball was, and red there
