"""`hardneg split` refuses a change that would empty the benchmark: a rule (a filter's thresholds,
refinement, best of N) that kept something before and would now keep none of what it sees. The decide
stage runs first; when it empties a rule, its folder is put back as it was and nothing else is rewritten,
so a refused split leaves the run exactly as it found it. `--force` applies it anyway."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hardneg.core.errors import HardnegError
from hardneg.core.runner.stage import SUMMARY, Run


class EmptiedByRule(HardnegError):
    """A split whose rules would drop everything some rule sees."""


@contextmanager
def keep_if_refused(run: Run, name: str) -> Iterator[dict[str, Any] | None]:
    """Run a block that rewrites stage `name`; if it raises, the stage's folder is restored. Yields the
    stage's summary from before (None when it had none)."""
    d = run.stage_dir(name)
    before = run.summary(name) if (d / SUMMARY).exists() else None
    backup = d.with_name(f".{name}.before-split")
    shutil.rmtree(backup, ignore_errors=True)
    if d.exists():
        shutil.copytree(d, backup)
    try:
        yield before
    except BaseException:
        shutil.rmtree(d, ignore_errors=True)
        if backup.exists():
            backup.rename(d)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def refuse_emptying(run: Run, name: str, before: dict[str, Any] | None) -> None:
    """Raise EmptiedByRule when a rule of stage `name` (its summary's `meta.passes`: rule -> passed, seen)
    keeps none of what it sees now but kept some before."""
    was = (before or {}).get("meta", {}).get("passes", {})
    emptied = [
        f"{rule} would keep none of {p['seen']} (kept {was[rule]['passed']} before)"
        if rule in was
        else f"{rule} would keep none of {p['seen']}"
        for rule, p in run.summary(name)["meta"].get("passes", {}).items()
        if p["seen"] and not p["passed"] and (rule not in was or was[rule]["passed"])
    ]
    if emptied:
        raise EmptiedByRule(
            "split refused, the run is unchanged: " + "; ".join(emptied) + " (--force applies it anyway)"
        )
