"""What a stage leaves free is given back to the system once it closes (`core/runner/memory.py`): the driver
waits on the next wave holding only what it uses."""

from __future__ import annotations

import os
import sys

import pytest

from hardneg.core.config import RunConfig
from hardneg.core.runner import memory
from hardneg.core.runner.stage import Run
from tests.test_stage import STAGES, run_all


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux") or memory._libc() is None, reason="glibc's malloc_trim")
def test_freed_blocks_inside_the_heap_go_back_to_the_system():
    blocks = [bytearray(4000) for _ in range(50_000)]  # ~200 MB of malloc'd blocks
    kept = blocks[::20]  # one in twenty stays, so the heap's top is not free: only a trim returns the rest
    del blocks
    held = _rss_mib()
    memory.release()
    assert held - _rss_mib() > 100, "malloc_trim gave back less than half of the freed blocks"
    assert len(kept) == 2500


@pytest.mark.parametrize("long_stage", [0.0, 3600.0])
def test_every_stage_gives_back_what_it_left_free_once_it_closes(tmp_path, monkeypatch, long_stage):
    """Each stage releases before its close returns; a full collection only after a stage that worked at
    least `LONG_STAGE` seconds (these tiny stages take milliseconds)."""
    closed: list[str] = []
    real_close = Run.close

    def close(self: Run, name: str) -> dict:
        out = real_close(self, name)
        closed.append(name)
        return out

    released: list[tuple[list[str], bool]] = []
    monkeypatch.setattr(Run, "close", close)
    monkeypatch.setattr(memory, "LONG_STAGE", long_stage)
    monkeypatch.setattr(memory, "release", lambda full=True: released.append((list(closed), full)))
    run_all(tmp_path / "run", RunConfig(shard_size=2))
    names = [s.name for s in STAGES]
    assert closed == names
    assert released == [(names[:i], long_stage == 0.0) for i in range(len(names))]
