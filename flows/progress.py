"""The terminal while a run works: a progress bar per stage (on a terminal only; quiet in a pipe or a log
file), one line per stage when it finishes (wall time, items in and out, rejects), and the closing summary
naming `stats.md` and `report.html`. A `core.runner.progress.Progress` listener, so `run_local` and the Prefect
flow drive it the same way. Writes to stderr; the CLI prints its results to stdout."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hardneg.core.runner import progress as hooks


class Terminal(hooks.Progress):
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.bars = Progress(
            TextColumn("{task.description:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            disable=not self.console.is_terminal,
        )
        self._tasks: dict[str, Any] = {}
        self._started: dict[str, float] = {}
        self.lines: list[str] = []  # every stage line printed, in order

    def __enter__(self) -> Terminal:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        self._started[stage] = time.perf_counter()
        self._tasks[stage] = self.bars.add_task(stage, total=units, completed=units - pending)

    def unit_done(self, stage: str, marker: dict[str, Any]) -> None:
        if stage in self._tasks:
            self.bars.advance(self._tasks[stage])

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        task = self._tasks.pop(stage, None)
        if task is not None:
            self.bars.remove_task(task)
        started = self._started.pop(stage, None)
        self._say(hooks.stage_line(stage, summary, None if started is None else time.perf_counter() - started))

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        self._say(hooks.stage_line(stage, summary, skipped=True))

    def _say(self, line: str) -> None:
        self.lines.append(line)
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)


def closing_summary(root: Path, manifest: dict[str, Any], seconds: float) -> str:
    """What the run made and where to look first."""
    c = manifest["counts"]
    ingest = c.get("ingest", {})

    def per_split(d: dict[str, int]) -> str:
        return f"{sum(d.values())} ({', '.join(f'{s} {n}' for s, n in d.items())})"

    lines = [
        f"run folder: {root}  ({seconds:.1f}s)",
        f"  images kept {ingest.get('images_kept', 0)}, rejected {ingest.get('images_rejected', 0)}; "
        f"positives {per_split(c['positives'])} of {c['positives_candidates']} candidates; "
        f"negatives {per_split(c['negatives'])}",
        *(f"  WARNING: {w}" for w in c.get("warnings", c.get("text_negative_mix", {}).get("warnings", []))),
        f"  read first: {root / 'stats.md'}",
        f"  report:     {root / 'report.html'}",
        f'  dataset:    datasets.load_dataset("{root}")',
    ]
    return "\n".join(lines)


def split_counts(manifest: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Samples per (kind, split): positives, text negatives, image negatives; the table `hardneg split`
    prints and the flow's counts artifact."""
    c = manifest["counts"]
    image: dict[str, int] = {}
    for key, n in c.get("image_negatives_by_split_type_level", {}).items():
        image[key.split("/")[0]] = image.get(key.split("/")[0], 0) + n
    out = {}
    for split, n in c["positives"].items():
        out[("positives", split)] = n
        out[("text negatives", split)] = c["negatives"].get(split, 0) - image.get(split, 0)
        out[("image negatives", split)] = image.get(split, 0)
    return out


def export_counts(root: Path) -> dict[tuple[str, str], int]:
    """Per (export: kind, split): what each export of the run folder holds (its `summary.json` counts)."""
    out: dict[tuple[str, str], int] = {}
    for f in sorted(root.glob("*/summary.json")):
        try:
            summary = orjson.loads(f.read_bytes())
            shape, counts = summary["shape"], summary.get("counts", {})
            for kind, per_split in counts.items():
                for split, n in per_split.items():
                    if isinstance(n, int):
                        out[(f"{shape}: {kind}", split)] = n
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # a folder that is no export, or an export from another version: not counted
    return out


def split_table(
    before: dict[str, Any],
    after: dict[str, Any],
    exports_before: dict[tuple[str, str], int] | None = None,
    exports_after: dict[tuple[str, str], int] | None = None,
) -> str:
    """Counts per kind and split before and after a `hardneg split`, as a text table: the FineCops-Ref
    samples, then every export's (TRICD, the probes, ImageCoDe), so an export that lost everything shows."""
    import pandas as pd

    b = split_counts(before) | (exports_before or {})
    a = split_counts(after) | (exports_after or {})
    kinds = list(dict.fromkeys(k for k, _ in split_counts(after)))  # positives, text, image negatives
    splits = {"train": 0, "val": 1, "test": 2}

    def order(key: tuple[str, str]) -> tuple[int, str, int]:  # the samples in their order, then the exports
        kind, split = key
        return (
            (kinds.index(kind), "", splits.get(split, 3)) if kind in kinds else (len(kinds), kind, splits.get(split, 3))
        )

    keys = sorted(a | b, key=order)
    rows = [
        {"kind": k, "split": s, "before": b.get((k, s), 0), "after": a.get((k, s), 0)}
        for k, s in keys
        if b.get((k, s), 0) or a.get((k, s), 0)
    ]
    df = pd.DataFrame(rows).set_index(["kind", "split"])
    df["change"] = [f"{d:+d}" if d else "" for d in df["after"] - df["before"]]
    return df.to_string()
