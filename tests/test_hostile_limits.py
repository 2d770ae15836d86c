"""Hostile graphs cost a bounded amount: per-image limits at ingest (`inputs.max_*`, core/gqa/loader.py and
core/gqa/stream.py) reject an image past one with the limit named and the run goes on; within the
limits the path search stops at a per-image step budget (`paths.max_image_steps`), counted in the stage
stats, never at a wall-clock time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.gqa.loader import RawDefect, iter_raw_graphs, validate_graph
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.io import read_jsonl
from hardneg.core.rows import INGEST_GRAPHS
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES
from tests.test_gqa_loader import _graph

UP_TO_PATHS = STAGES[: [s.name for s in STAGES].index("paths") + 1]


def _crowd(n: int, name: str = "car", rels: int = 0) -> dict[str, Any]:
    """`n` objects of one name, each big enough to be a target, on a grid (neighbours overlap, but too
    little to be merged as duplicates), each related to the next `rels` objects."""
    objects = {}
    for i in range(n):
        objects[str(i)] = {
            "name": name,
            "x": 28 * (i % 33),
            "y": 28 * (i // 33),
            "w": 100,
            "h": 100,
            "attributes": ["red"] if i % 2 else ["blue"],
            "relations": [{"name": "near", "object": str((i + k) % n)} for k in range(1, rels + 1)],
        }
    return {"width": 1000, "height": 1000, "objects": objects}


def _nested(levels: int) -> bytes:
    """A valid graph whose first object's attributes are `levels` nested lists."""
    marker = '"attributes":["tall","young"]'
    doc = orjson.dumps(_graph()).decode()
    assert marker in doc
    return doc.replace(marker, '"attributes":' + "[" * levels + "]" * levels, 1).encode()


def _run(tmp: Path, members: list[tuple[str, Any]], overrides: dict[str, Any] | None = None) -> Run:
    """A run folder over a scene-graph file of exactly these members (a graph or its raw bytes), with the
    config `overrides` (an `inputs` section among them adds to the scene-graph file's)."""
    data = b",\n".join(
        json.dumps(k).encode() + b": " + (g if isinstance(g, bytes) else orjson.dumps(g)) for k, g in members
    )
    sg = tmp / "sceneGraphs.json"
    sg.write_bytes(b"{" + data + b"}")
    overrides = dict(overrides or {})
    inputs = {"scene_graphs": str(sg), **overrides.pop("inputs", {})}
    cfg = load_config(None, {"shard_size": 4, "inputs": inputs, **overrides})
    root = tmp / "run"
    prepare_run(cfg, root)
    return Run(root, cfg, UP_TO_PATHS)


def _rejects(run: Run, stage: str) -> dict[str, str]:
    return {r["image_id"]: r["reason"] for f in run.reject_files() if stage in f.parts for r in read_jsonl(f)}


def _kept(run: Run) -> list[str]:
    return [r["image_id"] for r in run.read_all(INGEST_GRAPHS)]


def test_a_graph_past_each_limit_is_rejected_with_the_limit_and_the_run_goes_on(tmp_path: Path):
    many_attributes = _graph()
    many_attributes["objects"]["11"]["attributes"] = [f"a{i}" for i in range(101)]
    many_relations = _graph()
    many_relations["objects"]["11"]["relations"] = [{"name": "near", "object": "12"}] * 10_001
    members = [
        ("good1", _graph()),
        ("objects", _crowd(1_001)),
        ("relations", many_relations),
        ("attributes", many_attributes),
        ("bytes", _graph(location="x" * (1 << 20))),
        ("good2", _graph(height=70)),
    ]
    run = _run(tmp_path, members)
    run.run_stage("ingest")
    assert _kept(run) == ["good1", "good2"]
    assert _rejects(run, "ingest") == {
        "objects": "1,001 objects, above the limit of 1,000 (inputs.max_objects)",
        "relations": "10,002 relations, above the limit of 10,000 (inputs.max_relations)",
        "attributes": "object 11: 101 attributes, above the limit of 100 (inputs.max_attributes)",
        "bytes": "1,048,889 bytes of JSON, above the limit of 1,048,576 (inputs.max_graph_bytes)",
    }


def test_the_limits_are_config_keys(tmp_path: Path):
    members = [("small", _graph()), ("big", _crowd(3))]
    run = _run(tmp_path, members, {"inputs": {"max_objects": 2}})
    run.run_stage("ingest")
    assert _kept(run) == ["small"]
    assert _rejects(run, "ingest") == {"big": "3 objects, above the limit of 2 (inputs.max_objects)"}


@pytest.mark.parametrize("levels", [40, 300, 600, 2_000])
def test_deep_nesting_is_rejected_without_a_traceback(tmp_path: Path, levels: int):
    run = _run(tmp_path, [("good1", _graph()), ("deep", _nested(levels)), ("good2", _graph())])
    run.run_stage("ingest")
    assert _kept(run) == ["good1", "good2"]
    reason = _rejects(run, "ingest")["deep"]
    assert reason == f"graph nested too deeply: {levels + 3} levels, above the limit of 32 (inputs.max_depth)"


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 8 << 20])
def test_the_depth_of_each_image_is_measured_across_chunk_boundaries(tmp_path: Path, chunk_size: int):
    members = [(b"a", _nested(29)), (b"deep", _nested(300)), (b"b", _nested(30)), (b"c", orjson.dumps(_graph()))]
    sg = tmp_path / "g.json"
    sg.write_bytes(b"{" + b",".join(b'"%s": %s' % m for m in members) + b"}")
    got = {k: v.reason if isinstance(v, RawDefect) else "parsed" for k, v in iter_raw_graphs(sg, chunk_size)}
    assert got == {
        "a": "parsed",  # 32 levels: at the limit
        "deep": "graph nested too deeply: 303 levels, above the limit of 32 (inputs.max_depth)",
        "b": "graph nested too deeply: 33 levels, above the limit of 32 (inputs.max_depth)",
        "c": "parsed",
    }


def test_a_crowd_of_one_name_under_the_object_limit_stops_at_the_step_budget(tmp_path: Path):
    run = _run(
        tmp_path,
        [("crowd", _crowd(999, rels=3)), ("good", _graph())],
        {"paths": {"max_image_steps": 50_000}},
    )
    for name in run.order:
        run.run_stage(name)
    assert _kept(run) == ["crowd", "good"]
    summary = run.summary("paths")
    assert summary["items_in"] == 2 and summary["stats"]["budget_exhausted"] == 1
    reasons = [r["reason"] for f in run.reject_files() if "paths" in f.parts for r in read_jsonl(f)]
    assert [r for r in reasons if "max_image_steps" in r] == [
        "search budget of 50,000 steps spent (paths.max_image_steps) at object 0; "
        "the objects after it were not searched"
    ]


def test_a_coordinate_no_image_has_is_named_as_such():
    g = _graph()
    g["objects"]["11"]["x"] = 1.2e29
    check = validate_graph("1", g)
    assert check.reason == "object 11: 'x' is 1.2e+29, not a pixel value (beyond ±100,000)"
