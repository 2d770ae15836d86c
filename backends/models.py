"""Model loading shared by every model role: one instance per worker process, device and dtype choice.

A worker (a thread of the thread runner, a process of the process or Dask runner) builds each model once
and reuses it for every shard it runs: `shared` (`core/shared.py`) keys instances by what defines the model
(its class, id or directory, dtype, device, options), so two stages or two shards asking for the same model
get one.
"""

from __future__ import annotations

from typing import Any

from hardneg.core.shared import clear, loaded_keys, shared

__all__ = ["MODELS_HINT", "clear", "loaded_keys", "resolve_device_dtype", "shared"]

MODELS_HINT = "pip install 'torch==2.13.0' 'transformers>=5,<6'  (or: pip install -e '.[models]')"


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
