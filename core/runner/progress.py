"""What a run tells while it works: the hooks the stage runner calls (`core/runner/stage.py`), and the one line
a finished stage is summed up in. Listeners: the terminal's bars and lines (`flows/progress.py`) and
Prefect's run logger (`flows/generate.py`), so `run_local` and the Prefect flow say the same things.

The runner calls the hooks in the process that drives the stages, never in a worker: a unit's marker
comes back to it (as a Prefect task's result) before `unit_done`.
"""

from __future__ import annotations

from typing import Any


class Progress:
    """The hooks, each a no-op here: subclass and override what you show."""

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        """A stage opens: `units` in all, `pending` still to do (the rest were done by an earlier run)."""

    def unit_done(self, stage: str, marker: dict[str, Any]) -> None:
        """One unit finished; `marker` is its `_done` record (seconds, items_in, written, rejects)."""

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        """A stage closed; `summary` is its `_stage.json`."""

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        """A stage was already finished for this config and input: nothing ran."""


class Tee(Progress):
    """Several listeners as one."""

    def __init__(self, *listeners: Progress | None) -> None:
        self.listeners = [x for x in listeners if x is not None]

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        for x in self.listeners:
            x.stage_start(stage, units, pending)

    def unit_done(self, stage: str, marker: dict[str, Any]) -> None:
        for x in self.listeners:
            x.unit_done(stage, marker)

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        for x in self.listeners:
            x.stage_done(stage, summary)

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        for x in self.listeners:
            x.stage_skipped(stage, summary)


def stage_line(stage: str, summary: dict[str, Any], seconds: float | None = None, skipped: bool = False) -> str:
    """`paths     2.1s  in 40  out 938 (positives 938)  rejects 623`: wall time when given (the summary's
    `seconds` add up the units' times, which overlap when units run in parallel)."""
    written = summary.get("written", {})
    # a stage that decides (or writes the final files) reports what it kept: "out" is then the samples
    # that go on, as the run's summary counts them, not the decisions written about every one
    kept = {k.split(":", 1)[1]: v for k, v in sorted(summary.get("stats", {}).items()) if k.startswith("kept:")}
    out = sum(kept.values()) if kept else sum(written.values())
    shown = kept or written
    kinds = ", ".join(f"{k} {v}" for k, v in shown.items()) if len(shown) > 1 else ""
    kinds = f"kept: {kinds}" if kept and kinds else kinds
    took = "done before" if skipped else f"{summary.get('seconds', 0.0) if seconds is None else seconds:.1f}s"
    line = f"{stage:<12} {took:>11}  in {summary.get('items_in', 0)}  out {out}"
    return line + (f" ({kinds})" if kinds else "") + f"  rejects {summary.get('rejects', 0)}"
