"""One small demo run shared by the export tests (built once per test session), and what they re-read."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.certify import Certifier
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.io import read_jsonl
from hardneg.core.records import SceneGraph
from hardneg.core.rows import GraphRow
from hardneg.core.runner.folder import stored_config
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
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
            g = GraphRow(**row).scene_graph()
            out[g.image_id] = g
    return out


def graphs(root: Path) -> dict[str, SceneGraph]:
    """The cleaned graphs the run used (what the certificates are about)."""
    return _graphs(root)


def certifier(root: Path) -> Certifier:
    """The certifier the run's exports certify with: the word tables, and how the corpus annotates (the
    plausibility stage's notes with the prior's), so a name likely there unannotated carries no absence."""
    work = root / "work" / "plausibility"
    notes = AnnotationStats.from_rows(read_jsonl(work / "annotations-all.jsonl"))
    notes = notes.with_prior(read_jsonl(work / "prior-all.jsonl"))
    return Certifier(Words.load(), AttributeTable.load(None), notes, stored_config(root).language.small_unannotated)
