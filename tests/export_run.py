"""One small demo run shared by the export tests (built once per test session), and what they re-read."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.ingest import row_to_graph
from hardneg.core.io import read_jsonl
from hardneg.core.records import SceneGraph
from tests.runs import shared_run

# 16 scenes, two candidates per image negative: ImageCoDe sets of 1 + 3 images (the demo's 4 candidates
# make sets of 10; here the point is the round trip and the certificates).
EXPORT_RUN = {"demo": {"n_scenes": 16}, "images": {"candidates": 2}, "exports": {"imagecode": {"edits": 3}}}


def export_run() -> Path:
    """A finished run of EXPORT_RUN; copy it before changing it."""
    return shared_run(EXPORT_RUN)


def records(root: Path, rel: str) -> list[dict[str, Any]]:
    """Every split's records of an export table (`tricd`, `probes/probe_r`, `imagecode`, ...)."""
    out = []
    for split in ("train", "val", "test"):
        f = root / f"{rel}/{split}.json"
        assert f.exists(), f
        out += orjson.loads(f.read_bytes())
    return out


@functools.cache
def _graphs(root: Path) -> dict[str, SceneGraph]:
    out = {}
    for f in sorted((root / "work" / "hygiene").glob("graphs-*.jsonl")):
        for row in read_jsonl(f):
            g = row_to_graph(row)
            out[g.image_id] = g
    return out


def graphs(root: Path) -> dict[str, SceneGraph]:
    """The cleaned graphs the run used (what the certificates are about)."""
    return _graphs(root)
