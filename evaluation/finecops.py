"""FineCops-Ref metrics: Precision@1, Recall@1 over negative-positive pairs, AUROC.

Implements the evaluation metrics of FineCops-Ref (the FineCops-Ref paper, Liu et al.),
reading the COCO file a hardneg run writes (`splits/<split>/coco.json`).

Ground truth (the COCO file): one `images[]` entry per sample, whose id is the sample id, and exactly one
`annotations[]` entry per image with `bbox` (xywh), `level` and `tuple_type`; negatives also carry
`negative_type`, `negative_level`, `positive_id` and `negative_cate`. A sample without `negative_type` is positive.

Predictions: one object per sample,

    {"id": 123, "boxes": [[x, y, w, h], ...], "scores": [0.91, ...]}

with `id` the sample id (the COCO image id), boxes in xywh pixels of that sample's image, and one confidence per
box (any real scale, e.g. probabilities or summed log-probabilities: only the order matters). `boxes` may be
empty: the model found nothing. Give them as a list, a JSON array file or a JSON Lines file (one object a line).
A sample with no prediction object counts as one with no boxes, and the result says how many there were.

Metrics (all as fractions in [0, 1]; `to_markdown` shows percentages like the paper):

- **Precision@1** on positives: the top-scored box hits when IoU >= 0.5 with the target; no box is a miss.
  Per level, overall, and the mean over levels (the paper's "Avg." column).
- **Recall@1** per negative-positive pair: pool the boxes predicted for the positive and for its negative, rank
  by confidence; success when the top box is one of the positive's and has IoU >= 0.5 with the positive's target
  (a negative has no target, so its boxes never hit). Per negative type x level, per type, per level, overall,
  the mean over type x level cells (the paper's "Avg."), and the same within each `negative_cate`.
- **AUROC** of each sample's maximum confidence, negatives against their positives (the positives named by the
  negatives' `positive_id`, each counted once), positives being the class that should score higher. A sample
  with no box has confidence -inf. Same breakdown as Recall@1.

Ties: when several boxes share the top confidence, the credit is the expected success under a uniformly random
pick among them (e.g. a positive box that hits tied with a negative box scores 0.5), matching AUROC's
averaged ties. So a model that gives every box the same confidence gets chance-level credit, not a free win.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.evaluation.boxes import iou_xywh
from hardneg.evaluation.finecops_inputs import (
    NEGATIVE_KEYS,
    Prediction,
    Sample,
    SampleId,
    load_coco,
    load_predictions,
    parse_prediction,
)

# Reading the COCO file and the predictions lives in evaluation/finecops_inputs.py; this module stays
# the public home of its names.
__all__ = [
    "CATE_ORDER",
    "IOU_THRESHOLD",
    "NEGATIVE_KEYS",
    "TYPE_ORDER",
    "Cell",
    "Prediction",
    "Sample",
    "SampleId",
    "auroc",
    "average_ranks",
    "evaluate",
    "load_coco",
    "load_predictions",
    "main",
    "parse_prediction",
    "to_markdown",
    "top1_credit",
]

IOU_THRESHOLD = 0.5  # FineCops-Ref: a box is correct at IoU >= 0.5 with the target
# The paper's column order; types not listed here follow alphabetically.
CATE_ORDER = ("text", "image")  # negative_cate values; others follow alphabetically
TYPE_ORDER = ("replace_object", "replace_attribute", "replace_relation", "swap_object", "swap_attribute", "flip")

Cell = dict[str, Any]  # {"value": float | None, "count": int, ...}


# ---------------------------------------------------------------------------------------------- metrics


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """1-based ranks of `values`, ties given the mean of the ranks they span (-inf ties with -inf)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n == 0:
        return np.zeros(0)
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    new_group = np.r_[True, sx[1:] != sx[:-1]]
    starts = np.flatnonzero(new_group)
    ends = np.r_[starts[1:], n]  # exclusive
    mean_rank = (starts + ends - 1) / 2.0 + 1.0
    ranks = np.empty(n)
    ranks[order] = mean_rank[np.cumsum(new_group) - 1]
    return ranks


def auroc(positive_scores: Sequence[float], negative_scores: Sequence[float]) -> float | None:
    """Area under the ROC curve with positives as the higher class, by the rank (Mann-Whitney U) formula:
    P(pos > neg) + 0.5 P(pos == neg) over all pairs. None when either class is empty."""
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        return None
    if np.isnan(pos).any() or np.isnan(neg).any():
        raise ValueError("auroc: scores must not be NaN")
    ranks = average_ranks(np.r_[pos, neg])
    n_pos, n_neg = pos.size, neg.size
    u = ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def top1_credit(entries: Sequence[tuple[float, float]]) -> float:
    """Expected credit of the top-confidence entry of (confidence, credit) pairs, ties broken uniformly at random.
    No entries: 0 (nothing predicted is a miss)."""
    if not entries:
        return 0.0
    top = max(s for s, _ in entries)
    tied = [c for s, c in entries if s == top]
    return sum(tied) / len(tied)


def _hits(pred: Prediction, target: Sequence[float], iou_threshold: float) -> list[tuple[float, float]]:
    pairs = zip(pred.boxes, pred.scores, strict=True)
    return [(s, 1.0 if iou_xywh(b, target) >= iou_threshold else 0.0) for b, s in pairs]


def _level_key(level: Any) -> str:
    return str(level)


def _sorted_types(types: Iterable[str]) -> list[str]:
    rank = {t: i for i, t in enumerate(TYPE_ORDER)}
    return sorted(set(types), key=lambda t: (rank.get(t, len(rank)), t))


def _sorted_levels(levels: Iterable[str]) -> list[str]:
    return sorted(set(levels), key=lambda v: (0, int(v), v) if v.lstrip("-").isdigit() else (1, 0, v))


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _breakdown(negatives: list[Sample], cell: Callable[[list[Sample]], Cell]) -> dict[str, Any]:
    """A metric over negatives, overall and by type, level and type x level."""
    by_type: dict[str, list[Sample]] = defaultdict(list)
    by_level: dict[str, list[Sample]] = defaultdict(list)
    by_type_level: dict[str, dict[str, list[Sample]]] = defaultdict(lambda: defaultdict(list))
    for s in negatives:
        t, lv = str(s.negative_type), _level_key(s.negative_level)
        by_type[t].append(s)
        by_level[lv].append(s)
        by_type_level[t][lv].append(s)
    type_level = {
        t: {lv: cell(by_type_level[t][lv]) for lv in _sorted_levels(by_type_level[t])}
        for t in _sorted_types(by_type_level)
    }
    return {
        "overall": cell(negatives),
        # The paper's "Avg.": the unweighted mean of the type x level cells.
        "mean_over_type_level": _mean(c["value"] for lv in type_level.values() for c in lv.values()),
        "by_type": {t: cell(by_type[t]) for t in _sorted_types(by_type)},
        "by_level": {lv: cell(by_level[lv]) for lv in _sorted_levels(by_level)},
        "by_type_level": type_level,
    }


def evaluate(
    coco: str | Path | Mapping[str, Any] | Mapping[SampleId, Sample],
    predictions: str | Path | Iterable[Mapping[str, Any]] | Mapping[SampleId, Prediction],
    *,
    iou_threshold: float = IOU_THRESHOLD,
) -> dict[str, Any]:
    """Precision@1, Recall@1 and AUROC of `predictions` on the samples of `coco` (see the module docstring).

    `coco` is a path, a loaded COCO dict or the output of `load_coco`; `predictions` a path, a list of prediction
    objects or the output of `load_predictions`. Returns plain JSON-ready dicts; a cell is
    `{"value": fraction or None when empty, "count": n}` (AUROC cells add `"positives"`).
    """
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"iou_threshold must be in [0, 1], got {iou_threshold}")
    samples = coco if _is_loaded(coco, Sample) else load_coco(coco)  # type: ignore[arg-type]
    preds = predictions if _is_loaded(predictions, Prediction) else load_predictions(predictions)  # type: ignore[arg-type]
    unknown = [pid for pid in preds if pid not in samples]
    if unknown:
        raise ValueError(f"predictions for ids not in the COCO file: {[str(u) for u in unknown[:5]]}")
    empty = Prediction(None)

    def pred(sid: SampleId) -> Prediction:
        return preds.get(sid, empty)

    positives = [s for s in samples.values() if not s.is_negative]
    negatives = [s for s in samples.values() if s.is_negative]

    # Precision@1 on positives, per level.
    precision = {s.id: top1_credit(_hits(pred(s.id), s.box, iou_threshold)) for s in positives}
    by_level: dict[str, list[float]] = defaultdict(list)
    for s in positives:
        by_level[_level_key(s.level)].append(precision[s.id])
    level_cells = {lv: _mean_cell(by_level[lv]) for lv in _sorted_levels(by_level)}

    # Recall@1 per negative-positive pair: the positive's boxes (which may hit) pooled with the negative's (never).
    recall: dict[SampleId, float] = {}
    for s in negatives:
        pos = samples[s.positive_id]
        pooled = _hits(pred(pos.id), pos.box, iou_threshold) + [(sc, 0.0) for sc in pred(s.id).scores]
        recall[s.id] = top1_credit(pooled)

    def recall_cell(group: list[Sample]) -> Cell:
        return _mean_cell([recall[s.id] for s in group])

    def auroc_cell(group: list[Sample]) -> Cell:
        pos_ids = list(dict.fromkeys(s.positive_id for s in group))  # each positive once, in first-seen order
        value = auroc([pred(p).max_score for p in pos_ids], [pred(s.id).max_score for s in group])
        return {"value": value, "count": len(group), "positives": len(pos_ids)}

    cate_rank = {c: i for i, c in enumerate(CATE_ORDER)}
    cates = sorted({str(s.negative_cate) for s in negatives}, key=lambda c: (cate_rank.get(c, len(cate_rank)), c))

    def per_cate(cell: Callable[[list[Sample]], Cell]) -> dict[str, Any]:
        out = _breakdown(negatives, cell)
        out["by_cate"] = {c: _breakdown([s for s in negatives if str(s.negative_cate) == c], cell) for c in cates}
        return out

    return {
        "iou_threshold": iou_threshold,
        "counts": {
            "positives": len(positives),
            "negatives": len(negatives),
            "predictions": len(preds),
            "missing_predictions": sum(1 for sid in samples if sid not in preds),
        },
        "precision_at_1": {
            "overall": _mean_cell(list(precision.values())),
            "mean_over_levels": _mean(c["value"] for c in level_cells.values()),  # the paper's "Avg."
            "by_level": level_cells,
        },
        "recall_at_1": per_cate(recall_cell),
        "auroc": per_cate(auroc_cell),
    }


def _is_loaded(obj: object, kind: type) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(isinstance(v, kind) for v in obj.values())


def _mean_cell(values: list[float]) -> Cell:
    return {"value": sum(values) / len(values) if values else None, "count": len(values)}


# ---------------------------------------------------------------------------------------------- report


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _breakdown_table(b: Mapping[str, Any]) -> list[str]:
    levels = _sorted_levels(lv for t in b["by_type_level"].values() for lv in t)
    head = ["negative type", *(f"L{lv}" for lv in levels), "all", "n"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for t, per_level in b["by_type_level"].items():
        vals = [_pct(per_level[lv]["value"]) if lv in per_level else "-" for lv in levels]
        whole = b["by_type"][t]
        rows.append(f"| {t} | " + " | ".join(vals) + f" | {_pct(whole['value'])} | {whole['count']} |")
    vals = [_pct(b["by_level"][lv]["value"]) for lv in levels]
    rows.append("| **all** | " + " | ".join(vals) + f" | {_pct(b['overall']['value'])} | {b['overall']['count']} |")
    rows.append(f"\nMean over type x level cells (the paper's Avg.): {_pct(b['mean_over_type_level'])}")
    return rows


def to_markdown(result: Mapping[str, Any]) -> str:
    """The result of `evaluate` as Markdown tables, values in percent with two decimals ("-" for empty)."""
    c = result["counts"]
    p = result["precision_at_1"]
    lines = [
        f"FineCops-Ref evaluation: {c['positives']} positives, {c['negatives']} negatives, "
        f"{c['missing_predictions']} samples without predictions; IoU >= {result['iou_threshold']}.",
        "",
        "## Precision@1 (positives)",
        "",
        "| level | Precision@1 | n |",
        "|---|---|---|",
    ]
    lines += [f"| L{lv} | {_pct(cell['value'])} | {cell['count']} |" for lv, cell in p["by_level"].items()]
    lines += [
        f"| **all** | {_pct(p['overall']['value'])} | {p['overall']['count']} |",
        "",
        f"Mean over levels (the paper's Avg.): {_pct(p['mean_over_levels'])}",
    ]
    for key, title in (("recall_at_1", "Recall@1 (negative-positive pairs)"), ("auroc", "AUROC (max confidence)")):
        block = result[key]
        lines += ["", f"## {title}", "", *_breakdown_table(block)]
        for cate, sub in block["by_cate"].items():
            lines += ["", f"### {title.split(' ')[0]}, {cate} negatives", "", *_breakdown_table(sub)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.finecops",
        description="FineCops-Ref metrics (Precision@1, Recall@1, AUROC) of predictions on a hardneg COCO file.",
    )
    parser.add_argument("--coco", required=True, type=Path, help="splits/<split>/coco.json of a hardneg run")
    parser.add_argument("--predictions", required=True, type=Path, help="JSON array or JSON Lines of predictions")
    parser.add_argument("--out", type=Path, help="also write the full result here as JSON")
    parser.add_argument("--iou", type=float, default=IOU_THRESHOLD, help="IoU threshold (default 0.5)")
    args = parser.parse_args(argv)
    try:
        result = evaluate(args.coco, args.predictions, iou_threshold=args.iou)
    except (ValueError, OSError, json.JSONDecodeError) as e:
        parser.error(str(e))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(to_markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
