"""Model loading shared by every model role: one instance per worker process, device and dtype choice.

A worker (a thread of the thread runner, a process of the process or Dask runner) builds each model once
and reuses it for every shard it runs: `shared` (`core/runner/shared.py`) keys instances by what defines the model
(its class, id or directory, dtype, device, options), so two stages or two shards asking for the same model
get one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hardneg.backends.requirements import Requirement, Weights
from hardneg.core.errors import HardnegError
from hardneg.core.runner.shared import clear, loaded_keys, shared

__all__ = ["MODELS_HINT", "clear", "loaded_keys", "loading", "resolve_device_dtype", "shared", "transformers_model"]

MODELS_HINT = "pip install 'torch==2.13.0' 'transformers>=5,<6'  (or: pip install -e '.[models]')"


def transformers_model(role: str, *refs: str) -> Requirement:
    """A role that loads transformers models (hub ids or local folders) on torch."""
    return Requirement(role, ("torch", "transformers"), MODELS_HINT, tuple(Weights(r) for r in refs))


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


@contextlib.contextmanager
def loading(model: str) -> Iterator[None]:
    """Around the loading of a model the config names: a model that is not there or not what the role
    needs (no such folder, an id the hub refuses or cannot serve offline, files of another kind), a
    device or dtype it cannot take, or a library missing for it is the user's to fix, and becomes one
    `HardnegError` line naming the model."""
    try:
        yield
    except HardnegError:  # already says what to fix (a library to install)
        raise
    except (ImportError, OSError, ValueError) as e:
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise HardnegError(f"model {model} does not load: {first.strip()}") from e
