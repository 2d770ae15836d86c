"""The other benchmark shapes in `stats.md`, `stats.json` and the dataset card.

The export stages with a folder of their own (`ExportStage.title`: TRICD pairs, probes, ImageCoDe sets)
run after the write stage, so each writes its counts to `RUN/<shape>/summary.json`, and the report stage,
which always runs last, calls `publish` to put them, in the registry's order, in a section of their own
at the end of `stats.md` and of the card (`README.md`) and under `exports` in `stats.json`. The section
sits between markers and is replaced, never appended twice, so any order of reruns (`hardneg run`,
`hardneg split`) leaves one current copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from hardneg.core.io import atomic_write_bytes, write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.splits import SPLITS

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


def section(summaries: dict[str, dict[str, Any]], heading: str = "##") -> str:
    """Markdown: a table of counts per split for each exported shape ("" when none)."""
    if not summaries:
        return ""
    parts = [f"{heading} Other benchmark shapes\n"]
    known = shapes()
    for shape, s in summaries.items():
        title, what = known[shape]
        parts.append(f"{heading}# {title} (`{shape}/`)\n\n{what}.\n")
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


def _replace_block(text: str, block: str) -> str:
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)].rstrip() + "\n" + text[text.index(END) + len(END) :].lstrip("\n")
    return text.rstrip() + "\n\n" + f"{BEGIN}\n{block.rstrip()}\n{END}\n" if block else text


def publish(root: Path) -> dict[str, dict[str, Any]]:
    """Put the exports' counts into stats.md, stats.json and README.md (those that exist); returns them."""
    summaries = read_summaries(root)
    block = section(summaries, "##")
    for name in ("stats.md", "README.md"):
        f = root / name
        if f.exists():
            atomic_write_bytes(f, _replace_block(f.read_text(), block).encode())
    stats = root / "stats.json"
    if stats.exists():
        data = orjson.loads(stats.read_bytes())
        data["exports"] = {k: v.get("counts", {}) for k, v in summaries.items()}
        write_json(stats, data)
    return summaries
