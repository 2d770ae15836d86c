"""TRICD contextual phrase detection (CPD): AP over IoU 0.50:0.95, and Group-Recall@1.

Implements the contextual phrase detection metric and the Group-Recall@1 of TRICD (the TRICD paper, "TRICD: Testing
Robust Image Understanding Through Contextual Phrase Detection").

Inputs (dataclasses, or dicts of the same shape):

- `CPDPair(id, phrases, subset=None, positive_id=None)`: one image-caption pair. `phrases` maps every phrase id
  of the caption to its ground-truth boxes (xywh pixels), e.g. `{"p0": [[10, 20, 50, 40]], "p1": []}`. A
  negative pair (a distractor image with the same caption) lists the same phrases with no boxes and may name
  its positive pair in `positive_id` (used by Group-Recall@1 only). `subset` (e.g. "coco_objects") gives an
  AP per subset. Dict form: `{"id", "phrases", "subset"?, "positive_id"?}`.
- `CPDPrediction(pair_id, phrase_id, box, score)`: one predicted box for one phrase of one pair.
  Dict form: `{"pair_id", "phrase_id", "bbox", "score"}`. Phrase ids must be among the pair's phrases
  (compared with ==, so "0" and 0 differ: JSON object keys are strings).

AP, as in the paper: per pair, sort the predictions by decreasing score and keep the 100 best; greedily match
each, in that order, to the unmatched ground-truth box of the same phrase with the highest IoU, if that IoU is
>= t (COCO's convention for "higher than t"); matched predictions are true positives, the rest false positives,
and unmatched boxes false negatives. Every prediction on a negative pair is therefore a false positive. Phrase ids
are used only for matching: all predictions of the dataset make one precision-recall curve. AP is COCO's
101-point interpolated AP (precision made monotone, sampled at recall 0, 0.01, ..., 1; recall levels never
reached count as precision 0), averaged over t = 0.50, 0.55, ..., 0.95. Predictions with equal scores keep
their input order (a stable sort, as pycocotools does), so ties are deterministic.

Group-Recall@1: for each phrase of a positive pair that has boxes, pool the predictions for that
phrase on the positive pair and on every negative pair naming it as `positive_id`; success when the top-scored
one is on the positive pair with IoU >= 0.5 with any of the phrase's boxes. Tied top scores earn the expected
success of a uniformly random pick among them.

TRICD's own layout (the official annotations file, and the export's `TRICD_grounding_<split>.json`) reads
in through `official_pairs` and `official_predictions`: each image record is a pair (its integer `id`), a
negative's positive is the positive record of its group (`original_id` "N_k") with the same caption, and a
negative's phrases take its positive's phrase ids, matched by character span as the official code matches
them, so Group-Recall@1 pools them. The official Group-Recall@1 pairs a positive with one negative ("N_1"
for "N_0"); here every negative of the group counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hardneg.evaluation.boxes import check_box, iou_xywh
from hardneg.evaluation.numbers import finite_number

IOU_THRESHOLDS: tuple[float, ...] = tuple(float(t) for t in np.linspace(0.5, 0.95, 10))  # COCO's 0.50:0.05:0.95
RECALL_POINTS = 101  # COCO's interpolated AP
MAX_DETECTIONS = 100  # TRICD: keep the 100 most confident predictions per image-caption pair
GROUP_RECALL_IOU = 0.5

Box4 = tuple[float, float, float, float]


@dataclass(frozen=True, slots=True)
class CPDPair:
    """One image-caption pair: every phrase id with its ground-truth boxes (none on a negative pair)."""

    id: Hashable
    phrases: Mapping[Hashable, Sequence[Box4]] = field(default_factory=dict)
    subset: str | None = None
    positive_id: Hashable | None = None  # a negative pair: the positive pair whose caption it shares

    @property
    def num_boxes(self) -> int:
        return sum(len(b) for b in self.phrases.values())


@dataclass(frozen=True, slots=True)
class CPDPrediction:
    """One predicted box (xywh) for one phrase of one pair, with its confidence."""

    pair_id: Hashable
    phrase_id: Hashable
    box: Box4
    score: float


def _coerce_pair(obj: CPDPair | Mapping[str, Any]) -> CPDPair:
    if isinstance(obj, CPDPair):
        pid, phrases, subset, positive_id = obj.id, obj.phrases, obj.subset, obj.positive_id
    elif isinstance(obj, Mapping) and "id" in obj:
        pid, phrases, subset, positive_id = obj["id"], obj.get("phrases", {}), obj.get("subset"), obj.get("positive_id")
    else:
        raise ValueError(f"pair: a CPDPair or a dict with 'id' and 'phrases' expected, got {obj!r:.200}")
    if not isinstance(phrases, Mapping):
        raise ValueError(f"pair {pid!r}: 'phrases' must map phrase ids to lists of boxes")
    checked = {ph: tuple(check_box(b, f"pair {pid!r} phrase {ph!r}") for b in boxes) for ph, boxes in phrases.items()}
    return CPDPair(pid, checked, subset, positive_id)


def _coerce_prediction(obj: CPDPrediction | Mapping[str, Any]) -> CPDPrediction:
    if isinstance(obj, CPDPrediction):
        pair_id, phrase_id, box, score = obj.pair_id, obj.phrase_id, obj.box, obj.score
    elif isinstance(obj, Mapping) and {"pair_id", "phrase_id", "bbox", "score"} <= obj.keys():
        pair_id, phrase_id, box, score = obj["pair_id"], obj["phrase_id"], obj["bbox"], obj["score"]
    else:
        raise ValueError(
            f"prediction: a CPDPrediction or a dict with pair_id, phrase_id, bbox, score expected, got {obj!r:.200}"
        )
    what = f"prediction for pair {pair_id!r} phrase {phrase_id!r}"
    value = finite_number(score, f"{what}: score")
    return CPDPrediction(pair_id, phrase_id, check_box(box, what), value)


def _prepare(
    pairs: Iterable[CPDPair | Mapping[str, Any]], predictions: Iterable[CPDPrediction | Mapping[str, Any]]
) -> tuple[dict[Hashable, CPDPair], dict[Hashable, list[CPDPrediction]]]:
    by_id: dict[Hashable, CPDPair] = {}
    for raw in pairs:
        p = _coerce_pair(raw)
        if p.id in by_id:
            raise ValueError(f"pair {p.id!r} appears twice")
        by_id[p.id] = p
    for p in by_id.values():
        if p.positive_id is None:
            continue
        if p.positive_id not in by_id:
            raise ValueError(f"pair {p.id!r} names positive_id {p.positive_id!r}, not among the pairs")
        if p.num_boxes:
            raise ValueError(f"pair {p.id!r} names a positive_id, so it is negative, but has ground-truth boxes")
    preds: dict[Hashable, list[CPDPrediction]] = defaultdict(list)
    for raw in predictions:
        d = _coerce_prediction(raw)
        pair = by_id.get(d.pair_id)
        if pair is None:
            raise ValueError(f"prediction for unknown pair {d.pair_id!r}")
        if d.phrase_id not in pair.phrases:
            raise ValueError(f"prediction for pair {d.pair_id!r} names unknown phrase {d.phrase_id!r}")
        preds[d.pair_id].append(d)
    return by_id, preds


def average_precision(scores: Sequence[float], true_positive: Sequence[bool], num_gt: int) -> float | None:
    """COCO's 101-point interpolated AP of one precision-recall curve; None when there is no ground truth.

    `scores` and `true_positive` describe every kept prediction of the dataset; ties keep their given order.
    """
    if len(scores) != len(true_positive):
        raise ValueError(f"average_precision: {len(scores)} scores but {len(true_positive)} flags")
    if num_gt <= 0:
        return None
    if len(scores) == 0:
        return 0.0
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="mergesort")
    tp = np.asarray(true_positive, dtype=bool)[order]
    tp_cum = np.cumsum(tp)
    fp_cum = np.cumsum(~tp)
    recall = tp_cum / num_gt
    precision = tp_cum / (tp_cum + fp_cum)
    # The precision envelope: the best precision at this recall or any higher one.
    precision = np.maximum.accumulate(precision[::-1])[::-1]
    points = np.linspace(0.0, 1.0, RECALL_POINTS)
    idx = np.searchsorted(recall, points, side="left")
    sampled = np.where(idx < len(precision), precision[np.minimum(idx, len(precision) - 1)], 0.0)
    return float(sampled.mean())


def _match_pair(pair: CPDPair, kept: list[CPDPrediction], thresholds: Sequence[float]) -> np.ndarray:
    """True-positive flags (thresholds x predictions) of one pair's kept predictions, greedy in score order."""
    flags = np.zeros((len(thresholds), len(kept)), dtype=bool)
    ious = [[iou_xywh(d.box, g) for g in pair.phrases[d.phrase_id]] for d in kept]
    for ti, t in enumerate(thresholds):
        matched: set[tuple[Hashable, int]] = set()
        for di, d in enumerate(kept):
            best, best_iou = -1, -1.0
            for gi, v in enumerate(ious[di]):
                if v >= t and v > best_iou and (d.phrase_id, gi) not in matched:
                    best, best_iou = gi, v
            if best >= 0:
                matched.add((d.phrase_id, best))
                flags[ti, di] = True
    return flags


def _kept(preds: list[CPDPrediction], max_detections: int) -> list[CPDPrediction]:
    return sorted(preds, key=lambda d: -d.score)[:max_detections]  # sorted() is stable: ties keep input order


def _ap_block(
    pairs: list[CPDPair], preds: Mapping[Hashable, list[CPDPrediction]], thresholds: Sequence[float], max_det: int
) -> dict[str, Any]:
    scores: list[float] = []
    flags: list[np.ndarray] = []
    dropped = 0
    for pair in pairs:
        all_preds = preds.get(pair.id, [])
        kept = _kept(all_preds, max_det)
        dropped += len(all_preds) - len(kept)
        scores += [d.score for d in kept]
        flags.append(_match_pair(pair, kept, thresholds))
    tp = np.concatenate(flags, axis=1) if flags else np.zeros((len(thresholds), 0), dtype=bool)
    num_gt = sum(p.num_boxes for p in pairs)
    per_t = {f"{t:.2f}": average_precision(scores, tp[i], num_gt) for i, t in enumerate(thresholds)}
    values = [v for v in per_t.values() if v is not None]
    return {
        "ap": sum(values) / len(values) if values else None,
        "ap50": per_t.get("0.50"),
        "ap75": per_t.get("0.75"),
        "ap_by_threshold": per_t,
        "num_pairs": len(pairs),
        "num_negative_pairs": sum(1 for p in pairs if p.num_boxes == 0),
        "num_gt": num_gt,
        "num_predictions": len(scores),
        "num_predictions_dropped": dropped,  # beyond the 100 best of their pair
    }


def evaluate_cpd(
    pairs: Iterable[CPDPair | Mapping[str, Any]],
    predictions: Iterable[CPDPrediction | Mapping[str, Any]],
    *,
    iou_thresholds: Sequence[float] = IOU_THRESHOLDS,
    max_detections: int = MAX_DETECTIONS,
) -> dict[str, Any]:
    """Contextual phrase detection AP (see the module docstring), overall and per subset.

    Returns `{"ap", "ap50", "ap75", "ap_by_threshold", "num_pairs", "num_negative_pairs", "num_gt",
    "num_predictions", "num_predictions_dropped", "by_subset": {subset: the same keys}}`; AP is None when the
    pairs have no ground-truth box at all (AP is undefined without positives).
    """
    if not iou_thresholds or any(not 0.0 <= t <= 1.0 for t in iou_thresholds):
        raise ValueError(f"iou_thresholds must be non-empty values in [0, 1], got {iou_thresholds!r}")
    if max_detections < 1:
        raise ValueError(f"max_detections must be >= 1, got {max_detections}")
    by_id, preds = _prepare(pairs, predictions)
    all_pairs = list(by_id.values())
    out = _ap_block(all_pairs, preds, iou_thresholds, max_detections)
    subsets = sorted({p.subset for p in all_pairs if p.subset is not None})
    out["by_subset"] = {
        s: _ap_block([p for p in all_pairs if p.subset == s], preds, iou_thresholds, max_detections) for s in subsets
    }
    return out


def group_recall_at_1(
    pairs: Iterable[CPDPair | Mapping[str, Any]],
    predictions: Iterable[CPDPrediction | Mapping[str, Any]],
    *,
    iou_threshold: float = GROUP_RECALL_IOU,
) -> dict[str, Any]:
    """TRICD's Group-Recall@1 (see the module docstring): `{"value", "count", "by_subset": {s: {...}}}`,
    `count` being the number of (positive pair, phrase with boxes) groups; value None when there are none."""
    by_id, preds = _prepare(pairs, predictions)
    negatives_of: dict[Hashable, list[Hashable]] = defaultdict(list)
    for p in by_id.values():
        if p.positive_id is not None:
            negatives_of[p.positive_id].append(p.id)
    credits: dict[str | None, list[float]] = defaultdict(list)
    for pair in by_id.values():
        if pair.positive_id is not None:
            continue
        for phrase, gts in pair.phrases.items():
            if not gts:
                continue
            pooled = [
                (d.score, 1.0 if any(iou_xywh(d.box, g) >= iou_threshold for g in gts) else 0.0)
                for d in preds.get(pair.id, [])
                if d.phrase_id == phrase
            ]
            pooled += [(d.score, 0.0) for n in negatives_of[pair.id] for d in preds.get(n, []) if d.phrase_id == phrase]
            if pooled:
                top = max(s for s, _ in pooled)
                tied = [c for s, c in pooled if s == top]
                credit = sum(tied) / len(tied)
            else:
                credit = 0.0  # nothing predicted for the phrase: a miss
            credits[pair.subset].append(credit)

    def cell(values: list[float]) -> dict[str, Any]:
        return {"value": sum(values) / len(values) if values else None, "count": len(values)}

    everything = [c for v in credits.values() for c in v]
    return {**cell(everything), "by_subset": {s: cell(credits[s]) for s in sorted(k for k in credits if k is not None)}}


# -- TRICD's own layout --------------------------------------------------------------------------------


def _official_subset(img: Mapping[str, Any]) -> str | None:
    """The export's own subset when it has one, else the official code's phrase type."""
    if img.get("subset") is not None:
        return str(img["subset"])
    if img.get("source") == "coco_test2017":
        return "coco_obj" if img.get("coco_type") == "object" else "coco_rel"
    return img.get("source")


def _official_links(gt: Mapping[str, Any]) -> dict[int, tuple[int, dict[int, int]]]:
    """Per negative image id: its positive's image id and {its phrase id: the positive's phrase id}."""
    positives: dict[tuple[Any, str, str], Mapping[str, Any]] = {}
    for img in gt["images"]:
        if img["positive"]:
            positives[(img.get("source"), str(img["original_id"]).split("_")[0], img["caption"])] = img
    out: dict[int, tuple[int, dict[int, int]]] = {}
    for img in gt["images"]:
        if img["positive"]:
            continue
        pos = positives.get((img.get("source"), str(img["original_id"]).split("_")[0], img["caption"]))
        if pos is None:
            raise ValueError(f"image {img['id']}: no positive image of its group has its caption")
        by_span = {str(spans): int(pid) for pid, spans in pos["phrases"].items()}
        try:
            out[int(img["id"])] = (int(pos["id"]), {int(k): by_span[str(v)] for k, v in img["phrases"].items()})
        except KeyError:
            raise ValueError(f"image {img['id']}: a phrase's spans are not among its positive's") from None
    return out


def official_pairs(gt: Mapping[str, Any]) -> list[CPDPair]:
    """The pairs of a file in TRICD's own layout (`{"images", "annotations", "categories"}`)."""
    boxes: dict[int, list[Box4]] = defaultdict(list)
    for a in gt["annotations"]:
        boxes[int(a["phrase_id"])].append(check_box(a["bbox"], f"annotation {a.get('id')!r}"))
    links = _official_links(gt)
    out = []
    for img in gt["images"]:
        iid = int(img["id"])
        if iid in links:
            positive, pids = links[iid]
            phrases: dict[Hashable, Sequence[Box4]] = {pids[int(k)]: [] for k in img["phrases"]}
        else:
            positive, phrases = None, {int(k): boxes[int(k)] for k in img["phrases"]}
        out.append(CPDPair(iid, phrases, _official_subset(img), positive))
    return out


def official_predictions(gt: Mapping[str, Any], results: Mapping[str, Any]) -> list[CPDPrediction]:
    """Predictions in the official results layout, `{image id: {"scores", "boxes" (x0, y0, x1, y1),
    "phrase_ids"}}`, as `CPDPrediction`s on `official_pairs(gt)` (xywh boxes, a negative's phrase ids
    mapped to its positive's)."""
    links = _official_links(gt)
    out = []
    for key, datum in results.items():
        iid = int(key)
        mapped = links[iid][1] if iid in links else None
        if not len(datum["scores"]) == len(datum["boxes"]) == len(datum["phrase_ids"]):
            raise ValueError(f"results for image {key!r}: scores, boxes and phrase_ids differ in length")
        for score, (x0, y0, x1, y1), pid in zip(datum["scores"], datum["boxes"], datum["phrase_ids"], strict=True):
            phrase = int(pid) if mapped is None else mapped.get(int(pid), int(pid))
            out.append(CPDPrediction(iid, phrase, (x0, y0, x1 - x0, y1 - y0), score))
    return out
