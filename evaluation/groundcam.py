"""Q-GroundCAM: grounding metrics of an activation map (e.g. GradCAM) against a ground-truth box.

Implements the metrics of Q-GroundCAM (the Q-GroundCAM paper, Rajabi and Kosecka, "Q-GroundCAM: Quantifying
Grounding in Vision Language Models via GradCAM"). The paper's equations are
images in our copy, so where the text leaves a choice it is stated here (and in the hardneg README).

Inputs: an activation map `A` (2D, any non-negative scale) and a box `[x, y, w, h]` in the map's pixels.

- **Normalisation**: `A` is divided by its maximum, so the strongest activation is 1.0 (the paper's figures show
  top activations "with a value of 1.0"). An all-zero map stays zero.
- **Box mask** `M`: pixels whose centre lies inside the box (for integer boxes: columns x .. x+w-1, rows
  y .. y+h-1), clipped to the map. A box covering no pixel is an error.
- **Soft IoU / Dice**: the semantic-segmentation formulas on the continuous map,
  IoU = sum(A*M) / (sum(A) + sum(M) - sum(A*M)), Dice = 2 sum(A*M) / (sum(A) + sum(M)).
  **Binary IoU / Dice**: the same on `A >= 0.5`.
- **Distance map** `D`: Euclidean distance, in pixels, from each pixel to the nearest pixel of the box mask
  (0 inside), as the paper's D_ij over all 0 <= i < H, 0 <= j < W.
- **WDP** (weighted distance penalty): activation weighted by its distance to the box, normalised to [0, 1]:
  WDP = sum(A * D / max(D)) / sum(A). Only activation outside the box adds to it; 0 when all of it is inside, 1 if
  it all sat on the farthest pixel. Reported for the soft map (`wdp_soft`) and the binary one (`wdp_binary`),
  like the paper's two WDP columns. The paper's exact normalisation of WDP is not recoverable from the
  text, so our values are not comparable with the ones it reports; lower is better either way.
- **IO ratio**: mean activation inside the box over mean activation outside, `io_ratio_raw`, and squashed to
  [0, 1] as sigmoid(log(ratio)) = inside / (inside + outside), `io_ratio` (the paper's "LogSig" column; 0.5
  means no preference for the box, 1 all activation inside). Means, not sums, so the box's size does not decide it.
- **Pointing game**: is the maximum inside the box. When several pixels share the maximum (plateaus of upsampled
  maps), the credit is the fraction of them inside: the expected hit of a random pick. An all-zero map points
  nowhere: 0.
- **Pointing-game uncertainty** (the paper's Scenario 1): local maxima of the normalised map are the pixels that
  are >= all of their 8 neighbours and > 0.7 (the paper's activation threshold tau); sorted by value (ties in
  row-major order), a peak is suppressed when within Euclidean distance 50 px (the paper's delta) of a kept one
  (NMS). The top-k peaks are, by default, those equal to the highest kept value (the "top-k equal activations"
  of the paper; pass `top_k` for a fixed k). A sample is uncertain when its top-k peaks fall both inside and
  outside the box. Give `nms_distance` in the map's pixels: 50 suits image-sized maps, not 14 x 14 patch grids.

`aggregate` averages each metric over a dataset and counts the uncertain samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from hardneg.evaluation.boxes import check_box

BINARY_THRESHOLD = 0.5  # the paper: "apply the threshold of 0.5 to each pixel value"
PEAK_THRESHOLD = 0.7  # the paper's activation threshold tau for local maxima
NMS_DISTANCE = 50.0  # the paper's delta, in pixels
METRICS = (
    "soft_iou",
    "soft_dice",
    "binary_iou",
    "binary_dice",
    "wdp_soft",
    "wdp_binary",
    "io_ratio",
    "io_ratio_raw",
    "pointing_game",
)


def normalize_map(activation: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """The map as float64 divided by its maximum (all-zero maps stay zero); refuses non-2D, NaN or negative maps."""
    a = np.asarray(activation, dtype=np.float64)
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"activation map must be a non-empty 2D array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("activation map must be finite (no NaN or inf)")
    if (a < 0).any():
        raise ValueError(f"activation map must be non-negative (apply ReLU first), min is {a.min():g}")
    peak = a.max()
    return a / peak if peak > 0 else a.copy()


def box_mask(shape: tuple[int, int], box: Sequence[float]) -> np.ndarray:
    """Boolean mask of the pixels whose centre lies in the xywh box, clipped to a map of `shape` (H, W)."""
    x, y, w, h = check_box(box, "box")
    height, width = shape
    # Pixel j's centre is j + 0.5; it is inside when x <= j + 0.5 < x + w.
    j0, j1 = max(math.ceil(x - 0.5), 0), min(math.ceil(x + w - 0.5), width)
    i0, i1 = max(math.ceil(y - 0.5), 0), min(math.ceil(y + h - 0.5), height)
    mask = np.zeros((height, width), dtype=bool)
    if j0 >= j1 or i0 >= i1:
        raise ValueError(f"box {list(box)} covers no pixel of a {height}x{width} map")
    mask[i0:i1, j0:j1] = True
    return mask


def distance_map(mask: np.ndarray) -> np.ndarray:
    """Euclidean distance from each pixel to the nearest pixel of a rectangular mask (0 inside)."""
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    i0, i1, j0, j1 = rows[0], rows[-1], cols[0], cols[-1]
    ii = np.arange(mask.shape[0])[:, None]
    jj = np.arange(mask.shape[1])[None, :]
    di = np.maximum(np.maximum(i0 - ii, ii - i1), 0)
    dj = np.maximum(np.maximum(j0 - jj, jj - j1), 0)
    return np.sqrt(di.astype(np.float64) ** 2 + dj.astype(np.float64) ** 2)


def local_maxima(a: np.ndarray, threshold: float = PEAK_THRESHOLD) -> np.ndarray:
    """(row, col) of the pixels > `threshold` and >= each of their 8 neighbours, as a K x 2 int array."""
    padded = np.pad(a, 1, constant_values=-np.inf)
    h, w = a.shape
    is_max = a > threshold
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if di or dj:
                is_max &= a >= padded[1 + di : 1 + di + h, 1 + dj : 1 + dj + w]
    return np.argwhere(is_max)


def nms_peaks(a: np.ndarray, peaks: np.ndarray, distance: float = NMS_DISTANCE) -> np.ndarray:
    """The peaks kept by greedy NMS: in decreasing value (ties row-major), drop those within `distance` of a kept
    one. Returns the kept (row, col) rows in that order."""
    if len(peaks) == 0:
        return peaks
    values = a[peaks[:, 0], peaks[:, 1]]
    order = np.argsort(-values, kind="mergesort")  # argwhere is row-major, so ties stay row-major
    peaks = peaks[order]
    alive = np.ones(len(peaks), dtype=bool)
    kept: list[int] = []
    for k in range(len(peaks)):
        if not alive[k]:
            continue
        kept.append(k)
        d = np.hypot(*(peaks - peaks[k]).T.astype(np.float64))
        alive &= d >= distance
    return peaks[kept]


def _iou_dice(a: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    inter = float((a * m).sum())
    total = float(a.sum() + m.sum())
    union = total - inter
    return (inter / union if union > 0 else 0.0), (2 * inter / total if total > 0 else 0.0)


def _wdp(a: np.ndarray, d_norm: np.ndarray) -> float | None:
    mass = float(a.sum())
    return float((a * d_norm).sum() / mass) if mass > 0 else None


def groundcam_metrics(
    activation: np.ndarray | Sequence[Sequence[float]],
    box: Sequence[float],
    *,
    binary_threshold: float = BINARY_THRESHOLD,
    peak_threshold: float = PEAK_THRESHOLD,
    nms_distance: float = NMS_DISTANCE,
    top_k: int | None = None,
    tie_tolerance: float = 0.0,
) -> dict[str, Any]:
    """Every Q-GroundCAM metric of one activation map and box (see the module docstring).

    Returns the floats of `METRICS` (None where undefined: WDP of an all-zero map, IO ratio without activation or
    without pixels outside the box), plus `pg_uncertain` (bool) and `num_peaks` (peaks kept by NMS).
    `tie_tolerance`: peaks within this much of the highest kept one count as equal to it.
    """
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
    a = normalize_map(activation)
    m = box_mask(a.shape, box)
    b = (a >= binary_threshold).astype(np.float64)
    mf = m.astype(np.float64)

    soft_iou, soft_dice = _iou_dice(a, mf)
    binary_iou, binary_dice = _iou_dice(b, mf)

    d = distance_map(m)
    d_max = float(d.max())
    d_norm = d / d_max if d_max > 0 else d  # a box covering the whole map leaves nothing to penalise

    outside = ~m
    inside_mean = float(a[m].mean())
    outside_mean = float(a[outside].mean()) if outside.any() else None
    if outside_mean is None or inside_mean + outside_mean == 0:
        io_ratio, io_ratio_raw = None, None
    else:
        io_ratio = inside_mean / (inside_mean + outside_mean)  # sigmoid(log(inside / outside))
        io_ratio_raw = inside_mean / outside_mean if outside_mean > 0 else math.inf

    top = a.max()
    if top > 0:
        at_max = a == top
        pointing = float(m[at_max].sum() / at_max.sum())
    else:
        pointing = 0.0

    peaks = nms_peaks(a, local_maxima(a, peak_threshold), nms_distance)
    if len(peaks):
        values = a[peaks[:, 0], peaks[:, 1]]
        chosen = peaks[:top_k] if top_k is not None else peaks[values >= values[0] - tie_tolerance]
        inside = m[chosen[:, 0], chosen[:, 1]]
        uncertain = bool(inside.any() and not inside.all())
    else:
        uncertain = False

    return {
        "soft_iou": soft_iou,
        "soft_dice": soft_dice,
        "binary_iou": binary_iou,
        "binary_dice": binary_dice,
        "wdp_soft": _wdp(a, d_norm),
        "wdp_binary": _wdp(b, d_norm),
        "io_ratio": io_ratio,
        "io_ratio_raw": io_ratio_raw,
        "pointing_game": pointing,
        "pg_uncertain": uncertain,
        "num_peaks": len(peaks),
    }


def aggregate(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Dataset means of per-sample `groundcam_metrics` results.

    Each metric's mean skips the samples where it is None (`count` says how many it used); `io_ratio_raw` is
    averaged over finite values only. `pg_uncertain` is the paper's count "n / N" plus its fraction.
    """
    rows = list(results)
    out: dict[str, Any] = {"num_samples": len(rows)}
    for key in METRICS:
        vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        out[key] = {"mean": sum(vals) / len(vals) if vals else None, "count": len(vals)}
    uncertain = sum(1 for r in rows if r.get("pg_uncertain"))
    out["pg_uncertainty"] = {"count": uncertain, "fraction": uncertain / len(rows) if rows else None}
    return out
