"""The ImageCoDe export: its sets read straight into `evaluation.imagecode` (an oracle scores 100, a blind
model exactly chance), every edit re-checks as false, and `hardneg split` re-makes the sets."""

from __future__ import annotations

import shutil

import orjson
import pytest

from hardneg.core.attributes import AttributeTable
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.io import read_jsonl
from hardneg.core.records import PathNode
from hardneg.core.runfolder import resolve_inputs, stored_config
from hardneg.core.splits import split_of
from hardneg.evaluation.imagecode import imagecode_accuracy
from hardneg.flows.pipeline import resplit
from tests.export_run import EXPORT_RUN, export_run, graphs, records

TABLE = AttributeTable.load(None)
EDITS = EXPORT_RUN["exports"]["imagecode"]["edits"]


@pytest.fixture(scope="module")
def sets() -> list[dict]:
    return records(export_run(), "imagecode")


def test_oracle_scores_100_and_blind_scores_chance(sets):
    assert len(sets) >= 3
    # a record plus a model's scores is what the metric reads (its `target`, `is_video` come along)
    oracle = [{**s, "scores": [float(i == s["target"]) for i in range(len(s["images"]))]} for s in sets]
    best = imagecode_accuracy(oracle)["all"]
    assert best["accuracy"] == 1.0 and best["count"] == len(sets)
    blind = imagecode_accuracy([{**s, "scores": [0.5] * len(s["images"])} for s in sets])["all"]
    assert blind["accuracy"] == pytest.approx(1 / (EDITS + 1)) == pytest.approx(blind["chance"])
    first = imagecode_accuracy([{**s, "scores": [1.0] + [0.0] * EDITS} for s in sets])["all"]
    assert first["accuracy"] < 1.0  # the original is not always first: the order is shuffled


def test_every_set_holds_the_original_and_edits_that_make_the_expression_false(sets):
    root = export_run()
    g = graphs(root)
    images = resolve_inputs(root, stored_config(root))[1]
    splits = stored_config(root).splits
    decisions = {d["id"]: d for d in read_jsonl(root / "work" / "decide" / "negatives-all.jsonl")}
    negatives = {}
    for f in (root / "work" / "images").glob("image-negatives-*.jsonl"):
        negatives.update({r["id"]: r for r in read_jsonl(f)})
    for s in sets:
        assert len(s["images"]) == EDITS + 1 == len(s["edits"]) + 1 and len(set(s["images"])) == len(s["images"])
        assert s["split"] == split_of(s["image_id"], splits) and s["description"]
        original = (root / s["images"][s["target"]]).read_bytes()
        assert original == (images / f"{s['image_id']}.jpg").read_bytes()
        path = PathNode.from_json(s["path"]).without_ids()
        assert execute(path, GraphIndex(g[s["image_id"]], TABLE))  # true of the original
        assert sorted([s["target"]] + [e["index"] for e in s["edits"]]) == list(range(EDITS + 1))
        edits = set()
        for e in s["edits"]:
            n, d = negatives[e["negative_id"]], decisions[e["negative_id"]]
            assert d["keep"] and n["candidates"].index(e["candidate"]) in d["passed"]  # every filter kept it
            assert n["source_image_id"] == s["image_id"] and n["edit"] == e["edit"]
            assert not execute(path, GraphIndex(apply_edit(g[s["image_id"]], e["edit"]), TABLE))
            assert (root / s["images"][e["index"]]).read_bytes() == (root / e["candidate"]).read_bytes()
            edits.add(orjson.dumps(e["edit"], option=orjson.OPT_SORT_KEYS))
        assert len(edits) >= 1


def test_split_remakes_the_sets_without_new_samples(tmp_path):
    root = tmp_path / "run"
    shutil.copytree(export_run(), root)
    before = len(records(root, "imagecode"))
    resplit(root, {"exports": {"imagecode": {"edits": 1}, "tricd": {"distractors": 0}}})
    after = records(root, "imagecode")
    assert len(after) >= before and all(len(s["images"]) == 2 for s in after)
    assert not [p for p in records(root, "tricd") if p.get("negative") == "distractor"]
    assert "imagecode" in (root / "stats.md").read_text() and "imagecode" in (root / "report.html").read_text()
