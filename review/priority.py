"""The review queue's order: the samples the automatic scores most doubt come first.

`risk(record)` turns each score a record carries into a probability-like "this sample is wrong" and
takes the largest: each filter says how for its scores (`Filter.legend`: the detector's twin, CLIP's
margin, realism), the run for its own (`RUN_RISKS`). Other scores are ignored, so a new filter changes
the order only once it declares risks; a record with no known score ranks as `UNSCORED`. `priority_key`
sorts by risk (highest first), then by difficulty (path level, then negative level, highest first), then
by a stable hash of the id, so the order never depends on file order.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

from hardneg.core.plugins import FILTERS

UNSCORED = 0.5  # a record with no known score: no evidence either way

# the run's own scores -> risk in [0, 1]; higher means more likely that a human rejects the sample.
RUN_RISKS: dict[str, Callable[[float], float]] = {
    # annotation risk: what the positive's graph cannot rule out (generators/paths/annotation_rules.py)
    "annotation_risk": lambda v: min(1.0, max(0.0, v)),
    # a positive kept at a level where its twin or box risk would have dropped it (filters/evidence.py)
    "at_risk": lambda v: min(1.0, max(0.0, v)),
}


def risks() -> dict[str, Callable[[float], float]]:
    """Score name -> its risk: the run's own, then each registered filter's (`ScoreLine.risk`)."""
    out = dict(RUN_RISKS)
    for _, cls in FILTERS.items():
        for line in cls.legend:
            if line.risk is not None:
                out.setdefault(line.name, line.risk)
    return out


def risk(record: dict[str, Any]) -> float | None:
    """The largest risk over the scores the record carries; None when it carries no known score."""
    scores = record.get("scores")
    if not isinstance(scores, dict):
        return None
    found = [
        fn(float(v))
        for name, fn in risks().items()
        if isinstance(v := scores.get(name), int | float) and not isinstance(v, bool) and math.isfinite(v)
    ]
    return max(found) if found else None


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
    """What the paper sent to humans: positives of levels 2 and 3; and here every negative, and every positive
    kept at risk (`at_risk`: its twin or box risk drops its kind at levels 2 and 3)."""
    if "positive_id" in record or "negative_type" in record:
        return True
    scores = record.get("scores")
    return _int(record.get("level")) >= 2 or (isinstance(scores, dict) and scores.get("at_risk") == 1.0)
