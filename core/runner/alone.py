"""Run one stage alone, on upstream rows given by hand: a stage's test in milliseconds, with no whole run.

    out = run_alone(STAGES, "hygiene", RunConfig(), {"ingest": {"graphs": [graph_to_row(g)]}})
    out.outputs["graphs"], out.rejects, out.summary["stats"]

Each stage the tested one reads is stood in for by a stage of the same name and record types that writes
the given rows (no rows for a stage or kind not given), as one shard; then the stage runs through the
same runner as in a pipeline (`Run`: declared reads and writes, units, rejects, summary), in a run folder
of its own (a temporary one unless `root` is given). Every row, given or written, is checked against its
record type, so a test's hand-written rows have the shape the real upstream stage writes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.config import RunConfig
from hardneg.core.io import read_jsonl
from hardneg.core.runner.stage import Run, Stage, Unit

SHARD = "00000"  # the one shard of the corpus


class Given(Stage):
    """A stand-in for an upstream stage: its name and record types, the given rows as its output."""

    sharded = False

    def __init__(self, like: Stage, rows: Mapping[str, Sequence[dict[str, Any]]], summary: Mapping[str, Any]) -> None:
        self.name, self.version, self.writes = like.name, f"given:{like.version}", like.writes
        self.rows, self.summary = rows, dict(summary)

    def run(self, unit: Unit) -> None:
        unit.meta.update(shards=[SHARD], **self.summary.get("meta", {}))
        for kind, rows in self.rows.items():
            unit.write(kind, rows, shard=SHARD)  # a shard's file: read by shard and as a whole alike

    def summarize(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        return {k: v for k, v in self.summary.items() if k != "meta"}


@dataclass(slots=True)
class Outcome:
    """What the stage wrote (rows per kind, every unit in order), its rejects (as JSON) and its summary."""

    outputs: dict[str, list[dict[str, Any]]]
    rejects: list[dict[str, Any]]
    summary: dict[str, Any]


def run_alone(
    stages: Sequence[Stage],
    name: str,
    cfg: RunConfig,
    upstream: Mapping[str, Mapping[str, Sequence[dict[str, Any]]]] | None = None,
    summaries: Mapping[str, Mapping[str, Any]] | None = None,
    root: Path | None = None,
) -> Outcome:
    """Run stage `name` of `stages` on `upstream` (stage -> kind -> rows); `summaries` adds fields to a
    stand-in's summary (`"meta"`: to its meta), for a stage that reads one (the ingest stage's vocabulary)."""
    upstream, summaries = upstream or {}, summaries or {}
    by_name = {s.name: s for s in stages}
    stage = by_name[name]
    unknown = sorted(set(upstream) - set(by_name))
    if unknown:
        raise ValueError(f"no stage is called {', '.join(unknown)}")
    given = {*stage.reads, *upstream}
    before = [Given(s, upstream.get(s.name, {}), summaries.get(s.name, {})) for s in stages if s.name in given]
    if root is None:
        with tempfile.TemporaryDirectory(prefix="hardneg-stage-") as tmp:
            return _run(Path(tmp), cfg, [*before, stage])
    return _run(root, cfg, [*before, stage])


def _run(root: Path, cfg: RunConfig, stages: list[Stage]) -> Outcome:
    stage = stages[-1]
    stage.validate(cfg)
    run = Run(root, cfg, stages)
    run.check_every_row = True
    for s in run.order:
        run.run_stage(s)
    files = run.reject_files()
    rejects = [r for f in files if f.parent.parent.name == stage.name for r in read_jsonl(f)]
    outputs = {kind: list(run.read_all(stage.name, kind)) for kind in stage.writes}
    summary = orjson.loads((run.stage_dir(stage.name) / "_stage.json").read_bytes())
    return Outcome(outputs, rejects, summary)
