"""What the OpenAI-compatible backend makes of a call's outcome: a failure worth retrying (`Transient`, with
the wait the server asked for: `retry_after`), one that asking again cannot mend (`Rejected`), and the
counters of calls and answers that `stats()` reports (`Counters`, shared by the backend's threads)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime


class Transient(Exception):
    """A failure worth retrying (429, 5xx, timeout, connection error, a 2xx body that is no chat completion)."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class Rejected(Exception):
    """A 4xx other than 429: this request cannot succeed by asking again."""


@dataclass
class Counters:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    invalid_answers: int = 0
    unusable_answers: int = 0  # fresh answers empty or not in the asked form (not counting semantic refusals)
    unusable_in_a_row: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, k: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + k)

    def answered(self, usable: bool) -> int:
        """Count one fresh answer; returns how many in a row were unusable."""
        with self.lock:
            self.unusable_answers += not usable
            self.unusable_in_a_row = 0 if usable else self.unusable_in_a_row + 1
            return self.unusable_in_a_row


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # the HTTP-date form
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
