"""Tests for the GQA loader's per-image validation (core/gqa/loader.py): a malformed image is rejected with
its exact reason while the rest load, fixable defects are repaired and counted, repeated ids rejected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from hardneg.core.gqa.loader import GraphCheck, load_graphs, validate_graph
from hardneg.core.records import Relation
from tests.test_gqa_loader import _graph, _write


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
    assert (checks[1].image_id, checks[1].graph, checks[1].reason) == ("2", None, reason)
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


def test_a_validated_graph_reads_back_as_it_was_written():
    """Work shards are read back without a second validation (`GraphRow.scene_graph`): that is only sound
    because validation is idempotent and `SceneGraph.from_gqa` inverts `to_gqa`. Random graphs with the
    defects validation repairs (clipped boxes, spaces, repeated attributes, dangling, self and repeated
    relations, numeric ids) check both."""
    import random

    from hardneg.core.records import SceneGraph
    from hardneg.core.rows import GraphRow

    rng = random.Random(0)
    kept = 0
    for i in range(400):
        n = rng.randint(1, 8)
        objects: dict[str, Any] = {}
        for k in range(n):
            name = rng.choice(["cup", " cup", "red  car", "tree\t", "man"])
            x, y = rng.randint(-20, 90), rng.randint(-20, 70)
            ids = [str(j) for j in range(n + 1)]  # one past the last: dangling
            rels = [{"name": rng.choice(["on", " near", "left of"]), "object": rng.choice(ids)}
                    for _ in range(rng.randint(0, 3))]  # fmt: skip
            if rng.random() < 0.2:
                rels.append({"name": "on", "object": rng.randint(0, n)})  # a numeric id
            objects[str(k)] = {"name": name, "x": x, "y": y, "w": rng.randint(1, 40), "h": rng.randint(1, 30),
                               "attributes": rng.choices(["red", "red", " wooden", "small"], k=rng.randint(0, 3)),
                               "relations": rels}  # fmt: skip
        raw = {"width": 100, "height": 80, "objects": objects, **({"location": "street"} if i % 2 else {})}
        g = validate_graph(f"i{i}", raw).graph
        if g is None:
            continue
        kept += 1
        assert SceneGraph.from_gqa(g.image_id, g.to_gqa()) == g
        assert validate_graph(g.image_id, g.to_gqa()).graph == g
        assert GraphRow(image_id=g.image_id, graph=g.to_gqa()).scene_graph() == g
    assert kept > 100


def test_a_work_row_not_of_the_written_form_is_a_corrupt_shard():
    from hardneg.core.rows import GraphRow

    with pytest.raises(ValueError, match=r"work shard holds an invalid graph g1: .*objects"):
        GraphRow(image_id="g1", graph={"width": 10, "height": 10}).scene_graph()
