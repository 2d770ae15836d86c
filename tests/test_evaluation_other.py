"""TRICD, Q-GroundCAM, probe and ImageCoDe metrics on hand-computed cases and edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hardneg.evaluation.groundcam import (
    aggregate,
    box_mask,
    distance_map,
    groundcam_metrics,
    local_maxima,
    normalize_map,
)
from hardneg.evaluation.imagecode import ImageSet, imagecode_accuracy, prediction_accuracy, read_official
from hardneg.evaluation.probes import ProbeGroup, ProbeSample, group_scores, probe_accuracy
from hardneg.evaluation.tricd import (
    CPDPair,
    CPDPrediction,
    average_precision,
    evaluate_cpd,
    group_recall_at_1,
    official_pairs,
    official_predictions,
)

# ------------------------------------------------------------------------------------------------ TRICD

CAT, TABLE1, TABLE2 = [0, 0, 10, 10], [20, 0, 10, 10], [40, 0, 10, 10]


def hand_pairs() -> list[CPDPair]:
    return [
        CPDPair("A", {"cat": [CAT], "table": [TABLE1, TABLE2]}, subset="s1"),
        CPDPair("B", {"cat": [], "table": []}, subset="s1", positive_id="A"),  # distractor image, same caption
    ]


def hand_predictions(negative_cat_score: float = 0.85) -> list[CPDPrediction]:
    return [
        CPDPrediction("A", "cat", CAT, 0.9),
        CPDPrediction("B", "cat", CAT, negative_cat_score),  # any box on a negative pair is a false positive
        CPDPrediction("A", "table", TABLE1, 0.8),
        CPDPrediction("A", "table", [40, 0, 10, 5], 0.7),  # IoU 0.5 with TABLE2: a match at t = 0.50 only
    ]


def test_cpd_ap_hand_computed():
    r = evaluate_cpd(hand_pairs(), hand_predictions())
    # 3 ground-truth boxes. t = 0.50, by score: TP, FP, TP, TP -> recall 1/3, 1/3, 2/3, 1 and precision
    # 1, 1/2, 2/3, 3/4; the envelope is 1 up to recall 1/3 and 3/4 after. Of the 101 recall points, 0.00..0.33
    # (34 points) read 1 and 0.34..1.00 (67 points) read 0.75: AP50 = (34 + 67 * 0.75) / 101.
    ap50 = (34 + 67 * 0.75) / 101
    assert r["ap50"] == pytest.approx(ap50)
    # t >= 0.55: TP, FP, TP, FP -> recall tops out at 2/3; the envelope reads 1 for 0.00..0.33 (34 points),
    # 2/3 for 0.34..0.66 (33 points) and 0 beyond (34 points): (34 + 33 * 2/3) / 101 = 56 / 101.
    assert r["ap75"] == pytest.approx(56 / 101)
    assert r["ap_by_threshold"]["0.95"] == pytest.approx(56 / 101)
    assert list(r["ap_by_threshold"]) == [f"{t:.2f}" for t in np.arange(0.5, 0.96, 0.05)]
    assert r["ap"] == pytest.approx((ap50 + 9 * 56 / 101) / 10)
    assert (r["num_pairs"], r["num_negative_pairs"], r["num_gt"], r["num_predictions"]) == (2, 1, 3, 4)
    assert r["by_subset"]["s1"]["ap"] == pytest.approx(r["ap"])


def test_cpd_perfect_and_all_false():
    pairs = hand_pairs()
    perfect = [
        CPDPrediction("A", "cat", CAT, 0.5),
        CPDPrediction("A", "table", TABLE1, 0.6),
        CPDPrediction("A", "table", TABLE2, 0.4),
    ]
    assert evaluate_cpd(pairs, perfect)["ap"] == pytest.approx(1.0)
    all_false = [
        CPDPrediction("B", "cat", CAT, 0.9),  # on the negative pair
        CPDPrediction("A", "cat", [100, 100, 10, 10], 0.8),  # no overlap
        CPDPrediction("A", "table", CAT, 0.7),  # the cat's box under the wrong phrase
    ]
    assert evaluate_cpd(pairs, all_false)["ap"] == 0.0
    assert evaluate_cpd(pairs, [])["ap"] == 0.0  # nothing predicted: recall 0 everywhere


def test_cpd_greedy_matching_counts_duplicates_as_false_positives():
    pairs = [CPDPair("A", {"p": [[0, 0, 10, 10], [100, 0, 10, 10]]})]
    preds = [
        CPDPrediction("A", "p", [0, 0, 10, 10], 0.9),
        CPDPrediction("A", "p", [0, 0, 10, 10], 0.8),  # its box is taken: FP
        CPDPrediction("A", "p", [100, 0, 10, 10], 0.7),
    ]
    # recall 1/2, 1/2, 1; precision 1, 1/2, 2/3 -> envelope 1 to recall 0.5 (51 points), then 2/3 (50 points).
    assert evaluate_cpd(pairs, preds)["ap"] == pytest.approx((51 + 50 * 2 / 3) / 101)


def test_cpd_keeps_the_100_best_per_pair():
    pairs = [CPDPair("A", {"p": [CAT]})]
    misses = [CPDPrediction("A", "p", [200, 200, 5, 5], 0.5) for _ in range(100)]
    late_hit = CPDPrediction("A", "p", CAT, 0.1)
    r = evaluate_cpd(pairs, [*misses, late_hit])
    assert r["ap"] == 0.0 and r["num_predictions_dropped"] == 1
    assert evaluate_cpd(pairs, [*misses, late_hit], max_detections=101)["ap"] > 0


def test_cpd_no_ground_truth_gives_no_ap():
    r = evaluate_cpd([CPDPair("N", {"p": []})], [CPDPrediction("N", "p", CAT, 0.9)])
    assert r["ap"] is None and r["num_gt"] == 0


def test_cpd_accepts_dicts():
    pairs = [{"id": 1, "phrases": {"p": [CAT]}, "subset": "x"}]
    preds = [{"pair_id": 1, "phrase_id": "p", "bbox": CAT, "score": 1}]
    assert evaluate_cpd(pairs, preds)["ap"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("pairs", "preds", "message"),
    [
        ([CPDPair("A", {"p": [CAT]})], [CPDPrediction("Z", "p", CAT, 1.0)], "unknown pair 'Z'"),
        ([CPDPair("A", {"p": [CAT]})], [CPDPrediction("A", "q", CAT, 1.0)], "unknown phrase 'q'"),
        ([CPDPair("A", {"p": [CAT]})], [CPDPrediction("A", "p", CAT, math.nan)], "finite"),
        ([CPDPair("A", {"p": [[0, 0, -1, 1]]})], [], "xywh"),
        ([CPDPair("A", {}), CPDPair("A", {})], [], "appears twice"),
        ([CPDPair("B", {"p": [CAT]}, positive_id="A"), CPDPair("A", {})], [], "has ground-truth boxes"),
        ([CPDPair("B", {"p": []}, positive_id="X")], [], "positive_id 'X'"),
    ],
)
def test_cpd_bad_input(pairs, preds, message):
    with pytest.raises(ValueError, match=message):
        evaluate_cpd(pairs, preds)


def test_average_precision_edges():
    assert average_precision([], [], 0) is None
    assert average_precision([], [], 3) == 0.0
    assert average_precision([0.3, 0.9], [True, True], 2) == 1.0
    assert average_precision([0.9], [True], 2) == pytest.approx(51 / 101)  # recall 0.5 at precision 1


def test_group_recall_at_1():
    # cat: A's 0.9 hit beats B's 0.85 -> 1; table: A's top 0.8 hits TABLE1 -> 1.
    r = group_recall_at_1(hand_pairs(), hand_predictions())
    assert (r["value"], r["count"]) == (1.0, 2)
    assert r["by_subset"]["s1"]["value"] == 1.0
    # The distractor's cat scores higher: cat fails, table still succeeds.
    assert group_recall_at_1(hand_pairs(), hand_predictions(negative_cat_score=0.95))["value"] == 0.5
    # A tie between a hit and the distractor earns half.
    assert group_recall_at_1(hand_pairs(), hand_predictions(negative_cat_score=0.9))["value"] == 0.75
    assert group_recall_at_1(hand_pairs(), [])["value"] == 0.0


def hand_official() -> dict:
    """`hand_pairs` in TRICD's own layout: "a cat on a table", true of image 1 ("7_0") and not of image 2
    ("7_1"), whose phrases have ids of their own and the same spans."""
    caption = "a cat on a table"
    spans = {"cat": [[0, 5]], "table": [[9, 16]]}
    image = {"caption": caption, "source": "coco_test2017", "coco_type": "relation", "subset": "s1"}
    images = [
        {**image, "id": 1, "positive": True, "original_id": "7_0", "phrases": {"1": spans["cat"], "2": spans["table"]}},
        {
            **image,
            "id": 2,
            "positive": False,
            "original_id": "7_1",
            "phrases": {"4": spans["table"], "3": spans["cat"]},
        },
    ]
    boxes = [(1, CAT), (2, TABLE1), (2, TABLE2)]
    annotations = [{"id": i + 1, "image_id": 1, "phrase_id": pid, "bbox": b} for i, (pid, b) in enumerate(boxes)]
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}


def test_official_layout_reads_as_the_same_pairs():
    gt = hand_official()
    pairs = official_pairs(gt)
    assert [(p.id, p.subset, p.positive_id) for p in pairs] == [(1, "s1", None), (2, "s1", 1)]
    assert pairs[0].phrases == {1: [tuple(CAT)], 2: [tuple(TABLE1), tuple(TABLE2)]}
    assert pairs[1].phrases == {1: [], 2: []}
    ids = {"A": 1, "B": 2}, {"cat": 1, "table": 2}, {"cat": 3, "table": 4}
    results: dict = {
        "1": {"scores": [], "boxes": [], "phrase_ids": []},
        "2": {"scores": [], "boxes": [], "phrase_ids": []},
    }
    for d in hand_predictions():
        x, y, w, h = d.box
        r = results[str(ids[0][d.pair_id])]
        r["scores"].append(d.score)
        r["boxes"].append([x, y, x + w, y + h])  # the official results hold x0, y0, x1, y1
        r["phrase_ids"].append((ids[1] if d.pair_id == "A" else ids[2])[d.phrase_id])
    preds = official_predictions(gt, results)
    assert evaluate_cpd(pairs, preds)["ap"] == pytest.approx(evaluate_cpd(hand_pairs(), hand_predictions())["ap"])
    assert group_recall_at_1(pairs, preds)["value"] == 1.0
    gt["images"][1]["phrases"]["3"] = [[1, 5]]
    with pytest.raises(ValueError, match="spans are not among"):
        official_pairs(gt)


# ------------------------------------------------------------------------------------------- Q-GroundCAM

BOX = [1, 1, 2, 2]  # rows 1-2, columns 1-2 of a 4 x 4 map


def test_box_mask_and_distance_map():
    m = box_mask((4, 4), BOX)
    assert m.sum() == 4 and m[1:3, 1:3].all()
    assert box_mask((4, 4), [2.6, 0, 10, 1]).sum() == 1  # clipped; only column 3's centre (3.5) is inside
    d = distance_map(box_mask((5, 5), [2, 2, 1, 1]))
    assert d[2, 2] == 0 and d[0, 0] == pytest.approx(math.sqrt(8)) and d[2, 4] == 2


def test_groundcam_perfect_map():
    r = groundcam_metrics(box_mask((4, 4), BOX).astype(float) * 3.0, BOX)  # any scale
    for key in ("soft_iou", "soft_dice", "binary_iou", "binary_dice", "pointing_game", "io_ratio"):
        assert r[key] == 1.0, key
    assert r["wdp_soft"] == 0.0 and r["wdp_binary"] == 0.0 and r["io_ratio_raw"] == math.inf
    assert r["pg_uncertain"] is False and r["num_peaks"] == 1  # the 4-pixel plateau is one peak after NMS


def test_groundcam_hand_computed():
    a = box_mask((4, 4), BOX).astype(float)
    a[0, 3] = 0.5  # spurious activation at a corner, distance sqrt(2) from the box: the farthest any pixel is
    r = groundcam_metrics(a, BOX)
    # soft: inter 4, sum(A) 4.5, sum(M) 4 -> IoU 4 / 4.5, Dice 8 / 8.5.
    assert r["soft_iou"] == pytest.approx(4 / 4.5) and r["soft_dice"] == pytest.approx(8 / 8.5)
    # binary (>= 0.5 keeps the corner): inter 4, sum(B) 5 -> IoU 4 / 5, Dice 8 / 9.
    assert r["binary_iou"] == pytest.approx(0.8) and r["binary_dice"] == pytest.approx(8 / 9)
    # WDP: the corner's normalised distance is 1; soft 0.5 * 1 / 4.5, binary 1 * 1 / 5.
    assert r["wdp_soft"] == pytest.approx(0.5 / 4.5) and r["wdp_binary"] == pytest.approx(0.2)
    # IO: inside mean 1, outside mean 0.5 / 12 -> raw 24, squashed 24 / 25.
    assert r["io_ratio_raw"] == pytest.approx(24) and r["io_ratio"] == pytest.approx(24 / 25)
    assert r["pointing_game"] == 1.0


def test_pointing_game_uncertainty():
    a = np.zeros((20, 100))
    box = [0, 0, 10, 10]
    a[5, 5] = a[5, 80] = 2.0  # two equal maxima 75 px apart, one inside, one outside
    r = groundcam_metrics(a, box)
    assert r["pg_uncertain"] is True and r["num_peaks"] == 2
    assert r["pointing_game"] == 0.5  # a random pick among the two maxima
    assert groundcam_metrics(a, box, nms_distance=100)["pg_uncertain"] is False  # the second is suppressed
    assert groundcam_metrics(a, box, top_k=1)["pg_uncertain"] is False
    a[5, 80] = 1.8  # 0.9 after normalisation: no longer tied with the top
    assert groundcam_metrics(a, box)["pg_uncertain"] is False
    assert groundcam_metrics(a, box, top_k=2)["pg_uncertain"] is True
    assert groundcam_metrics(a, box, tie_tolerance=0.15)["pg_uncertain"] is True


def test_local_maxima_rule():
    a = np.array([[0.0, 0.8, 0.8], [0.0, 0.0, 0.0], [0.9, 0.0, 0.6]])
    # The 0.8 plateau gives two maxima, 0.9 one; 0.6 is below the 0.7 threshold.
    assert sorted(map(tuple, local_maxima(a).tolist())) == [(0, 1), (0, 2), (2, 0)]


def test_groundcam_all_zero_map_and_whole_map_box():
    r = groundcam_metrics(np.zeros((4, 4)), BOX)
    assert r["soft_iou"] == 0.0 and r["pointing_game"] == 0.0 and r["pg_uncertain"] is False
    assert r["wdp_soft"] is None and r["io_ratio"] is None
    whole = groundcam_metrics(np.ones((4, 4)), [0, 0, 4, 4])
    assert whole["soft_iou"] == 1.0 and whole["wdp_soft"] == 0.0 and whole["io_ratio"] is None


@pytest.mark.parametrize(
    ("activation", "box", "message"),
    [
        (np.full((4, 4), -1.0), BOX, "non-negative"),
        (np.full((4, 4), np.nan), BOX, "finite"),
        (np.zeros((2, 2, 2)), BOX, "2D"),
        (np.ones((4, 4)), [10, 10, 2, 2], "covers no pixel"),
        (np.ones((4, 4)), [1, 1, 0, 2], "covers no pixel"),  # degenerate box
        (np.ones((4, 4)), [1, 1, 2], r"\[x, y, w, h\]"),
    ],
)
def test_groundcam_bad_input(activation, box, message):
    with pytest.raises(ValueError, match=message):
        groundcam_metrics(activation, box)


def test_normalize_map_and_aggregate():
    assert normalize_map([[0, 2], [4, 1]]).tolist() == [[0, 0.5], [1, 0.25]]
    perfect = groundcam_metrics(box_mask((4, 4), BOX).astype(float), BOX)
    empty = groundcam_metrics(np.zeros((4, 4)), BOX)
    agg = aggregate([perfect, empty])
    assert agg["num_samples"] == 2
    assert agg["soft_iou"] == {"mean": 0.5, "count": 2}
    assert agg["wdp_soft"] == {"mean": 0.0, "count": 1}  # None on the empty map is skipped
    assert agg["io_ratio_raw"]["count"] == 0  # inf and None are not averaged
    assert agg["pg_uncertainty"] == {"count": 0, "fraction": 0.0}
    assert aggregate([])["soft_iou"]["mean"] is None


# ------------------------------------------------------------------------------------------------ probes


def test_probe_accuracy_and_confidence():
    r = probe_accuracy(
        [
            ProbeSample("a", "probe_r/predicate", 2.0, 1.0),  # right
            ProbeSample("b", "probe_r/predicate", 1.0, 1.0),  # a tie is wrong (the paper: c1 > c2)
            {"id": "c", "kind": "probe_c/composition", "score_correct": 0.0, "score_swapped": 3.0},  # wrong
        ]
    )
    assert r["overall"]["accuracy"] == pytest.approx(1 / 3) and r["overall"]["count"] == 3
    sigmoid = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731  softmax of two = sigmoid of the gap
    pred = r["by_kind"]["probe_r/predicate"]
    assert pred["accuracy"] == 0.5
    assert pred["mean_confidence"] == pytest.approx((sigmoid(1.0) + 0.5) / 2)
    assert r["by_kind"]["probe_c/composition"]["mean_confidence"] == pytest.approx(sigmoid(-3.0))
    assert probe_accuracy([])["overall"] == {"accuracy": None, "mean_confidence": None, "count": 0}
    with pytest.raises(ValueError, match="finite"):
        probe_accuracy([ProbeSample("x", "k", math.inf, 0.0)])


def test_probe_group_scores():
    r = group_scores(
        [
            ProbeGroup("g1", "comp", ((0.9, 0.1), (0.2, 0.8))),  # text, image and group right
            {"id": "g2", "kind": "comp", "scores": [[0.5, 0.6], [0.4, 0.7]]},  # text right; prompt 1 prefers image 2
        ]
    )
    assert r["overall"] == {"text": 1.0, "image": 0.5, "group": 0.5, "count": 2}
    with pytest.raises(ValueError, match="2 x 2"):
        group_scores([{"id": "g", "kind": "k", "scores": [[1, 2, 3], [4, 5, 6]]}])


# --------------------------------------------------------------------------------------------- ImageCoDe


def test_imagecode_accuracy_video_and_static():
    ten = [0.0] * 10
    r = imagecode_accuracy(
        [
            ImageSet("v1", (*ten[:3], 5.0, *ten[4:]), target=3, is_video=True),  # right
            ImageSet("v2", (*ten[:3], 5.0, *ten[4:]), target=0, is_video=True),  # wrong
            {"id": "s1", "scores": [1.0, 3.0, 3.0, *ten[3:]], "target": 2, "is_video": False},  # tied with one: 1/2
            ImageSet("u", tuple(ten), target=9),  # constant scores: 1/10, and no video flag
        ]
    )
    assert r["all"]["accuracy"] == pytest.approx((1 + 0 + 0.5 + 0.1) / 4)
    assert r["all"]["chance"] == pytest.approx(0.1) and r["all"]["count"] == 4
    assert r["video"] == {"accuracy": 0.5, "chance": pytest.approx(0.1), "count": 2}
    assert r["static"]["accuracy"] == 0.5 and r["static"]["count"] == 1


def test_imagecode_without_flags_and_bad_input():
    assert set(imagecode_accuracy([ImageSet("u", (1.0, 0.0), 0)])) == {"all"}
    assert imagecode_accuracy([])["all"]["accuracy"] is None
    with pytest.raises(ValueError, match="target must be an index"):
        imagecode_accuracy([ImageSet("x", (1.0, 0.0), 2)])
    with pytest.raises(ValueError, match="at least 2"):
        imagecode_accuracy([ImageSet("x", (1.0,), 0)])
    with pytest.raises(ValueError, match="finite"):
        imagecode_accuracy([ImageSet("x", (1.0, math.nan), 0)])


def test_imagecode_reads_the_official_layout_and_scores_leaderboard_predictions(tmp_path):
    # ImageCoDe's layout: image-sets/<set>/img<k>.jpg, {set: {"k": description}}; k is a position in the
    # files sorted by number (img10 after img9), and "open-images" in the name marks static pictures
    for name, n in (("open-images-1_ab", 3), ("MSR-VTT-video1_0", 11)):
        (tmp_path / "image-sets" / name).mkdir(parents=True)
        for k in range(n):
            (tmp_path / "image-sets" / name / f"img{k}.jpg").write_bytes(b"")
    data = '{"open-images-1_ab": {"2": "a"}, "MSR-VTT-video1_0": {"10": "b", "3": "c"}}'
    (tmp_path / "valid_data.json").write_text(data)
    rows = read_official(tmp_path, "val")
    assert [(r["set"], r["target"], r["is_video"], len(r["images"])) for r in rows] == [
        ("open-images-1_ab", 2, False, 3), ("MSR-VTT-video1_0", 10, True, 11), ("MSR-VTT-video1_0", 3, True, 11)
    ]  # fmt: skip
    assert rows[1]["images"][10].endswith("img10.jpg") and rows[1]["images"][2].endswith("img2.jpg")
    r = prediction_accuracy({"open-images-1_ab": [2], "MSR-VTT-video1_0": [10, 0]}, rows)
    assert r["all"]["accuracy"] == pytest.approx(2 / 3) and r["static"]["accuracy"] == 1.0
    assert r["video"] == {"accuracy": 0.5, "chance": pytest.approx(1 / 11), "count": 2}
    with pytest.raises(ValueError, match="no prediction"):
        prediction_accuracy({"open-images-1_ab": [2]}, rows)
    with pytest.raises(ValueError, match="2 description"):
        prediction_accuracy({"open-images-1_ab": [2], "MSR-VTT-video1_0": [10]}, rows)
    with pytest.raises(ValueError, match=r"index in 0\.\.2"):
        prediction_accuracy({"open-images-1_ab": [3], "MSR-VTT-video1_0": [1, 1]}, rows)
