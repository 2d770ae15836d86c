"""The cyclic garbage collector, asleep while a stage works.

A unit's work is records: dicts, lists and small objects that live until the unit writes them, often
millions. Python's cyclic collector walks every tracked object it holds again and again as they pile up
(a full collection each time the heap grows by a quarter) and finds almost nothing: records make no
cycles, and plain reference counting frees them the moment they are dropped. That walking was 15 to 30% of
a unit's time in the path search, the language stage and the exports at GQA scale, and a third of a probes
search. So the runner runs every unit and every stage's `finish` with the collector asleep
(`Run.run_unit`, `Run.close`). The few cycles a unit leaves (an exception's traceback, say: 56 to 112
objects a unit, measured) are collected once it is awake again; the first collection then walks what
the unit made and still holds once, not once per quarter of growth.

Asleep means a collection threshold of zero, not `gc.disable()`: libraries switch the collector off and
on around their own work (spaCy's msgpack loader calls `gc.enable()` whatever it found), which would wake
it for the rest of the unit; none of them touches the thresholds. The thresholds are the process's, and
units may run in threads side by side (Prefect's and Dask's thread runners): the first to pause saves
them, the last to finish puts them back.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_paused: list[tuple[int, ...]] = []  # the thresholds saved by the first pause, once per pause still open


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """No automatic collection inside (as it was once the last pause, of any thread, is over); nests."""
    with _lock:
        saved = _paused[0] if _paused else gc.get_threshold()
        _paused.append(saved)
        gc.set_threshold(0, *saved[1:])
    try:
        yield
    finally:
        with _lock:
            _paused.pop()
            if not _paused:
                gc.set_threshold(*saved)


def collecting() -> bool:
    """Whether the collector runs by itself now."""
    return gc.isenabled() and gc.get_threshold()[0] > 0
