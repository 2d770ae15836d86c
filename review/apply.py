"""Apply human-filter decisions to a run's records: pure functions, no web.

- A positive labelled Ambiguous or Wrong expression is dropped together with all its negatives.
- A negative labelled Still true or Unreadable is dropped.
- When annotators disagree, the most severe label wins (`labels.SEVERITY`): one veto drops a sample.

Dropped samples come back as reject rows (`stage: "review"`), so `hardneg split` writes them to
`rejects.jsonl` beside every other reject.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardneg.review.agreement import pairwise
from hardneg.review.labels import DROPPING, NEGATIVE_LABELS, POSITIVE_LABELS, SEVERITY
from hardneg.review.store import FILENAME, ReviewStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Label:
    """The decision in force for one item: the most severe label given, who gave it, and every vote."""

    item_id: int
    label: str
    annotators: tuple[str, ...]
    votes: dict[str, str] = field(default_factory=dict)

    @property
    def drops(self) -> bool:
        return self.label in DROPPING

    @property
    def by(self) -> str:
        return ", ".join(self.annotators)


def decide(item_id: int, votes: dict[str, str]) -> Label:
    """The disagreement rule: the most severe label wins; ties name every annotator who gave it."""
    if not votes:
        raise ValueError(f"item {item_id} has no votes")
    worst = max(votes.values(), key=lambda lab: (SEVERITY.get(lab, -1), lab))
    return Label(item_id, worst, tuple(sorted(w for w, lab in votes.items() if lab == worst)), dict(votes))


def load_labels(run_dir: str | Path) -> dict[int, Label]:
    """The labels in force in `RUN/review.sqlite` (the latest of each annotator); {} when nobody reviewed."""
    if not (Path(run_dir) / FILENAME).is_file():
        return {}
    try:
        votes = ReviewStore(run_dir, create=False).current()
    except sqlite3.DatabaseError as e:  # a corrupt or foreign file: say which, do not guess
        raise ValueError(f"{Path(run_dir) / FILENAME}: not a readable review store ({e})") from None
    return {item: decide(item, v) for item, v in votes.items()}


def _drop(record: dict[str, Any], reason: str, label: Label) -> dict[str, Any]:
    return {
        "stage": "review",
        "reason": reason,
        "sample_id": record.get("id"),
        "image_id": record.get("image_id"),
        "detail": {"label": label.label, "by": list(label.annotators), "votes": label.votes},
    }


def apply_labels(
    positives: list[dict[str, Any]], negatives: list[dict[str, Any]], labels: dict[int, Label]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Split records into (kept positives, kept negatives, dropped reject rows); inputs are not modified.

    A label of the other kind (a negative's label on a positive id) is ignored with a warning: ids are
    content hashes, so it can only come from a hand-edited store.
    """
    dropped: list[dict[str, Any]] = []
    dropped_positive: dict[int, Label] = {}
    kept_pos = []
    for p in positives:
        lab = labels.get(p["id"]) if isinstance(p.get("id"), int) else None
        if lab is not None and lab.label not in POSITIVE_LABELS:
            log.warning("label %r on positive %s ignored: not a positive's label", lab.label, p.get("id"))
        elif lab is not None and lab.drops:
            dropped_positive[p["id"]] = lab
            dropped.append(_drop(p, f"review: {lab.label} (by {lab.by})", lab))
            continue
        kept_pos.append(p)
    kept_neg = []
    for n in negatives:
        pid = n.get("positive_id")
        parent = dropped_positive.get(pid) if isinstance(pid, int) else None
        if parent is not None:
            dropped.append(_drop(n, f"review: its positive is {parent.label} (by {parent.by})", parent))
            continue
        lab = labels.get(n["id"]) if isinstance(n.get("id"), int) else None
        if lab is not None and lab.label not in NEGATIVE_LABELS:
            log.warning("label %r on negative %s ignored: not a negative's label", lab.label, n.get("id"))
        elif lab is not None and lab.drops:
            dropped.append(_drop(n, f"review: {lab.label} (by {lab.by})", lab))
            continue
        kept_neg.append(n)
    return kept_pos, kept_neg, dropped


def summary(labels: dict[int, Label]) -> dict[str, Any]:
    """Counts for stats and the manifest: `items` reviewed, `by_label` (the decisions in force),
    `dropping` (items whose decision drops them; their negatives are not counted), `by_annotator` (each
    annotator's own labels) and `agreement` (Cohen's kappa per pair of annotators on common items)."""
    by_annotator: dict[str, Counter[str]] = {}
    for lab in labels.values():
        for who, v in lab.votes.items():
            by_annotator.setdefault(who, Counter())[v] += 1
    return {
        "items": len(labels),
        "by_label": dict(sorted(Counter(lab.label for lab in labels.values()).items())),
        "dropping": sum(lab.drops for lab in labels.values()),
        "by_annotator": {who: dict(sorted(c.items())) for who, c in sorted(by_annotator.items())},
        "agreement": pairwise({i: lab.votes for i, lab in labels.items()}),
    }
