"""FineCops-Ref metrics on hand-computed cases, edge cases, AUROC against brute force, and a hardneg COCO file."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.core.records import PathNode
from hardneg.core.rows import extended
from hardneg.evaluation import finecops
from hardneg.evaluation.finecops import auroc, average_ranks, evaluate, load_coco, load_predictions, to_markdown
from tests.helpers import image_negative_row, positive_row, text_negative_row

T = [0, 0, 10, 10]  # every target box in the hand-computed case


def record(sid, level=1, bbox=T):
    """A published positive (what the write stage hands CocoWriter)."""
    from hardneg.exports.published import PublishedPositive

    fields = dict(id=sid, image_id=f"gqa{sid}", height=100, width=200, expression=f"sample {sid}", bbox=list(bbox),
                  level=level)  # fmt: skip
    return extended(positive_row(PathNode("thing", id="1"), **fields), PublishedPositive, split="test")


def neg(sid, positive_id, negative_type, negative_level, cate="text", level=1):
    """A published text or image negative of `positive_id`."""
    from hardneg.exports.published import PublishedImageNegative, PublishedTextNegative

    fields = dict(id=sid, height=100, width=200, expression=f"sample {sid}", bbox=list(T), level=level,
                  positive_id=positive_id, negative_level=negative_level)  # fmt: skip
    if cate == "image":
        file = f"images/{sid}.jpg"
        r = image_negative_row({}, image_id=f"gqa{sid}", negative_type=negative_type, file_name=file, **fields)
        return extended(r, PublishedImageNegative, split="test", scores={})
    r = text_negative_row(PathNode("thing"), negative_type, {}, image_id=f"gqa{sid}", **fields)
    return extended(r, PublishedTextNegative, split="test")


RECORDS = [
    record(1, level=1),
    record(2, level=1),
    record(3, level=2),
    record(4, level=3),
    neg(11, 1, "replace_object", 1),
    neg(12, 2, "replace_object", 1),
    neg(13, 3, "replace_attribute", 2),
    neg(14, 1, "flip", 1, cate="image"),
    neg(15, 4, "swap_object", 2, cate="image"),
]

PREDICTIONS = [
    {"id": 1, "boxes": [[0, 0, 10, 10], [50, 50, 10, 10]], "scores": [0.9, 0.5]},  # top box hits
    {"id": 2, "boxes": [[20, 20, 10, 10], [0, 0, 10, 10]], "scores": [0.8, 0.3]},  # top box misses
    {"id": 3, "boxes": [[0, 0, 10, 5]], "scores": [0.7]},  # IoU exactly 0.5: a hit (>=)
    # 4: no prediction at all, a miss
    {"id": 11, "boxes": [[0, 0, 10, 10]], "scores": [0.6]},
    {"id": 12, "boxes": [[0, 0, 10, 10]], "scores": [0.95]},
    {"id": 13, "boxes": [[0, 0, 10, 5]], "scores": [0.7]},  # ties with its positive's hit
    {"id": 14, "boxes": [], "scores": []},
    {"id": 15, "boxes": [[1, 1, 5, 5]], "scores": [0.1]},
]


def write_coco(path: Path, records: list) -> Path:
    """Write the COCO file with hardneg's own writer, so the reader is tested on the real format."""
    from hardneg.exports.coco import CocoWriter

    w = CocoWriter(path)
    for r in records:
        w.add(r)
    w.close({"description": "test", "version": "0", "split": "test"})
    return path


@pytest.fixture
def coco_path(tmp_path: Path) -> Path:
    return write_coco(tmp_path / "coco.json", RECORDS)


def value(cell):
    return cell["value"]


def test_precision_at_1_per_level(coco_path: Path):
    p = evaluate(coco_path, PREDICTIONS)["precision_at_1"]
    # L1: sample 1 hits, sample 2 misses -> 1/2. L2: sample 3 hits at IoU 0.5 -> 1. L3: sample 4 has no box -> 0.
    assert {lv: value(c) for lv, c in p["by_level"].items()} == {"1": 0.5, "2": 1.0, "3": 0.0}
    assert [c["count"] for c in p["by_level"].values()] == [2, 1, 1]
    assert value(p["overall"]) == pytest.approx(2 / 4)
    assert p["mean_over_levels"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)


def test_recall_at_1_per_pair(coco_path: Path):
    r = evaluate(coco_path, PREDICTIONS)["recall_at_1"]
    # Pairs: 11 -> P1's 0.9 hit beats 0.6: 1. 12 -> the negative's 0.95 is on top: 0.
    # 13 -> 0.7 (P3 hit) ties 0.7 (negative): expected 0.5. 14 -> negative has no box, P1's 0.9 hit: 1.
    # 15 -> P4 has no box, the negative's 0.1 is on top: 0.
    assert value(r["overall"]) == pytest.approx((1 + 0 + 0.5 + 1 + 0) / 5)
    tl = {t: {lv: value(c) for lv, c in per.items()} for t, per in r["by_type_level"].items()}
    assert tl == {
        "replace_object": {"1": 0.5},
        "replace_attribute": {"2": 0.5},
        "swap_object": {"2": 0.0},
        "flip": {"1": 1.0},
    }
    assert list(tl) == ["replace_object", "replace_attribute", "swap_object", "flip"]  # the paper's order
    assert r["mean_over_type_level"] == pytest.approx((0.5 + 0.5 + 0.0 + 1.0) / 4)
    assert value(r["by_level"]["1"]) == pytest.approx(2 / 3)  # pairs 11, 12, 14
    assert value(r["by_level"]["2"]) == pytest.approx(0.25)  # pairs 13, 15
    assert value(r["by_cate"]["text"]["overall"]) == pytest.approx(1.5 / 3)
    assert value(r["by_cate"]["image"]["overall"]) == pytest.approx(1 / 2)
    assert set(r["by_cate"]["image"]["by_type"]) == {"flip", "swap_object"}


def test_auroc_negatives_vs_their_positives(coco_path: Path):
    a = evaluate(coco_path, PREDICTIONS)["auroc"]
    # Max confidences: P1 .9, P2 .8, P3 .7, P4 -inf (no box); N11 .6, N12 .95, N13 .7, N14 -inf, N15 .1.
    # Overall, 4 positives x 5 negatives: P1 beats 4, P2 beats 4, P3 beats 3 and ties 1 (3.5),
    # P4 only ties N14 (0.5): 12 / 20.
    assert value(a["overall"]) == pytest.approx(12 / 20)
    assert a["overall"]["count"] == 5 and a["overall"]["positives"] == 4
    # replace_object: {P1 .9, P2 .8} vs {.6, .95}: each positive beats one of two -> 2/4.
    assert value(a["by_type"]["replace_object"]) == pytest.approx(0.5)
    assert value(a["by_type"]["replace_attribute"]) == pytest.approx(0.5)  # .7 vs .7
    assert value(a["by_type"]["flip"]) == 1.0  # .9 vs -inf
    assert value(a["by_type"]["swap_object"]) == 0.0  # -inf vs .1
    # text: {P1, P2, P3} vs {.6, .95, .7}: 2 + 2 + 1.5 = 5.5 of 9. image: {P1 .9, P4 -inf} vs {-inf, .1}: 2.5 of 4.
    assert value(a["by_cate"]["text"]["overall"]) == pytest.approx(5.5 / 9)
    assert value(a["by_cate"]["image"]["overall"]) == pytest.approx(2.5 / 4)


def test_counts_and_markdown(coco_path: Path):
    result = evaluate(coco_path, PREDICTIONS)
    assert result["counts"] == {"positives": 4, "negatives": 5, "predictions": 8, "missing_predictions": 1}
    md = to_markdown(result)
    assert "## Precision@1 (positives)" in md and "| L2 | 100.00 | 1 |" in md
    assert "| replace_object | 50.00 | - | 50.00 | 2 |" in md
    assert "### Recall@1, image negatives" in md and "## AUROC" in md
    json.dumps(result)  # plain JSON-ready dicts


def test_no_predictions(coco_path: Path):
    r = evaluate(coco_path, [])
    assert value(r["precision_at_1"]["overall"]) == 0.0
    assert value(r["recall_at_1"]["overall"]) == 0.0  # nothing predicted on either side: a miss
    assert value(r["auroc"]["overall"]) == 0.5  # every confidence is -inf: all ties
    assert r["counts"]["missing_predictions"] == len(RECORDS)


def test_only_positives_leaves_negative_metrics_empty(tmp_path: Path):
    path = write_coco(tmp_path / "coco.json", RECORDS[:4])
    r = evaluate(path, PREDICTIONS[:3])
    assert r["recall_at_1"]["overall"] == {"value": None, "count": 0}
    assert r["recall_at_1"]["mean_over_type_level"] is None and r["recall_at_1"]["by_cate"] == {}
    assert value(r["auroc"]["overall"]) is None
    assert "-" in to_markdown(r)


def test_all_boxes_tied_gets_chance_credit(coco_path: Path):
    same = [{"id": r.id, "boxes": [r.bbox], "scores": [1.0]} for r in RECORDS]
    r = evaluate(coco_path, same)
    assert value(r["precision_at_1"]["overall"]) == 1.0  # every top box is the target
    assert value(r["recall_at_1"]["overall"]) == 0.5  # a hit tied with a negative's box: half credit
    assert value(r["auroc"]["overall"]) == 0.5


def test_degenerate_predicted_box_overlaps_nothing(coco_path: Path):
    preds = [{"id": 1, "boxes": [[0, 0, 0, 10]], "scores": [0.9]}]
    assert value(evaluate(coco_path, preds)["precision_at_1"]["by_level"]["1"]) == 0.0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"id": 1, "boxes": [[0, 0, 10, 10]], "scores": []}, "1 boxes but 0 scores"),
        ({"id": 1, "boxes": [[0, 0, -5, 10]], "scores": [0.5]}, "xywh, not xyxy"),
        ({"id": 1, "boxes": [[0, 0, 10]], "scores": [0.5]}, "must be [x, y, w, h]"),
        ({"id": 1, "boxes": [[0, 0, 1, 1]], "scores": [float("nan")]}, "finite"),
        ({"boxes": []}, "'id'"),
    ],
)
def test_bad_predictions_are_refused(coco_path: Path, entry: dict, message: str):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        evaluate(coco_path, [entry])


def test_unknown_and_duplicate_prediction_ids(coco_path: Path):
    with pytest.raises(ValueError, match="not in the COCO file"):
        evaluate(coco_path, [{"id": 999, "boxes": [], "scores": []}])
    with pytest.raises(ValueError, match="appears twice"):
        evaluate(coco_path, [{"id": 1, "boxes": [], "scores": []}] * 2)


def test_bad_coco_files(tmp_path: Path):
    base = json.loads(write_coco(tmp_path / "c.json", RECORDS).read_text())
    two = json.loads(json.dumps(base))
    two["annotations"].append({**two["annotations"][0], "id": 999})
    with pytest.raises(ValueError, match="has 2 annotations"):
        load_coco(two)
    orphan = json.loads(json.dumps(base))
    ann = next(a for a in orphan["annotations"] if a["image_id"] == 11)
    ann["positive_id"] = 777
    with pytest.raises(ValueError, match="positive_id 777"):
        load_coco(orphan)
    partial = json.loads(json.dumps(base))
    del next(a for a in partial["annotations"] if a["image_id"] == 12)["negative_level"]
    with pytest.raises(ValueError, match="negative 12 lacks"):
        load_coco(partial)


def test_jsonl_and_json_array_files_agree(tmp_path: Path, coco_path: Path):
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text("\n".join(json.dumps(p) for p in PREDICTIONS) + "\n\n")
    array = tmp_path / "p.json"
    array.write_text(json.dumps(PREDICTIONS))
    assert load_predictions(jsonl) == load_predictions(array) == load_predictions(PREDICTIONS)
    assert evaluate(coco_path, jsonl) == evaluate(coco_path, PREDICTIONS)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "boxes": [], "scores": []}\nnot json\n')
    with pytest.raises(ValueError, match="line 2"):
        load_predictions(bad)


def test_round_trip_with_pycocotools(coco_path: Path):
    from pycocotools.coco import COCO

    coco = COCO(str(coco_path))
    samples = load_coco(coco_path)
    assert set(samples) == set(coco.imgs)
    for sid, s in samples.items():
        (ann,) = coco.loadAnns(coco.getAnnIds(imgIds=sid))
        assert list(s.box) == ann["bbox"] and s.level == ann["level"]
        assert s.is_negative == ("negative_type" in ann)
        if s.is_negative:
            assert s.positive_id == ann["positive_id"] and s.negative_cate == ann["negative_cate"]
    # The loaded pycocotools dataset is the same dict: the reader accepts it directly.
    assert evaluate(coco.dataset, PREDICTIONS) == evaluate(coco_path, PREDICTIONS)


def test_cli(tmp_path: Path, coco_path: Path, capsys):
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(p) for p in PREDICTIONS))
    out = tmp_path / "out" / "metrics.json"
    assert finecops.main(["--coco", str(coco_path), "--predictions", str(preds), "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(evaluate(coco_path, PREDICTIONS)))
    assert "Precision@1" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        finecops.main(["--coco", str(coco_path), "--predictions", str(tmp_path / "missing.jsonl")])


# ------------------------------------------------------------------------------------------------ AUROC


def brute_force_auroc(pos: list[float], neg: list[float]) -> float:
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


SCORES = st.lists(st.sampled_from([float("-inf"), -1.0, 0.0, 0.25, 0.5, 1.0]) | st.floats(-5, 5), max_size=30)


@settings(max_examples=200, deadline=None)
@given(SCORES.filter(bool), SCORES.filter(bool))
def test_auroc_matches_brute_force(pos: list[float], neg: list[float]):
    assert auroc(pos, neg) == pytest.approx(brute_force_auroc(pos, neg), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(SCORES)
def test_average_ranks_matches_brute_force(values: list[float]):
    # Rank = 1 + (number smaller) + (number equal - 1) / 2.
    expected = [1 + sum(w < v for w in values) + (sum(w == v for w in values) - 1) / 2 for v in values]
    assert average_ranks(values).tolist() == pytest.approx(expected)


def test_auroc_edges():
    assert auroc([], [0.1]) is None and auroc([0.1], []) is None
    assert auroc([1.0, 2.0], [0.0]) == 1.0
    assert auroc([0.0], [1.0, 2.0]) == 0.0  # every negative above every positive
    with pytest.raises(ValueError, match="NaN"):
        auroc([float("nan")], [0.0])
