"""The review queue's order: the samples the automatic scores most doubt come first.

`risk(record)` turns each score a record carries into a probability-like "this sample is wrong" and
takes the largest. Scores it does not know are ignored, so a new scorer changes nothing until a line is
added to `RISKS`; a record with no known score ranks as `UNSCORED`. `priority_key` sorts by risk
(highest first), then by difficulty (path level, then negative level, highest first), then by a stable
hash of the id, so the order never depends on file order.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

CLIP_SCALE = 0.05  # a CLIP margin this far above 0 is ~27% risk; CLIP cosine gaps are a few hundredths
UNSCORED = 0.5  # a record with no known score: no evidence either way


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


# score name -> risk in [0, 1]; higher means more likely that a human rejects the sample.
RISKS: dict[str, Callable[[float], float]] = {
    # detector: probability that an unannotated twin of the target exists (the positive is ambiguous)
    "detector_twin": lambda v: min(1.0, max(0.0, v)),
    # CLIP margin sim(pos) - sim(neg): near or below 0 the negative may still be true
    "clip_margin": lambda v: _logistic(-v / CLIP_SCALE),
    # realism: probability that the edit looks generated (unreadable edits)
    "realism": lambda v: min(1.0, max(0.0, v)),
    # annotation risk: what the positive's graph cannot rule out (generators/paths/annotation_rules.py)
    "annotation_risk": lambda v: min(1.0, max(0.0, v)),
}


def risk(record: dict[str, Any]) -> float | None:
    """The largest risk over the scores the record carries; None when it carries no known score."""
    scores = record.get("scores")
    if not isinstance(scores, dict):
        return None
    risks = [
        fn(float(v))
        for name, fn in RISKS.items()
        if isinstance(v := scores.get(name), int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    return max(risks) if risks else None


def _stable_hash(item_id: Any) -> int:
    return int.from_bytes(hashlib.blake2b(str(item_id).encode(), digest_size=8).digest(), "big")


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def priority_key(record: dict[str, Any]) -> tuple[float, int, int, int]:
    """Sort key, ascending = reviewed first. A record with no known score has risk `UNSCORED`."""
    r = risk(record)
    return (
        -(UNSCORED if r is None else r),
        -_int(record.get("level")),
        -_int(record.get("negative_level")),
        _stable_hash(record.get("id")),
    )


def in_default_queue(record: dict[str, Any]) -> bool:
    """What the paper sent to humans: positives of levels 2 and 3; and here every negative."""
    if "positive_id" in record or "negative_type" in record:
        return True
    return _int(record.get("level")) >= 2
