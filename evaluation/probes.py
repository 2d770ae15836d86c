"""Probe-R / Probe-C image-text matching: does the model prefer the correct prompt to the swapped one?

Implements the image-text matching metrics of "Probing Conceptual Understanding of Large Visual-Language
Models" (the probing paper, Schiappa et al.):

- **Accuracy**: a sample is correct when score(image, correct prompt) > score(image, swapped
  prompt), strictly: a tie is wrong ("0 otherwise").
- **Mean confidence** mu(c): the softmax probability of the correct prompt over the two, c1 =
  exp(s_correct) / (exp(s_correct) + exp(s_swapped)), averaged. Pass logits (e.g. CLIP's scaled similarities)
  for this to mean what the paper means; accuracy only needs the order.
- **Text, image and group scores** for Probe-C's 2 images x 2 prompts groups (Winoground's definitions).

Inputs: `ProbeSample(id, kind, score_correct, score_swapped)`, `kind` naming the probe and subset (e.g.
"probe_r/predicate", "probe_r/swapped_subject", "probe_c/composition"), as the export's comparison tables
(`probes/probe_r/<split>.json`) list them; the paper's own scripts read the export's layout in the paper's
format directly (README, "Probes"); one sample per (image, correct prompt, swapped prompt), so an image
probed with several swaps gives several samples. Dict form: the same keys. `ProbeGroup(id, kind, scores)` with
`scores[i][j] = f(prompt_i, image_j)`, prompt i being the one that matches image i.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hardneg.evaluation.numbers import finite_numbers


@dataclass(frozen=True, slots=True)
class ProbeSample:
    """One image scored against its correct prompt and one swapped prompt."""

    id: Hashable
    kind: str
    score_correct: float
    score_swapped: float


@dataclass(frozen=True, slots=True)
class ProbeGroup:
    """Probe-C: two images and two prompts; `scores[i][j]` = f(prompt_i, image_j), prompt i matching image i."""

    id: Hashable
    kind: str
    scores: tuple[tuple[float, float], tuple[float, float]]


def _coerce_sample(obj: ProbeSample | Mapping[str, Any]) -> ProbeSample:
    if isinstance(obj, ProbeSample):
        sid, kind, c, s = obj.id, obj.kind, obj.score_correct, obj.score_swapped
    elif isinstance(obj, Mapping) and {"id", "kind", "score_correct", "score_swapped"} <= obj.keys():
        sid, kind, c, s = obj["id"], obj["kind"], obj["score_correct"], obj["score_swapped"]
    else:
        raise ValueError(f"probe sample: id, kind, score_correct, score_swapped expected, got {obj!r:.200}")
    correct, swapped = finite_numbers((c, s), f"sample {sid!r}: a score")
    return ProbeSample(sid, str(kind), correct, swapped)


def _coerce_group(obj: ProbeGroup | Mapping[str, Any]) -> ProbeGroup:
    if isinstance(obj, ProbeGroup):
        gid, kind, scores = obj.id, obj.kind, obj.scores
    elif isinstance(obj, Mapping) and {"id", "kind", "scores"} <= obj.keys():
        gid, kind, scores = obj["id"], obj["kind"], obj["scores"]
    else:
        raise ValueError(f"probe group: id, kind, scores expected, got {obj!r:.200}")
    if not isinstance(scores, Sequence) or len(scores) != 2 or any(len(row) != 2 for row in scores):
        raise ValueError(f"group {gid!r}: scores must be 2 x 2 (prompts x images), got {scores!r}")
    (a, b), (c, d) = (finite_numbers(row, f"group {gid!r}: a score") for row in scores)
    return ProbeGroup(gid, str(kind), ((a, b), (c, d)))


def confidence(score_correct: float, score_swapped: float) -> float:
    """Softmax probability of the correct prompt over the two (numerically stable)."""
    return 1.0 / (1.0 + math.exp(min(score_swapped - score_correct, 700.0)))


def probe_accuracy(samples: Iterable[ProbeSample | Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy and mean confidence overall and per `kind`:
    `{"overall": {"accuracy", "mean_confidence", "count"}, "by_kind": {kind: {...}}}` (None when empty)."""
    rows = [_coerce_sample(s) for s in samples]

    def cell(group: list[ProbeSample]) -> dict[str, Any]:
        n = len(group)
        return {
            "accuracy": sum(s.score_correct > s.score_swapped for s in group) / n if n else None,
            "mean_confidence": sum(confidence(s.score_correct, s.score_swapped) for s in group) / n if n else None,
            "count": n,
        }

    by_kind: dict[str, list[ProbeSample]] = defaultdict(list)
    for s in rows:
        by_kind[s.kind].append(s)
    return {"overall": cell(rows), "by_kind": {k: cell(by_kind[k]) for k in sorted(by_kind)}}


def group_scores(groups: Iterable[ProbeGroup | Mapping[str, Any]]) -> dict[str, Any]:
    """Probe-C text, image and group scores (strict >), overall and per `kind`:
    `{"overall": {"text", "image", "group", "count"}, "by_kind": {kind: {...}}}` (None when empty)."""
    rows = [_coerce_group(g) for g in groups]

    def flags(g: ProbeGroup) -> tuple[bool, bool]:
        (p1x1, p1x2), (p2x1, p2x2) = g.scores
        text = p1x1 > p2x1 and p2x2 > p1x2  # each image prefers its own prompt
        image = p1x1 > p1x2 and p2x2 > p2x1  # each prompt prefers its own image
        return text, image

    def cell(group: list[ProbeGroup]) -> dict[str, Any]:
        n = len(group)
        f = [flags(g) for g in group]
        return {
            "text": sum(t for t, _ in f) / n if n else None,
            "image": sum(i for _, i in f) / n if n else None,
            "group": sum(t and i for t, i in f) / n if n else None,
            "count": n,
        }

    by_kind: dict[str, list[ProbeGroup]] = defaultdict(list)
    for g in rows:
        by_kind[g.kind].append(g)
    return {"overall": cell(rows), "by_kind": {k: cell(by_kind[k]) for k in sorted(by_kind)}}
