"""The report's plots: matplotlib's object API on the Agg canvas (no pyplot state, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

DPI = 80  # small PNGs: a plot is ~20-40 KB


def _save(fig: Figure, out: Path) -> None:
    FigureCanvasAgg(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png", dpi=DPI)


def grouped_bars(table: pd.DataFrame, title: str, out: Path, *, ylabel: str = "samples") -> None:
    """One group of bars per row of `table`, one bar per column."""
    fig = Figure(
        layout="constrained", figsize=(max(5.0, 0.55 * len(table) * max(1, len(table.columns)) ** 0.5 + 2), 3.2)
    )
    ax = fig.add_subplot()
    table.plot.bar(ax=ax, rot=30 if len(table) > 4 else 0, width=0.8)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("")
    ax.legend(fontsize=8, ncols=min(4, len(table.columns)))
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right" if len(table) > 4 else "center")
    _save(fig, out)


def horizontal_bars(
    values: pd.Series, title: str, out: Path, *, xlabel: str, xlim: tuple[float, float] | None = None
) -> None:
    fig = Figure(layout="constrained", figsize=(7.0, 0.8 + 0.28 * len(values)))
    ax = fig.add_subplot()
    values[::-1].plot.barh(ax=ax, color="#4a7fb5")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("")
    ax.tick_params(axis="y", labelsize=8)
    if xlim is not None:
        ax.set_xlim(*xlim)
    _save(fig, out)


def score_histogram(
    name: str,
    series: dict[str, Sequence[float]],
    out: Path,
    *,
    threshold: float | None = None,
    threshold_label: str = "",
) -> None:
    """Overlaid histograms (e.g. kept vs rejected) on shared bins, with the threshold as a red line."""
    arrays = {k: np.asarray(v, dtype=float) for k, v in series.items() if len(v)}
    values = np.concatenate(list(arrays.values()))
    lo, hi = float(values.min()), float(values.max())
    if threshold is not None:
        lo, hi = min(lo, threshold), max(hi, threshold)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    bins = np.linspace(lo, hi, 31)
    fig = Figure(figsize=(5.0, 2.8))
    fig.subplots_adjust(left=0.13, right=0.97, top=0.9, bottom=0.1)  # fixed margins: no layout pass
    ax = fig.add_subplot()
    for label, arr in arrays.items():
        ax.hist(arr, bins=bins, alpha=0.6, label=f"{label} ({len(arr)})", histtype="stepfilled")
    if threshold is not None:
        ax.axvline(threshold, color="red", linewidth=2, label=threshold_label or f"threshold {threshold:g}")
    ax.set_title(name)
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    _save(fig, out)
