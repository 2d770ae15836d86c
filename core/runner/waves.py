"""In which order a run's stages run (each after what it reads), and how they go to the worker pool: in waves
of stages that may run at once, and in which order a wave's units go."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from typing import Any


def in_read_order(stages: Sequence[Any]) -> list[Any]:
    """The stages, each after every stage it reads and otherwise in the order given (a stable topological
    sort: of the stages whose reads are all placed, the first given goes next), so a stage listed before one
    it reads runs after it; a stage that reads every earlier stage (`reads_all`: the write stage, the report)
    comes after every stage given before it. Reading no stage of the run, or stages that read each other in
    a ring, is an error that names them."""
    names = [s.name for s in stages]
    needs = {s.name: set(names[:i]) if s.reads_all else set(s.reads) for i, s in enumerate(stages)}
    for s in stages:
        if unknown := sorted(needs[s.name] - set(names)):
            raise ValueError(f"stage {s.name} reads {unknown[0]!r}, which is not a stage of the run")
    out: list[Any] = []
    placed: set[str] = set()
    while len(out) < len(stages):
        ready = next((s for s in stages if s.name not in placed and needs[s.name] <= placed), None)
        if ready is None:
            left = ", ".join(s.name for s in stages if s.name not in placed)
            raise ValueError(f"stages {left} read each other: no order runs each after what it reads")
        out.append(ready)
        placed.add(ready.name)
    return out


def interleaved(names: list[str], units: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The (stage, unit) jobs of the stages `names` for a pool: the stages of fewest units first (a stage's
    one long unit starts at once), then one unit of each stage in turn, so that two stages' units run side
    by side rather than two of one stage (two probes batches at once hold more memory than a probes batch
    beside a TRICD batch)."""
    order = sorted(names, key=lambda n: len(units[n]))  # stable: ties keep the stages' order
    turns = zip_longest(*(units[n] for n in order))  # a unit of each stage in turn; None once a stage has none
    return [(n, u) for turn in turns for n, u in zip(order, turn, strict=True) if u is not None]


def waves(run: Any) -> list[list[str]]:
    """A run's stages in order, cut into waves that may run at once: a stage joins the wave before it
    unless it reads one of its stages, or reads every earlier stage (the write stage, the report: they
    stand alone), or both would hold a GPU. The first stage is a wave of its own: it lists the shards
    every other stage runs over. With exports on: `filters` beside `refine`, `phrases` beside
    `probe_b`, and TRICD, the probes and ImageCoDe together."""
    out: list[list[str]] = []
    for name in run.order:
        s, wave = run.stages[name], out[-1] if out else []
        joins = (
            bool(wave)
            and wave[0] != run.order[0]
            and not s.reads_all
            and not run.stages[wave[0]].reads_all
            and not any(r in wave for r in run.reads[name])
            and not (s.gpu and any(run.stages[x].gpu for x in wave))
        )
        if joins:
            wave.append(name)
        else:
            out.append([name])
    return out
