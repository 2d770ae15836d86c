"""Ids as file names (core/ids.py): which ids can name a GQA image file, and the one safe, bounded,
collision-free name every id gets for files the run writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import MAX_ID_BYTES, PLAIN_MAX, id_problem, printable_id, safe_name

UNUSABLE = {
    "": "empty",
    "../../escape2": "path separator",
    "/abs/x": "path separator",
    "a\\b": "path separator",
    "..": "names a folder",
    ".": "names a folder",
    "x\ny": "U+000A",
    "nul\x00": "U+0000",
    "esc\x1b[31m": "U+001B",
    "rtl\u202eevil": "U+202E",
    "7" * (MAX_ID_BYTES + 1): "bytes long",
    "é" * (MAX_ID_BYTES // 2 + 1): "bytes long",  # 2 bytes each in UTF-8
    "lone\ud800": "lone surrogate",
}
USABLE = ["2400001", "n123", "Weird Id ü", "COCO_val2014_000000000042", "a.b", "-x", "..x", "7" * MAX_ID_BYTES]


@pytest.mark.parametrize("image_id", sorted(UNUSABLE))
def test_unusable_ids_say_why(image_id: str):
    why = id_problem(image_id)
    assert why is not None and UNUSABLE[image_id] in why


@pytest.mark.parametrize("image_id", USABLE)
def test_usable_ids_pass(image_id: str):
    assert id_problem(image_id) is None


@pytest.mark.parametrize("image_id", sorted(UNUSABLE))
def test_image_file_never_leaves_the_images_folder(image_id: str, tmp_path: Path):
    with pytest.raises(ValueError, match="image id"):
        image_file(tmp_path, image_id)


def test_image_file_is_the_gqa_name_for_usable_ids(tmp_path: Path):
    for image_id in USABLE:
        assert image_file(tmp_path, image_id) == tmp_path / f"{image_id}.jpg"


def test_plain_ids_keep_their_name_and_others_get_a_readable_prefix_and_hash():
    assert safe_name("2400001") == "2400001"
    assert safe_name("n_1-2") == "n_1-2"
    name = safe_name("../../Escape 2")
    assert name.startswith("escape_2.") and len(name) == len("escape_2.") + 16
    assert safe_name("\x00\x01").startswith("id.")
    assert safe_name("A") != safe_name("a")  # a case-insensitive file system must not merge them


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=300), min_size=1, max_size=30, unique=True))
def test_safe_names_are_safe_bounded_and_collision_free(ids: list[str]):
    names = [safe_name(i) for i in ids]
    for name in names:
        assert 0 < len(name) <= PLAIN_MAX and name.isascii()
        assert "/" not in name and "\\" not in name and not name.startswith(".")
        assert id_problem(name) is None
    assert len({n.lower() for n in names}) == len(ids)
    assert names == [safe_name(i) for i in ids]  # stable


def test_printable_id_escapes_only_what_json_cannot_hold():
    assert printable_id("Weird Id ü") == "Weird Id ü"
    assert printable_id("lone\ud800") == "lone\\ud800"
