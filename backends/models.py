"""Model loading shared by every model role: one instance per worker process, device and dtype choice.

A worker (a thread of the thread runner, a process of the process or Dask runner) builds each model once
and reuses it for every shard it runs: `shared` keys instances by what defines the model (its class,
id or directory, dtype, device, options), so two stages or two shards asking for the same model get one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

MODELS_HINT = "pip install 'torch==2.13.0' 'transformers>=5,<6'  (or: pip install -e '.[models]')"

_LOCK = threading.Lock()
_SHARED: dict[Hashable, Any] = {}
_BUILDING: dict[Hashable, threading.Lock] = {}


def shared(key: Hashable, build: Callable[[], T]) -> T:
    """The worker's one instance for `key`, built by `build` on first use (once, even under threads)."""
    with _LOCK:
        if key in _SHARED:
            return _SHARED[key]
        lock = _BUILDING.setdefault(key, threading.Lock())
    with lock:
        with _LOCK:
            if key in _SHARED:
                return _SHARED[key]
        value = build()
        with _LOCK:
            _SHARED[key] = value
        return value


def loaded_keys() -> list[Hashable]:
    """What this worker has built (tests check that a second shard builds nothing new)."""
    with _LOCK:
        return list(_SHARED)


def clear() -> None:
    with _LOCK:
        _SHARED.clear()
        _BUILDING.clear()


def resolve_device_dtype(torch: Any, device: str | None, dtype: str | None) -> tuple[str, Any]:
    """`device` None: cuda when available, else cpu. `dtype` None: fp16 on cuda (half the memory and
    time), fp32 on cpu (CPU fp16 kernels are slow or missing); else "float16", "bfloat16" or "float32"."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dtype is None:
        return device, torch.float16 if device.startswith("cuda") else torch.float32
    names = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    if dtype not in names:
        raise ValueError(f"dtype must be one of {sorted(names)} or None, got {dtype!r}")
    return device, names[dtype]
