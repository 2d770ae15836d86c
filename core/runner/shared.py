"""What a worker builds once and reuses for every unit it runs: models (`backends/models.py`) and things
every unit of a stage makes alike from an upstream's whole output (`Unit.shared`).

A worker is a thread of the thread runner or a process of the process or Dask runner; under threads a value
is still built once. A value held for another `version` of its key (an upstream whose output changed) is
built anew and replaces it, so a long-lived worker holds one value per key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_LOCK = threading.Lock()
_SHARED: dict[Hashable, tuple[Hashable, Any]] = {}  # key -> (version, value)
_BUILDING: dict[Hashable, threading.Lock] = {}


def shared(key: Hashable, build: Callable[[], T], version: Hashable = None) -> T:
    """The worker's one value for `key` (and `version`), built by `build` on first use."""
    with _LOCK:
        held = _SHARED.get(key)
        if held is not None and held[0] == version:
            return held[1]
        lock = _BUILDING.setdefault(key, threading.Lock())
    with lock:
        with _LOCK:
            held = _SHARED.get(key)
            if held is not None and held[0] == version:
                return held[1]
        value = build()
        with _LOCK:
            _SHARED[key] = (version, value)
        return value


def loaded_keys() -> list[Hashable]:
    """What this worker has built (tests check that a second shard builds nothing new)."""
    with _LOCK:
        return list(_SHARED)


def clear() -> None:
    with _LOCK:
        _SHARED.clear()
        _BUILDING.clear()
