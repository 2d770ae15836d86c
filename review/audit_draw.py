"""Drawing a run's audit (`hardneg review --audit N`): a stratified random sample of its final dataset, read
the way the review app reads it, stored for the app to show (`hardneg.filters.human.audit` says how it is
drawn and what its labels estimate)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from hardneg.core.errors import HardnegError
from hardneg.filters.human.audit import draw
from hardneg.filters.human.store import FILENAME, AuditSample, ReviewStore
from hardneg.review.rundata import RunData


@dataclass(frozen=True, slots=True)
class DrawResult:
    """What a draw did, for the command line: the sample now, how many items this draw added, how many
    were asked for, and how many strata the dataset has (more than N: some went without an item)."""

    sample: AuditSample
    added: int
    asked: int
    strata: int


def draw_audit(run_dir: str | Path, n: int, seed: int) -> DrawResult:
    """Draw (or extend) the run's audit from its final dataset and store it. Idempotent for one seed: the
    same N adds nothing, a larger N adds the items its allocation wants beyond the stored ones, a smaller
    N adds nothing (every stored item stays). Another seed is refused: mixing two orders would no longer
    be one random sample per stratum."""
    if n < 1:
        raise HardnegError(f"--audit must be at least 1, got {n}")
    run = RunData(run_dir)
    records = [*run.positives, *run.negatives]
    if not records:
        raise HardnegError(f"{run_dir}: the final dataset (splits/) is empty; nothing to audit")
    store = ReviewStore(run.root)
    before = store.audit()
    if before is not None and before.seed != seed:
        raise HardnegError(
            f"this run's audit was drawn with --seed {before.seed}; draw more with that seed "
            f"(or delete the audit tables of {FILENAME} to start another)"
        )
    chosen, population = draw(records, n, seed, before.items if before is not None else None)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    added = store.add_audit(chosen, seed=seed, asked=n, population=population, at=at)
    sample = store.audit()
    assert sample is not None
    return DrawResult(sample, added, n, sum(1 for v in population.values() if v))
