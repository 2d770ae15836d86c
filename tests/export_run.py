"""One small demo run shared by the export tests (built once per test session), and what they re-read."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.ingest import row_to_graph
from hardneg.core.io import read_jsonl
from hardneg.core.records import SceneGraph
from tests.runs import SIXTEEN, shared_run

# the 16-scene run the flow, evaluation and images-stage tests read, with TRICD and the probes made for every
# split (by default they are made for val and test): their tests see the most samples
EVERY_SPLIT = ["train", "val", "test"]
EXPORT_RUN = {
    **SIXTEEN,
    "exports": {**SIXTEEN["exports"], "tricd": {"splits": EVERY_SPLIT}, "probes": {"splits": EVERY_SPLIT}},
}


def export_run() -> Path:
    """A finished run of EXPORT_RUN; copy it before changing it."""
    return shared_run(EXPORT_RUN)


def records(root: Path, rel: str, splits: tuple[str, ...] = ("train", "val", "test")) -> list[dict[str, Any]]:
    """Every split's records of an export table (`tricd`, `probes/probe_r`, `imagecode`, ...); each of
    `splits` must have its file."""
    out = []
    for split in splits:
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
