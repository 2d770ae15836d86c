"""The one place thresholds are applied (STYLE habit 3: score first, decide later).

Scorers write scores into the samples and never drop anything; these pure functions read the stored
scores and the config's thresholds and say keep (and which candidate) or why not. `hardneg split` calls
them again with new thresholds, without loading any model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Thresholds:
    min_clip_margin: float = 0.0  # SPEC 1.6: the positive must score higher than the negative
    max_realism: float = 0.2  # SPEC 1.6: drop edits whose realism score (probability generated) exceeds this
    require_clip: bool = False  # True: a missing CLIP score drops the sample instead of passing it


@dataclass(frozen=True, slots=True)
class Decision:
    keep: bool
    reason: str | None = None  # why not, when dropped
    candidate: int | None = None  # image negatives: the index of the chosen candidate
    losers: tuple[tuple[int, str], ...] = ()  # image negatives: (candidate index, why it lost)


def _clip_ok(margin: float | None, t: Thresholds) -> tuple[bool, str | None]:
    if margin is None:
        return (not t.require_clip, "no CLIP score" if t.require_clip else None)
    if margin > t.min_clip_margin:
        return True, None
    return False, f"CLIP margin {margin:.4f} <= {t.min_clip_margin}"


def decide_text(scores: dict[str, Any], t: Thresholds) -> Decision:
    """A text negative: keep when the CLIP margin sim(pos text, image) - sim(neg text, image) passes."""
    ok, why = _clip_ok(scores.get("clip_margin"), t)
    return Decision(True) if ok else Decision(False, f"filter: {why}")


def decide_image(candidates: list[dict[str, Any]], t: Thresholds) -> Decision:
    """An image negative's N candidates: drop those that fail CLIP or realism, keep the most similar
    to the original among the rest (SPEC 1.5: best of N by DINOv2), ties to the lower index."""
    passing: list[tuple[float, int]] = []
    losers: list[tuple[int, str]] = []
    for k, c in enumerate(candidates):
        ok, why = _clip_ok(c.get("clip_margin"), t)
        realism = c.get("realism")
        if ok and realism is not None and realism > t.max_realism:
            ok, why = False, f"realism {realism:.4f} > {t.max_realism}"
        if not ok:
            losers.append((k, f"filter: {why}"))
            continue
        sim = c.get("similarity")
        passing.append((float("-inf") if sim is None else sim, k))
    if not passing:
        return Decision(False, f"filter: no candidate passed ({len(candidates)} tried)", None, tuple(losers))
    best = max(passing, key=lambda p: (p[0], -p[1]))[1]
    for sim, k in passing:
        if k != best:
            losers.append(
                (k, f"filter: best of {len(candidates)} is candidate {best}, this one's similarity {sim:.4f}")
            )
    return Decision(True, None, best, tuple(sorted(losers)))
