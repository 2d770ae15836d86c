"""Memory a process holds but no longer uses, given back to the system after a stage.

The driver runs the one-unit stages and every stage's `finish` itself, then waits while its workers run
the next wave; whatever those left free stays counted against the run unless it is given back. Two
allocators keep freed memory for reuse: glibc's `malloc` keeps freed pages in its heap (`malloc_trim`
returns them), and pyarrow's pool keeps what the parquet tables used (`release_unused`). At GQA scale
the driver waited on the export wave holding 432 MiB, 327 MiB once it gave back (after the write stage
alone: 295 MiB, 175 MiB once given back, in 8 ms).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    """glibc, where it is the C library (its `malloc_trim`); None elsewhere (macOS, musl)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


LONG_STAGE = 5.0  # seconds of work after which a stage is worth a full collection


def release(full: bool = True) -> None:
    """Collect the cycles left (`full`: every generation; else the young ones, what was made since the
    last collection) and give free memory back to the system: a few ms. The runner asks for a full
    collection after a stage that worked `LONG_STAGE` or more: at GQA scale the driver held 65 MiB more
    beside the export wave with only the young generations collected (392 against 327 MiB), while a full
    collection in a process that holds many objects (a test process) costs 90 ms, more than a short stage."""
    gc.collect(2 if full else 1)
    pyarrow = sys.modules.get("pyarrow")  # only if a stage loaded it: never imported for this
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
