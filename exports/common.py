"""What every export stage shares: the decided samples, English prompts, and the export's folder in
the run (the corpus index and the checks on its graphs are `exports/corpus.py`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardneg.core.errors import HardnegError
from hardneg.core.io import write_json
from hardneg.core.rows import (
    DECIDED_NEGATIVES,
    DECIDED_POSITIVES,
    IMAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    ImageNegativeRow,
    PositiveRow,
    extended,
)
from hardneg.core.runner.stage import Unit
from hardneg.core.splits import SPLITS, split_of
from hardneg.core.words.table import Words
from hardneg.exports.tables import Tables

# -- the decided samples -----------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class KeptPositive(PositiveRow):
    """A positive the write stage publishes, in its split."""

    split: str


def kept_positives(unit: Unit, splits: Iterable[str] = SPLITS) -> list[KeptPositive]:
    """The positives the write stage writes (not dropped by the decide stage) in `splits`: of the unit's
    shards (`Unit.read`)."""
    dropped = unit.shared("decide", "dropped positives", lambda: _dropped(unit))
    wanted = frozenset(splits)
    out = []
    for p in unit.records(LANGUAGE_POSITIVES):
        if p.id not in dropped and (split := split_of(p.image_id, unit.cfg.splits)) in wanted:
            out.append(extended(p, KeptPositive, split=split))
    return out


def _dropped(unit: Unit) -> frozenset[int]:
    return frozenset(d.id for d in unit.records_all(DECIDED_POSITIVES) if not d.keep)


@dataclass(slots=True, kw_only=True)
class KeptImageNegative(ImageNegativeRow):
    """An image negative the write stage publishes: `chosen` is the candidate it writes, `passed` every
    candidate each filter keeps (the chosen one first)."""

    chosen: str
    passed: list[str]


def kept_image_negatives(unit: Unit, positive_ids: set[int]) -> list[KeptImageNegative]:
    """Image negatives the decide stage kept, of kept positives (of the unit's shards, as `kept_positives`)."""
    decisions = unit.shared("decide", "kept image negatives", lambda: _kept_negatives(unit))
    out = []
    for n in unit.records(IMAGE_NEGATIVES):
        d = decisions.get(n.id)
        if d is None or n.positive_id not in positive_ids:
            continue
        best, passed = d
        chosen = n.candidates[best]
        also = [n.candidates[k] for k in passed if k != best]
        out.append(extended(n, KeptImageNegative, chosen=chosen, passed=[chosen, *also]))
    return out


def _kept_negatives(unit: Unit) -> dict[int, tuple[int, list[int]]]:
    """Kept image negative id -> (the chosen candidate, the candidates that passed)."""
    out = {}
    for d in unit.records_all(DECIDED_NEGATIVES):
        if d.keep and d.candidate is not None:
            out[d.id] = (d.candidate, d.passed or [d.candidate])  # decide@v2 runs: the chosen alone
    return out


# -- English ------------------------------------------------------------------------------------------


def noun_phrase(words: Words, name: str, attributes: Iterable[str] = ()) -> str:
    """ "a small dog", "an apple", "the ground", "bananas": a count noun takes "a"/"an", a mass noun "the"
    ("a house on ground" does not read; "a house on the ground" does), a plural none."""
    phrase = " ".join((*attributes, name))
    article = words.indefinite_article(phrase)
    if not article and not words.is_plural(phrase.split()[-1]):
        article = "the"
    return f"{article} {phrase}" if article else phrase


def relation_prompt(words: Words, subject: str, relation: str, obj: str) -> str:
    return f"{noun_phrase(words, subject)} {relation} {noun_phrase(words, obj)}"


# -- the export's folder ------------------------------------------------------------------------------


class ExportFolder:
    """`RUN/<name>/`: JSON records and parquet per table, images as hard links (copies across file
    systems), `summary.json` with the counts. Every path a record holds is relative to the run folder."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.dir = root / name

    def reset(self, *parts: str) -> None:
        """Remove what this stage wrote before: the named parts, or the whole folder."""
        for p in [self.dir / x for x in parts] if parts else [self.dir]:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()

    def place(self, src: Path, rel: str) -> str:
        """Put `src` at `RUN/<name>/<rel>` (a hard link, else a copy); returns its run-relative path."""
        dst = self.dir / rel
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except FileNotFoundError:
                raise HardnegError(f"export: image {src} is missing; rerun `hardneg run` to redo the images") from None
            except OSError:  # another file system, or links not allowed there
                shutil.copyfile(src, dst)
        return dst.relative_to(self.root).as_posix()

    def source(self, path: Path) -> str:
        """Where `path` is, for a later `place` (a shard's row, placed by its stage's `finish`): relative to
        the run folder when it lies in it (the demo's images, the run's edits), so the run may move; else
        absolute."""
        full, root = os.path.abspath(path), os.path.abspath(self.root)
        return os.path.relpath(full, root) if full.startswith(root + os.sep) else full

    def write_tables(self, splits: dict[str, Iterable[dict[str, Any]]], prefix: str = "") -> None:
        """Per split `<prefix><split>.json` and `.parquet` (`exports.tables`), every split of `splits`."""
        with self.tables(prefix, splits) as t:
            t.add_all(splits)

    def tables(self, prefix: str = "", splits: Iterable[str] = SPLITS) -> Tables:
        """The export's tables written as their rows come (`Tables.add`); use it as a context manager."""
        return Tables(self.dir, prefix, splits)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json(self.dir / "summary.json", summary)
