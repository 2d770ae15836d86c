"""The run's summary, written once as the run ends: `stats.json`, `stats.md` and the dataset card (`README.md`).

The write stage counts what it publishes and keeps the counts (`stats`) and what the card says of `data/`
(`dataset`) with its own summary. The export stages with a folder of their own (`ExportStage.title`: TRICD
pairs, probes, ImageCoDe sets) run after it and each write their counts to `RUN/<shape>/summary.json`. The
report stage, which always runs last, calls `publish`: the write stage's tables, then a section on the
other shapes, in the registry's order, at the end of `stats.md` and of the card, and under `exports` in
`stats.json`. Each file is written whole, once a run (`hardneg run`, `hardneg split`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from hardneg.core.io import atomic_write_bytes, write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.splits import SPLITS
from hardneg.exports.card import card
from hardneg.exports.stats import markdown

BEGIN = "<!-- hardneg:exports -->"
END = "<!-- /hardneg:exports -->"


def shapes() -> dict[str, tuple[str, str]]:
    """Folder -> (title, what it is) of every registered export with a folder, in the registry's order."""
    return {name: (cls.title, cls.about) for name, cls in EXPORTS.items() if cls.title}


def read_summaries(root: Path) -> dict[str, dict[str, Any]]:
    """`RUN/<shape>/summary.json` of every shape the run exported."""
    out = {}
    for shape in shapes():
        f = root / shape / "summary.json"
        if f.exists():
            out[shape] = orjson.loads(f.read_bytes())
    return out


def section(summaries: dict[str, dict[str, Any]]) -> str:
    """Markdown: a table of counts per split for each exported shape ("" when none)."""
    if not summaries:
        return ""
    parts = ["## Other benchmark shapes\n"]
    known = shapes()
    for shape, s in summaries.items():
        title, what = known[shape]
        parts.append(f"### {title} (`{shape}/`)\n\n{what}.\n")
        counts = s.get("counts") or {}
        if not s.get("enabled", True):
            parts.append("Not exported (`exports` config: disabled).\n")
            continue
        rows = [f"| {k} | " + " | ".join(str(v.get(x, 0)) for x in SPLITS) + f" | {sum(v.values())} |"
                for k, v in counts.items()]  # fmt: skip
        head = ["| what | " + " | ".join(SPLITS) + " | total |", "|---|" + "---|" * (len(SPLITS) + 1)]
        parts.append("\n".join(head + (rows or ["| (none) | 0 | 0 | 0 | 0 |"])) + "\n")
        if notes := s.get("notes"):  # what the official scripts get of a split with nothing in it, and why
            parts.append("\n".join(f"- {n}" for n in notes) + "\n")
    return "\n".join(parts)


def _with_block(text: str, block: str) -> str:
    """`text` with the shapes' section at its end, between markers (none: `text` as it is)."""
    return text.rstrip() + "\n\n" + f"{BEGIN}\n{block.rstrip()}\n{END}\n" if block else text


def publish(root: Path, stats: dict[str, Any], dataset: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Write stats.json, stats.md and README.md (the card, of `dataset` and the published `manifest.json`)
    from the write stage's `stats` and the exports' counts; returns those counts."""
    summaries = read_summaries(root)
    block = section(summaries)
    write_json(root / "stats.json", {**stats, "exports": {k: v.get("counts", {}) for k, v in summaries.items()}})
    text = markdown(stats)
    atomic_write_bytes(root / "stats.md", _with_block(text, block).encode())
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    atomic_write_bytes(root / "README.md", _with_block(card(root, dataset, manifest, text), block).encode())
    return summaries
