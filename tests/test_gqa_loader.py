"""Tests for the streaming GQA loader (core/gqa.py) and the synthetic corpus generator."""

from __future__ import annotations

import random
import re
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks.synthetic_gqa import write_synthetic_gqa
from core.gqa import GraphCheck, iter_raw_graphs, load_graphs, validate_graph
from core.records import Relation

CHUNK_SIZES = (1, 7, 64, 1000, 8 << 20)


def _graph(**over: Any) -> dict[str, Any]:
    """A valid two-object GQA graph."""
    g: dict[str, Any] = {
        "width": 100,
        "height": 80,
        "location": "indoors",
        "objects": {
            "11": {
                "name": "man",
                "x": 10,
                "y": 5,
                "w": 20,
                "h": 40,
                "attributes": ["tall", "young"],
                "relations": [{"name": "to the left of", "object": "12"}],
            },
            "12": {
                "name": "table",
                "x": 50,
                "y": 30,
                "w": 40,
                "h": 30,
                "attributes": [],
                "relations": [{"name": "to the right of", "object": "11"}],
            },
        },
    }
    g.update(over)
    return g


def _write(path: Path, doc: Any) -> Path:
    path.write_bytes(doc if isinstance(doc, bytes) else orjson.dumps(doc))
    return path


def _tricky_doc() -> dict[str, Any]:
    """Images whose strings hold braces, brackets, commas, escaped quotes and trailing backslashes."""
    a = _graph()
    a["objects"]["11"]["name"] = 'a \\"quoted\\" {name}'  # backslashes before quotes: odd runs
    a["objects"]["12"]["name"] = "ends with a backslash\\"  # the closing quote follows a backslash
    a["objects"]["12"]["attributes"] = ["}", "]", "{[", ",", '"', "\\\\", "\\\\\\", "caf\u00e9 \U0001f600"]
    b = _graph(weather='sunny"}, "x": {')
    b["objects"]["11"]["relations"].append({"name": "}]},{[", "object": "12"})
    return {"2386621": a, "n1}": b, 'x"\\': _graph(), "2": _graph(height=70)}


def test_tricky_file_matches_orjson_at_every_chunk_size(tmp_path: Path) -> None:
    doc = _tricky_doc()
    compact = orjson.dumps(doc)
    pretty = orjson.dumps(doc, option=orjson.OPT_INDENT_2).replace(b"\n", b"\r\n\t ")
    assert b'\\\\"' in compact and b'\\\\\\"' in compact  # both backslash parities are exercised
    for raw in (compact, b" \n" + pretty + b"\n\n"):
        path = _write(tmp_path / "g.json", raw)
        expected = list(orjson.loads(raw).items())
        for chunk_size in CHUNK_SIZES:
            assert list(iter_raw_graphs(path, chunk_size)) == expected, chunk_size


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice('ab{}[]",:\\ \u00e9') for _ in range(rng.randint(0, 8)))


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randint(0, 6 if depth < 3 else 3)
    if kind == 0:
        return _random_string(rng)
    if kind == 1:
        return rng.randint(-5, 5)
    if kind == 2:
        return rng.choice([None, True, False, 1.5])
    if kind == 3:
        return []
    if kind <= 5:
        return {_random_string(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


@pytest.mark.parametrize("seed", range(20))
def test_random_json_matches_orjson(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    doc = {f"{i}{_random_string(rng)}": _random_value(rng) for i in range(rng.randint(0, 12))}
    raw = orjson.dumps(doc, option=orjson.OPT_INDENT_2 if seed % 2 else 0)
    path = _write(tmp_path / "r.json", raw)
    for chunk_size in (1, 2, 3, 5, 16, 4096):
        assert list(iter_raw_graphs(path, chunk_size)) == list(doc.items()), chunk_size


def test_folder_loads_scene_graph_files_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path / "val_sceneGraphs.json", {"3": _graph(), "1": _graph()})
    _write(tmp_path / "train_sceneGraphs.json", {"9": _graph(), "2": _graph()})
    _write(tmp_path / "other.json", {"5": _graph()})  # not a scene-graph file: ignored
    assert [k for k, _ in iter_raw_graphs(tmp_path, 16)] == ["9", "2", "3", "1"]
    assert [c.image_id for c in load_graphs(tmp_path)] == ["9", "2", "3", "1"]


def test_folder_without_scene_graphs_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path / "other.json", {"5": _graph()})
    with pytest.raises(ValueError, match=r"no \*sceneGraphs\*\.json"):
        list(iter_raw_graphs(tmp_path))


def _obj(g: dict[str, Any], oid: str = "11") -> dict[str, Any]:
    return g["objects"][oid]


DELETE = object()  # a mutation value: remove the key


def _mutated(path: tuple[str | int, ...], value: Any) -> Any:
    """A valid graph with the value at `path` replaced (a callable gets the old value) or deleted."""
    g: Any = _graph()
    if not path:
        return value(g)
    parent = g
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value(parent[path[-1]]) if callable(value) else value
    return g


REL0 = ("objects", "11", "relations", 0)
# name -> (where, new value, the exact reject reason)
MALFORMED: dict[str, tuple[tuple[str | int, ...], Any, str]] = {
    "missing width": (("width",), DELETE, "missing key 'width'"),
    "zero height": (("height",), 0, "height must be a positive integer, got 0"),
    "string width": (("width",), "100", 'width must be a positive integer, got "100"'),
    "graph is a list": ((), lambda g: [g], "graph must be an object, got list"),
    "objects as list": (
        ("objects",),
        lambda o: list(o.values()),
        "objects must be an object of id -> object, got list",
    ),
    "object missing name": (("objects", "11", "name"), DELETE, "object 11: missing key 'name'"),
    "object missing h": (("objects", "12", "h"), DELETE, "object 12: missing key 'h'"),
    "object is a string": (("objects", "12"), "table", "object 12: must be an object, got string"),
    "zero width box": (("objects", "11", "w"), 0, "object 11: non-positive size w=0 h=40"),
    # The image is 100 wide: x=100 starts just past the edge.
    "box outside image": (("objects", "11", "x"), 100, "object 11: box lies entirely outside the image"),
    "attributes not a list": (
        ("objects", "11", "attributes"),
        "tall",
        "object 11: 'attributes' must be a list of strings, got string",
    ),
    "attribute not a string": (
        ("objects", "11", "attributes"),
        ["tall", 3],
        "object 11: 'attributes' must be a list of strings",
    ),
    "relation missing object": ((*REL0, "object"), DELETE, "object 11: relation 0 must be {name, object}"),
    "relation object is a bool": (
        (*REL0, "object"),
        True,
        "object 11: relation 0 'object' must be an id string, got bool",
    ),
    # The form the GQA web page shows; the real files use a list.
    "relations as dict": (
        ("objects", "12", "relations"),
        {"r1": {"name": "to the right of", "object": "11"}},
        "object 12: 'relations' must be a list of {name, object}, got object "
        "(the GQA web page's dict form is not the file format)",
    ),
    "non-integer coordinate": (("objects", "11", "x"), 10.5, "object 11: 'x' must be an integer, got 10.5"),
    "bool coordinate": (("objects", "12", "y"), True, "object 12: 'y' must be an integer, got true"),
    "empty name": (("objects", "11", "name"), "  ", "object 11: 'name' is empty"),
    "weather not a string": (("weather",), 3, "weather must be a string, got number"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_image_is_rejected_and_the_rest_load(tmp_path: Path, case: str) -> None:
    where, value, reason = MALFORMED[case]
    bad = _mutated(where, value)
    path = _write(tmp_path / "train_sceneGraphs.json", {"1": _graph(), "2": bad, "3": _graph()})
    checks = list(load_graphs(path, chunk_size=64))
    assert [c.image_id for c in checks] == ["1", "2", "3"]
    assert checks[1] == GraphCheck("2", None, reason, {})
    assert checks[1].to_reject().to_json() == {"stage": "gqa_load", "reason": reason, "image_id": "2"}
    for good in (checks[0], checks[2]):
        assert good.graph is not None and good.reason is None and good.repairs == {}
        assert good.graph.to_gqa() == _graph()


def test_clean_graph_round_trips_unchanged() -> None:
    raw = _graph(weather="sunny")
    check = validate_graph("7", raw)
    assert check.ok and check.repairs == {}
    assert check.graph.image_id == "7" and (check.graph.location, check.graph.weather) == ("indoors", "sunny")
    assert check.graph.objects["11"].relations == (Relation("to the left of", "12"),)
    assert isinstance(check.graph.objects["11"].attributes, tuple)
    assert check.graph.to_gqa() == raw


def test_integral_float_coordinates_are_accepted_as_ints() -> None:
    g = _graph(width=100.0)
    _obj(g)["x"] = 10.0
    check = validate_graph("7", g)
    assert check.ok and check.repairs == {}
    assert type(check.graph.width) is int and type(check.graph.objects["11"].x) is int
    assert check.graph.to_gqa() == _graph()


def test_unknown_top_level_keys_are_ignored() -> None:
    check = validate_graph("7", _graph(caption="ignored", location=None))
    assert (
        check.ok
        and check.graph.location is None
        and check.graph.to_gqa() == {k: v for k, v in _graph().items() if k != "location"}
    )


def _spill(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g).update(x=-5, y=70, w=20, h=30)  # the image is 100 x 80
    _obj(want).update(x=0, y=70, w=15, h=10)
    _obj(g, "12").update(x=90, y=-1, w=40, h=90)
    _obj(want, "12").update(x=90, y=0, w=10, h=80)
    return {"clipped_box": 2}


def _dangling(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g)["relations"].insert(0, {"name": "near", "object": "999"})
    return {"dropped_dangling_relation": 1}


def _self(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g)["relations"].append({"name": "near", "object": "11"})
    return {"dropped_self_relation": 1}


def _duplicate(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g)["relations"] += [{"name": "near", "object": "12"}, {"name": "to the left of", "object": "12"}]
    _obj(want)["relations"].append({"name": "near", "object": "12"})
    return {"dropped_duplicate_relation": 1}


def _int_id(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g)["relations"][0]["object"] = 12
    return {"stringified_id": 1}


def _strings(g: dict[str, Any], want: dict[str, Any]) -> dict[str, int]:
    _obj(g)["attributes"] = [" tall", "young", "tall"]
    _obj(g, "12")["name"] = "table\n"
    return {"dropped_duplicate_attribute": 1, "stripped_whitespace": 2}


# name -> a function that breaks a valid graph `g`, edits `want` to the expected repaired graph,
# and returns the expected repair counts
REPAIRS: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, int]]] = {
    "spilling boxes are clipped exactly": _spill,
    "dangling relation dropped": _dangling,
    "self relation dropped": _self,
    "duplicate relation dropped": _duplicate,
    "integer relation id stringified": _int_id,
    "duplicate attribute dropped, whitespace stripped": _strings,
}


@pytest.mark.parametrize("case", sorted(REPAIRS))
def test_repairs_are_applied_and_counted(tmp_path: Path, case: str) -> None:
    raw, want = _graph(), _graph()
    counts = REPAIRS[case](raw, want)
    path = _write(tmp_path / "g.json", {"5": raw})
    (check,) = load_graphs(path, chunk_size=7)
    assert check.reason is None and check.repairs == counts
    assert check.graph.to_gqa() == want


def test_duplicate_image_id_is_rejected(tmp_path: Path) -> None:
    graph = orjson.dumps(_graph())
    path = _write(tmp_path / "g.json", b'{"1": %s, "1": %s}' % (graph, graph))
    checks = list(load_graphs(path))
    assert [(c.image_id, c.ok) for c in checks] == [("1", True), ("1", False)]
    assert "duplicate image id" in checks[1].reason


def _collect(path: Path, chunk_size: int) -> tuple[list[str], ValueError | None]:
    ids: list[str] = []
    try:
        for image_id, _ in iter_raw_graphs(path, chunk_size):
            ids.append(image_id)
    except ValueError as e:
        return ids, e
    return ids, None


@pytest.mark.parametrize("chunk_size", (5, 64, 1 << 20))
def test_truncated_file_yields_complete_images_then_raises(tmp_path: Path, chunk_size: int) -> None:
    raw = orjson.dumps({"1": _graph(), "2": _graph(), "3": _graph()})
    third = raw.index(b'"3":')
    cuts = [
        (third + 40, "depth 2"),
        (third + 30, "inside a string"),
        (third, "depth 1"),
        (third - 1, "depth 1"),
        (third - 2, "depth 2"),
    ]
    for cut, where in cuts:
        path = _write(tmp_path / "t.json", raw[:cut])
        ids, err = _collect(path, chunk_size)
        assert ids == (["1"] if cut == third - 2 else ["1", "2"]), cut
        assert err is not None and "truncated" in str(err) and where in str(err)
        assert str(path) in str(err) and f"byte {cut}:" in str(err)


def test_syntax_error_raises_with_its_byte_offset(tmp_path: Path) -> None:
    raw = orjson.dumps({"1": _graph(), "2": _graph(), "3": _graph()})
    at = raw.index(b'"width":100,', raw.index(b'"2":')) + len(b'"width":100,')
    broken = raw[:at] + b"," + raw[at:]  # a stray comma inside image 2, at byte `at`
    path = _write(tmp_path / "s.json", broken)
    for chunk_size in (3, 4096):
        ids, err = _collect(path, chunk_size)
        assert ids == ["1"]
        assert err is not None and "invalid JSON" in str(err) and f"s.json, byte {at}:" in str(err)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b' [{"1": {}}]', "top level must be an object of image id -> graph, got an array"),
        (b'"x"', "got a string"),
        (b"", "empty file"),
        (b'{"1": 5} {"2": 6}', "trailing data"),
        (b'{"1": 5,}', "empty member"),
        (b'{"1": 5]', "']' closes the top-level object"),
    ],
)
def test_file_level_defects_raise_value_error(tmp_path: Path, raw: bytes, message: str) -> None:
    path = _write(tmp_path / "bad.json", raw)
    for chunk_size in (1, 4096):
        with pytest.raises(ValueError, match=re.escape(message)):
            list(iter_raw_graphs(path, chunk_size))


def test_empty_top_level_object_yields_nothing(tmp_path: Path) -> None:
    assert list(load_graphs(_write(tmp_path / "e.json", b" { \n } \n"), 1)) == []


def test_unbalanced_quote_is_caught_by_the_member_size_cap(tmp_path: Path) -> None:
    raw = b'{"1": {"name": "open quote}, "2": {}' + b" " * 5000 + b"}"
    path = _write(tmp_path / "q.json", raw)
    with pytest.raises(ValueError, match="member longer than 1000 bytes"):
        list(iter_raw_graphs(path, 64, max_member_bytes=1000))


def test_streaming_keeps_python_allocations_small(tmp_path: Path) -> None:
    path = write_synthetic_gqa(tmp_path / "train_sceneGraphs.json", n_images=2000, seed=3)
    size = path.stat().st_size
    assert size > 5_000_000
    tracemalloc.start()
    try:
        n = sum(1 for c in load_graphs(path, chunk_size=64 << 10) if c.ok)
        _, stream_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        whole = orjson.loads(path.read_bytes())
        _, whole_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == len(whole) == 2000
    assert whole_peak > size  # the measurement does see a whole-file load
    # Chunk + scanner arrays + one image's raw and validated graph + the ids seen: well under the file.
    assert stream_peak < size / 5 and stream_peak < whole_peak / 20, (stream_peak, size, whole_peak)


def test_synthetic_corpus_is_deterministic(tmp_path: Path) -> None:
    a = write_synthetic_gqa(tmp_path / "a.json", n_images=50, seed=7).read_bytes()
    b = write_synthetic_gqa(tmp_path / "b.json", n_images=50, seed=7).read_bytes()
    c = write_synthetic_gqa(tmp_path / "c.json", n_images=50, seed=8).read_bytes()
    assert a == b and a != c


def test_synthetic_corpus_is_gqa_like(tmp_path: Path) -> None:
    path = write_synthetic_gqa(tmp_path / "train_sceneGraphs.json", n_images=400, seed=1)
    checks = list(load_graphs(path))
    assert len(checks) == 400 and all(c.ok for c in checks)
    repairs = Counter()
    for c in checks:
        repairs.update(c.repairs)
    assert set(repairs) == {"clipped_box"}  # a few boxes spill; nothing else needs repair
    graphs = [c.graph for c in checks]
    n_obj = [len(g.objects) for g in graphs]
    edges = [(g.image_id, oid, r.name, r.object) for g in graphs for oid, o in g.objects.items() for r in o.relations]
    assert 14 < sum(n_obj) / len(graphs) < 18 and 40 < len(edges) / len(graphs) < 60
    assert 0.005 < repairs["clipped_box"] / sum(n_obj) < 0.06
    names = Counter(r[2] for r in edges)
    lr = names["to the left of"] + names["to the right of"]
    assert 0.4 < lr / len(edges) < 0.7
    assert names.most_common(3)[2][0] == "on"
    edge_set = set(edges)
    flip = {"to the left of": "to the right of", "to the right of": "to the left of"}
    for image_id, a, name, b in edges:
        if name in flip:
            assert (image_id, b, flip[name], a) in edge_set
    objects = [o for g in graphs for o in g.objects.values()]
    top_names = [n for n, _ in Counter(o.name for o in objects).most_common(10)]
    assert "man" in top_names and "window" in top_names
    sizes = Counter((g.width, g.height) for g in graphs)
    assert sum(v for (w, h), v in sizes.items() if max(w, h) == 500) / len(graphs) > 0.9
