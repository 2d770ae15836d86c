"""Numbers read from a user's files (scores, boxes): finite floats, or a ValueError that says which.

NaN and infinity are no score: a metric over them is meaningless, so they are refused where they are read,
with what they were, not averaged into a result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def finite_number(value: Any, what: str) -> float:
    """`value` as a float, or a ValueError saying `what` must be a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r:.100}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {value!r:.100}")
    return v


def finite_numbers(values: Iterable[Any], what: str) -> tuple[float, ...]:
    """Each of `values` as a float (`finite_number`)."""
    return tuple(finite_number(v, what) for v in values)
