"""Apply human-filter decisions to a run's records: pure functions, no web.

The rule (docs/review.md): each annotator's latest label is one vote, to keep (Correct, Negative) or to
drop (Ambiguous, Wrong expression, Still true, Unreadable).
- More than half the votes decide: the item keeps or drops, recorded under the commonest label on that side.
- An adjudicator's label (`hardneg review --adjudicator NAME`, kept in the store) is the final word: once
  an adjudicator has labelled an item, only adjudicators' votes count.
- A tie keeps the item, counted as tied, and the review app puts it first for an adjudicator.
- A dropped positive drops all its negatives.

Dropped samples come back as `Dropped` records, which the decide stage writes as rejects of the review
(`rejects.jsonl`, beside every other reject).
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hardneg.core.errors import HardnegError
from hardneg.filters.human.agreement import pairwise
from hardneg.filters.human.labels import DROPPING, NEGATIVE_LABELS, POSITIVE_LABELS, SEVERITY
from hardneg.filters.human.store import ReviewStore, store_path

log = logging.getLogger(__name__)

TIED = "tied"  # the decision of an item without a majority: kept, and queued for an adjudicator
TIED_LISTED = 20  # tied item ids the summary names (stats.md shows them; the app lists them all)


@dataclass(frozen=True, slots=True)
class Label:
    """The decision in force for one item: its label (or TIED), who carried it, by which rule, every vote."""

    item_id: int
    label: str
    annotators: tuple[str, ...]
    votes: dict[str, str] = field(default_factory=dict)
    rule: str = "majority"  # "majority", "adjudicator" or "tie"

    @property
    def drops(self) -> bool:
        return self.label in DROPPING

    @property
    def tied(self) -> bool:
        return self.rule == "tie"

    @property
    def by(self) -> str:
        names = ", ".join(self.annotators)
        return f"{names} as adjudicator" if self.rule == "adjudicator" else names


def _majority(votes: dict[str, str]) -> tuple[str, tuple[str, ...]] | None:
    """The side (keep or drop) more than half the votes are on: its commonest label (the more severe of
    two equally common) and its voters; None when the sides are equal."""
    drop = {who: lab for who, lab in votes.items() if lab in DROPPING}
    keep = {who: lab for who, lab in votes.items() if lab not in DROPPING}
    if len(drop) == len(keep):
        return None
    side = drop if len(drop) > len(keep) else keep
    counts = Counter(side.values())
    label = max(counts, key=lambda lab: (counts[lab], SEVERITY.get(lab, -1), lab))
    return label, tuple(sorted(side))


def decide(item_id: int, votes: dict[str, str], adjudicators: Collection[str] = ()) -> Label:
    """The rule: adjudicators' votes alone when any adjudicator voted, else everyone's; a majority decides,
    and no majority is a tie (kept, never silently dropped)."""
    if not votes:
        raise ValueError(f"item {item_id} has no votes")
    final = {who: lab for who, lab in votes.items() if who in adjudicators}
    counted = final or votes
    won = _majority(counted)
    if won is None:
        return Label(item_id, TIED, tuple(sorted(counted)), dict(votes), "tie")
    return Label(item_id, won[0], won[1], dict(votes), "adjudicator" if final else "majority")


def decide_all(store: ReviewStore) -> dict[int, Label]:
    """Every labelled item's decision, from the votes and the adjudicators the store holds."""
    adjudicators = store.adjudicators()
    return {item: decide(item, v, adjudicators) for item, v in store.current().items()}


def pseudonymous(labels: dict[int, Label]) -> dict[int, Label]:
    """The labels with each annotator named "annotator k" (k by name order), for what a run publishes
    (rejects, stats, the card, the manifest, the report) unless `review.publish_annotators` says names
    may go out: who labelled is the team's business, how many and how they agreed is the reader's."""
    names = sorted({who for lab in labels.values() for who in (*lab.votes, *lab.annotators)})
    alias = {who: f"annotator {k}" for k, who in enumerate(names, 1)}
    return {
        i: replace(
            lab,
            annotators=tuple(alias[w] for w in lab.annotators),
            votes={alias[w]: v for w, v in lab.votes.items()},
        )
        for i, lab in labels.items()
    }


def load_labels(run_dir: str | Path) -> dict[int, Label]:
    """The labels in force in `RUN/work/review.sqlite` (the latest of each annotator); {} when nobody reviewed."""
    if not store_path(run_dir).is_file():
        return {}
    try:
        return decide_all(ReviewStore(run_dir, create=False))
    except sqlite3.DatabaseError as e:  # a corrupt or foreign file: say which, do not guess
        raise HardnegError(f"{store_path(run_dir)}: not a readable review store ({e})") from None


@dataclass(frozen=True, slots=True)
class Reviewable:
    """What the human filter reads of a sample: its id, the image it is shown on and, a negative's, the id of
    its positive."""

    id: int
    image_id: str | None
    positive_id: int | None = None


def reviewable(rows: Iterable[Mapping[str, Any]]) -> list[Reviewable]:
    """The samples of published rows (a split file's), those with an integer id."""
    out = []
    for r in rows:
        sid, image, parent = r.get("id"), r.get("image_id"), r.get("positive_id")
        if isinstance(sid, int):
            out.append(
                Reviewable(sid, image if isinstance(image, str) else None, parent if isinstance(parent, int) else None)
            )
    return out


@dataclass(frozen=True, slots=True)
class Dropped:
    """A sample the labels drop, and why: the decide stage's reject of it (`stage` review)."""

    sample_id: int
    image_id: str | None
    reason: str
    detail: dict[str, Any]


def _drop(sample: Reviewable, reason: str, label: Label) -> Dropped:
    detail = {"label": label.label, "by": list(label.annotators), "rule": label.rule, "votes": label.votes}
    return Dropped(sample.id, sample.image_id, reason, detail)


def _in_force(labels: dict[int, Label], sample: Reviewable) -> Label | None:
    """The sample's decision, None when it has none that acts (unlabelled, or tied: a tie keeps it)."""
    lab = labels.get(sample.id)
    return None if lab is None or lab.tied else lab


def apply_labels(
    positives: Sequence[Reviewable], negatives: Sequence[Reviewable], labels: dict[int, Label]
) -> tuple[list[Reviewable], list[Reviewable], list[Dropped]]:
    """Split samples into (kept positives, kept negatives, dropped); inputs are not modified.

    A label of the other kind (a negative's label on a positive id) is ignored with a warning: ids are
    content hashes, so it can only come from a hand-edited store.
    """
    dropped: list[Dropped] = []
    dropped_positive: dict[int, Label] = {}
    kept_pos = []
    for p in positives:
        lab = _in_force(labels, p)
        if lab is not None and lab.label not in POSITIVE_LABELS:
            log.warning("label %r on positive %s ignored: not a positive's label", lab.label, p.id)
        elif lab is not None and lab.drops:
            dropped_positive[p.id] = lab
            dropped.append(_drop(p, f"review: {lab.label} (by {lab.by})", lab))
            continue
        kept_pos.append(p)
    kept_neg = []
    for n in negatives:
        parent = dropped_positive.get(n.positive_id) if n.positive_id is not None else None
        if parent is not None:
            dropped.append(_drop(n, f"review: its positive is {parent.label} (by {parent.by})", parent))
            continue
        lab = _in_force(labels, n)
        if lab is not None and lab.label not in NEGATIVE_LABELS:
            log.warning("label %r on negative %s ignored: not a negative's label", lab.label, n.id)
        elif lab is not None and lab.drops:
            dropped.append(_drop(n, f"review: {lab.label} (by {lab.by})", lab))
            continue
        kept_neg.append(n)
    return kept_pos, kept_neg, dropped


def summary(labels: dict[int, Label]) -> dict[str, Any]:
    """Counts for stats and the manifest: `items` reviewed, `by_label` (the decisions in force, TIED
    included), `dropping` (items whose decision drops them; their negatives are not counted), `tied` and
    `tied_items` (the first TIED_LISTED ids, waiting for an adjudicator), `adjudicated`, `by_annotator`
    (each annotator's own labels) and `agreement` (Cohen's kappa per pair of annotators on common items)."""
    by_annotator: dict[str, Counter[str]] = {}
    for lab in labels.values():
        for who, v in lab.votes.items():
            by_annotator.setdefault(who, Counter())[v] += 1
    tied = sorted(i for i, lab in labels.items() if lab.tied)
    return {
        "items": len(labels),
        "by_label": dict(sorted(Counter(lab.label for lab in labels.values()).items())),
        "dropping": sum(lab.drops for lab in labels.values()),
        "tied": len(tied),
        "tied_items": tied[:TIED_LISTED],
        "adjudicated": sum(lab.rule == "adjudicator" for lab in labels.values()),
        "by_annotator": {who: dict(sorted(c.items())) for who, c in sorted(by_annotator.items())},
        "agreement": pairwise({i: lab.votes for i, lab in labels.items()}),
    }
