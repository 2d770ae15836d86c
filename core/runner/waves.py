"""The order in which a wave's units go to the worker pool."""

from __future__ import annotations

from itertools import zip_longest


def interleaved(names: list[str], units: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The (stage, unit) jobs of the stages `names` for a pool: the stages of fewest units first (a stage's
    one long unit starts at once), then one unit of each stage in turn, so that two stages' units run side
    by side rather than two of one stage (two probes batches at once hold more memory than a probes batch
    beside a TRICD batch)."""
    order = sorted(names, key=lambda n: len(units[n]))  # stable: ties keep the stages' order
    turns = zip_longest(*(units[n] for n in order))  # a unit of each stage in turn; None once a stage has none
    return [(n, u) for turn in turns for n, u in zip(order, turn, strict=True) if u is not None]
