"""A stop asked for by a signal, remembered where an exception cannot carry it.

Ctrl+C and SIGTERM raise where the process happens to be. When that is inside a callback of a C
extension (pydantic's serializer, a C library's hook), the extension wraps the interrupt in an error of
its own: the interrupt arrives as, say, `PydanticSerializationError`, and a bare `except Exception` in a
stage may even take it for a bad sample. So the handler records the stop before it raises, the runner
asks `check()` before it marks any unit or stage done (work cut short is never stored as finished), and
the command line asks `requested()` before it calls an error a bug.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

_asked: list[int] = []  # the signals received since `handled` began, in order
_open: list[bool] = []  # one entry per `handled` block running: `check` raises only inside one


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so the run stops as on Ctrl+C: its context managers put the
    outputs back and release the lock, and the command says how to resume."""


def _raise(signum: int) -> None:
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _handler(signum: int, frame: object) -> None:
    _asked.append(signum)
    _raise(signum)


@contextmanager
def handled() -> Iterator[None]:
    """Handle Ctrl+C and SIGTERM in this process while the block runs (the main thread only, as Python
    requires); the handlers before it are put back after it, and `requested()` still answers until the
    next block starts."""
    _asked.clear()
    before = {s: signal.signal(s, _handler) for s in (signal.SIGINT, signal.SIGTERM)}
    _open.append(True)
    try:
        yield
    finally:
        _open.pop()
        for s, h in before.items():
            signal.signal(s, h)


def requested() -> str | None:
    """'SIGTERM' or 'Ctrl+C' once a stop was asked for (the first signal names it), else None."""
    if not _asked:
        return None
    return "SIGTERM" if _asked[0] == signal.SIGTERM else "Ctrl+C"


def check() -> None:
    """Raise the stop again if one was asked for while this block runs: whatever swallowed or wrapped it,
    the run stops here. Outside a block nothing is handled, so what is remembered is an earlier block's
    stop (the command answered it): a run made afterwards in the same process (a notebook, a test) goes on."""
    if _asked and _open:
        _raise(_asked[0])
