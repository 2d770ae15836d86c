"""What the write stage publishes: each decided sample as its split's files hold it, and the writer of those
files.

A published sample is its record as the language stage (a positive, a text negative) or the images stage (an
image negative) wrote it, in its split (`core/splits.py`: by image, so a negative is always in its positive's
split), with the scores the decide stage flattened for it (the review app's queue reads them); an image
negative names the candidate the filters chose as its `file_name`. `published` streams them in the order the
files hold them; `SplitFiles` writes `splits/<split>/{positive,negative,coco}.json` as they come.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hardneg import __version__
from hardneg.core.io import JsonArrayWriter
from hardneg.core.rows import (
    IMAGE_NEGATIVES,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    ImageNegativeRow,
    NegativeDecisionRow,
    PositiveDecisionRow,
    PositiveRow,
    TextNegativeRow,
    extended,
)
from hardneg.core.runner.stage import Unit
from hardneg.core.schema import as_row
from hardneg.core.splits import SPLITS, split_of
from hardneg.exports.coco import CocoWriter
from hardneg.exports.common import KeptPositive
from hardneg.exports.dataset import source_dir
from hardneg.exports.stats import gist

Json = dict[str, Any]


@dataclass(slots=True, kw_only=True)
class PublishedPositive(KeptPositive):
    """A positive as `positive.json` holds it: a kept positive in its split, with the decide stage's scores
    and risk reasons where it scored the positive (e.g. the detector's; `scores` empty: the row has none)."""

    scores: dict[str, float] = field(default_factory=dict)

    def to_row(self) -> Json:
        return _in_split(PositiveRow.to_row(self), self.scores, self.split)


@dataclass(slots=True, kw_only=True)
class PublishedTextNegative(TextNegativeRow):
    """A text negative as `negative.json` holds it (`scores` None or empty: the row has none)."""

    split: str
    scores: dict[str, float] | None = None

    def to_row(self) -> Json:
        return _in_split(TextNegativeRow.to_row(self), self.scores, self.split)


def _in_split(row: Json, scores: dict[str, float] | None, split: str) -> Json:
    """A sample's row as its split file holds it: its scores, where it has any, then its split."""
    if scores:
        row["scores"] = scores
    row["split"] = split
    return row


@dataclass(slots=True, kw_only=True)
class PublishedImageNegative(ImageNegativeRow):
    """An image negative as `negative.json` holds it: `file_name` the chosen candidate, its scores."""

    scores: dict[str, float]
    split: str


Published = PublishedPositive | PublishedTextNegative | PublishedImageNegative


def published(
    unit: Unit,
    positives: Mapping[int, PositiveDecisionRow],
    negatives: Mapping[int, NegativeDecisionRow],
    edits: dict[str, Counter],
) -> Iterator[Published]:
    """The samples the decisions keep, in the order the split files hold them: shard by shard, its
    positives then its text negatives, then the image negatives. Counts what it reads in `unit.items_in`
    (the positives) and, per image kind, in `edits`: made, verified, and why the rest were not."""
    splits = unit.cfg.splits
    dropped = {i for i, d in positives.items() if not d.keep}
    for shard in unit.run.shards():
        for p in unit.records(LANGUAGE_POSITIVES, shard):
            unit.items_in += 1
            if p.id in dropped:
                continue
            out = extended(p, PublishedPositive, split=split_of(p.image_id, splits))
            if (decided := positives.get(p.id)) is not None and decided.scores:
                out.scores, out.risk_reasons = decided.scores, decided.risk_reasons
            yield out
        for n in unit.records(LANGUAGE_NEGATIVES, shard):
            d = negatives.get(n.id)
            if d is None or not d.keep or n.positive_id in dropped:
                continue
            yield extended(n, PublishedTextNegative, split=split_of(n.image_id, splits), scores=d.scores)
    for n in unit.records_all(IMAGE_NEGATIVES):
        d = negatives.get(n.id)
        made = edits[n.negative_type]
        made["made"] += 1
        if d is not None and not d.keep:
            made["why:" + gist(d.reason or "")] += 1
        if d is None or not d.keep or n.positive_id in dropped or d.candidate is None:
            continue
        made["verified"] += 1
        out = extended(n, PublishedImageNegative, split=split_of(n.source_image_id, splits), scores=d.scores or {})
        out.file_name = n.candidates[d.candidate]
        yield out


class SplitFiles:
    """`splits/<split>/{positive,negative,coco}.json` under `out`, written as the samples come, and how many
    of each (split, type, level) went in: `positives`, `text_negatives`, `image_negatives`. `images`: the run
    has source images (the COCO files name the dataset's copies of them)."""

    def __init__(self, out: Path, images: bool) -> None:
        folder = out / "splits"
        self.positive_files = {s: JsonArrayWriter(folder / s / "positive.json") for s in SPLITS}
        self.negative_files = {s: JsonArrayWriter(folder / s / "negative.json") for s in SPLITS}
        self.coco = {s: CocoWriter(folder / s / "coco.json", source_dir(s) if images else None) for s in SPLITS}
        self.positives: Counter = Counter()
        self.text_negatives: Counter = Counter()
        self.image_negatives: Counter = Counter()

    def add(self, r: Published) -> None:
        if isinstance(r, PublishedPositive):
            self.positive_files[r.split].write(as_row(r))
            self.positives[(r.split, r.tuple_type, r.level)] += 1
        else:
            self.negative_files[r.split].write(as_row(r))
            table = self.text_negatives if isinstance(r, PublishedTextNegative) else self.image_negatives
            table[(r.split, r.negative_type, r.negative_level)] += 1
        self.coco[r.split].add(r)

    def counts(self, negatives: bool = False) -> dict[str, int]:
        """Samples written per split: positives, or negatives of both kinds."""
        files = self.negative_files if negatives else self.positive_files
        return {s: files[s].count for s in SPLITS}

    def close(self) -> None:
        for s in SPLITS:
            self.positive_files[s].close()
            self.negative_files[s].close()
            self.coco[s].close({"description": f"hardneg {s} split", "version": __version__, "split": s})


def kept_digest(positives: Iterable[PositiveDecisionRow], negatives: Iterable[NegativeDecisionRow], meta: Json) -> str:
    """What the decide stage's decisions publish, as one digest: each sample's keep and chosen candidate
    (not the reasons: their wording names the thresholds), and what the human filter and the audit said
    (`meta`'s review and audit, which stats.md and the card report). Two decisions with one digest
    publish the same benchmark."""
    rows = sorted(
        [(0, r.id, bool(r.keep), -1) for r in positives]
        + [(1, r.id, bool(r.keep), -1 if r.candidate is None else r.candidate) for r in negatives]
    )
    said = {k: meta.get(k) for k in ("review", "audit")}
    return hashlib.blake2b(orjson.dumps([rows, said], option=orjson.OPT_SORT_KEYS), digest_size=16).hexdigest()
