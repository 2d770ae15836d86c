"""The loader's defences against hostile or broken text: control characters, newlines and
overlong words in names, attributes and relations; duplicate object ids and duplicate JSON keys, which
a JSON parser silently resolves last-wins; unusable image ids; values only a lenient parser reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from hardneg.core.gqa.loader import load_graphs, validate_graph
from tests.test_gqa_loader import CHUNK_SIZES, _graph, _write

MAX_TEXT = 100  # characters in a name, attribute or relation (core/gqa/loader.py)


def _member(key: str, graph: bytes) -> bytes:
    return orjson.dumps(key) + b": " + graph


def _file(tmp_path: Path, *members: bytes) -> Path:
    """Image "1" (valid), the given members, image "3" (valid)."""
    good = orjson.dumps(_graph())
    return _write(tmp_path / "g.json", b"{" + b",\n".join((_member("1", good), *members, _member("3", good))) + b"}")


def _only_middle_rejected(path: Path, chunk_size: int = 1 << 20) -> str:
    checks = list(load_graphs(path, chunk_size=chunk_size))
    assert [c.ok for c in checks] == [True, False, True], [(c.image_id, c.reason) for c in checks]
    return checks[1].reason or ""


def _set(where: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    root: Any = _graph()
    g = root
    for k in where[:-1]:
        g = g[k]
    g[where[-1]] = value
    return root


NAME = ("objects", "11", "name")
ATTR = ("objects", "11", "attributes")
REL_NAME = ("objects", "11", "relations", 0, "name")
# where, value, a part of the reason
REJECTED = {
    "escape in a name": (NAME, "man\x1b[2J", "object 11: 'name' contains the control character U+001B"),
    "NUL in an attribute": (ATTR, ["ta\x00ll"], "object 11: attribute contains the control character U+0000"),
    "bidi override in a relation": (REL_NAME, "left\u202eof", "relation 0 'name' contains the control character"),
    "10 kB name": (NAME, "m" * 10_000, f"object 11: 'name' is 10000 characters long (at most {MAX_TEXT})"),
    "long attribute": (ATTR, ["t" * (MAX_TEXT + 1)], "attribute is 101 characters long"),
    "long relation": (REL_NAME, "near" * 30, "relation 0 'name' is 120 characters long"),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_control_characters_and_overlong_words_are_rejected(tmp_path: Path, case: str):
    where, value, reason = REJECTED[case]
    path = _file(tmp_path, _member("2", orjson.dumps(_set(where, value))))
    assert reason in _only_middle_rejected(path)


def test_newlines_and_odd_spaces_inside_words_are_collapsed_and_counted():
    g = _set(NAME, "young\nman")
    g["objects"]["11"]["attributes"] = ["very\ttall", "young"]
    g["objects"]["11"]["relations"][0]["name"] = "to the\u00a0left of"
    check = validate_graph("5", g)
    assert check.ok, check.reason
    o = check.graph.objects["11"]
    assert (o.name, o.attributes, o.relations[0].name) == ("young man", ("very tall", "young"), "to the left of")
    assert check.repairs == {"collapsed_whitespace": 3}


@pytest.mark.parametrize("chunk_size", CHUNK_SIZES)
def test_a_duplicate_object_id_is_rejected_not_resolved_last_wins(tmp_path: Path, chunk_size: int):
    graph = orjson.dumps(_graph()).decode()
    obj12 = '"12":' + orjson.dumps(_graph()["objects"]["12"]).decode()
    dup = graph.replace(obj12, obj12 + "," + obj12.replace('"table"', '"chair"'))
    assert dup != graph
    path = _file(tmp_path, _member("2", dup.encode()))
    assert _only_middle_rejected(path, chunk_size) == "duplicate object id '12' (JSON would keep only the last)"


def test_a_duplicate_field_is_rejected(tmp_path: Path):
    graph = orjson.dumps(_graph()).decode().replace('"name":"man"', '"name":"man","name":"woman"', 1)
    path = _file(tmp_path, b'"2": ' + graph.encode())
    assert _only_middle_rejected(path) == "duplicate key 'name' in one JSON object (JSON would keep only the last)"


def test_colons_inside_strings_and_escaped_colons_are_no_duplicate(tmp_path: Path):
    g = _set(NAME, "a: b: c")
    raw = orjson.dumps(g).replace(b"a: b: c", b"a\\u003a b: c")
    path = _write(tmp_path / "g.json", b'{"1": ' + raw + b', "2": ' + orjson.dumps(_set(NAME, "x:y")) + b"}")
    checks = list(load_graphs(path))
    assert [c.ok for c in checks] == [True, True]
    assert checks[0].graph.objects["11"].name == "a: b: c"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'"2": {"width": NaN, "height": 80, "objects": {}}', "unreadable value (unexpected character"),
        (b'"2": ' + orjson.dumps(_set(NAME, "PLACEHOLDER")).replace(b"PLACEHOLDER", b"\\ud800"), "surrogate"),
        (b'"2": ' + orjson.dumps(_set(NAME, "PLACEHOLDER")).replace(b"PLACEHOLDER", b"\xff\xfe"), "UTF-8"),
    ],
    ids=["NaN", "lone surrogate", "invalid UTF-8"],
)
def test_a_value_only_a_lenient_parser_reads_rejects_the_image_not_the_file(tmp_path: Path, raw: bytes, reason: str):
    assert reason in _only_middle_rejected(_file(tmp_path, raw))


@pytest.mark.parametrize(
    ("image_id", "reason"),
    [("../../x", "path separator"), ("", "empty"), ("a\nb", "U+000A"), ("9" * 201, "201 bytes long")],
)
def test_an_unusable_image_id_is_rejected(tmp_path: Path, image_id: str, reason: str):
    path = _file(tmp_path, _member(image_id, orjson.dumps(_graph())))
    why = _only_middle_rejected(path)
    assert why.startswith("unusable image id: ") and reason in why
