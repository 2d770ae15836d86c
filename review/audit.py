"""The audit: a random, stratified sample of the final dataset, labelled blind, that states its error rate.

The review queue puts the samples the scores most doubt first, so its labels say nothing about the share
of bad samples in what ships. The audit draws instead at random from the kept positives and negatives
(`RUN/splits/<split>/`), stratified by kind (positive, text negative, image negative), type and level,
stores the sample in `RUN/review.sqlite` (`ReviewStore.audit`), and the app serves only those items,
without scores (`hardneg review RUN --audit N`). From their labels (the decision in force per item, the
same rule as everywhere: `apply.decide`) come the estimated share of negatives still true and of
positives unusable, per stratum and per negative type with 95% Wilson intervals, and overall, weighted by
the strata's sizes in the dataset the sample was drawn from. The labels vote like any other: an audited
negative found Still true is dropped by the next `hardneg split`, and still counts in the estimate.

Allocation (`allocate`): every non-empty stratum first gets `MIN_PER_STRATUM` items (all it has when it
is smaller; `N // strata` each when N cannot give every stratum that many), and the rest is divided in
proportion to the strata's sizes by largest remainders, never more than a stratum holds. Within a
stratum the items are taken in a seeded hash order, so a larger N with the same seed extends the sample.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hardneg.core.errors import HardnegError
from hardneg.review.apply import Label, load_labels
from hardneg.review.labels import kind_of
from hardneg.review.store import FILENAME, AuditSample, ReviewStore

MIN_PER_STRATUM = 3  # "a few per stratum": enough for a stratum's interval to mean something
Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
ERRORS = {"positive": frozenset({"ambiguous", "wrong"}), "negative": frozenset({"still_true"})}
GROUPS = (  # overall estimates: (name, the kinds it pools)
    ("positives unusable", ("positive",)),
    ("text negatives still true", ("text_negative",)),
    ("image negatives still true", ("image_negative",)),
    ("negatives still true", ("text_negative", "image_negative")),
)


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def stratum_of(record: dict[str, Any]) -> str:
    """`kind/type/Llevel`: a positive's path type and level, a negative's type and negative level (the
    rows of stats.md's tables)."""
    kind = kind_of(record)
    if kind == "positive":
        return f"positive/{record.get('tuple_type', '')}/L{_int(record.get('level'))}"
    return f"{kind}/{record.get('negative_type', '')}/L{_int(record.get('negative_level'))}"


def _split_stratum(key: str) -> tuple[str, str, str]:
    kind, _, rest = key.partition("/")
    typ, _, level = rest.rpartition("/")
    return kind, typ, level


def allocate(sizes: Mapping[str, int], n: int, minimum: int = MIN_PER_STRATUM) -> dict[str, int]:
    """Items per stratum: a floor for every non-empty stratum, the rest in proportion to size (largest
    remainders, ties by name), capped by each stratum's size; sums to min(n, total)."""
    strata = sorted(k for k, v in sizes.items() if v > 0)
    n = max(0, min(n, sum(sizes[k] for k in strata)))
    floor = min(minimum, n // len(strata)) if strata else 0
    alloc = {k: min(sizes[k], floor) for k in strata}
    while (left := n - sum(alloc.values())) > 0:
        open_ = [k for k in strata if alloc[k] < sizes[k]]
        total = sum(sizes[k] for k in open_)
        quota = {k: left * sizes[k] / total for k in open_}
        for k in open_:
            alloc[k] += min(int(quota[k]), sizes[k] - alloc[k])
        left = n - sum(alloc.values())
        for k in sorted(open_, key=lambda k: (-(quota[k] - int(quota[k])), k))[:left]:
            alloc[k] += alloc[k] < sizes[k]
    return {k: v for k, v in alloc.items() if v}


def _order(seed: int, item_id: Any) -> int:
    """A seeded, stable random order of ids (the same for every N: a larger N extends the sample)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{item_id}".encode(), digest_size=8).digest(), "big")


def draw(records: Iterable[dict[str, Any]], n: int, seed: int) -> tuple[dict[int, str], dict[str, int]]:
    """(audited id -> stratum, stratum -> size): `n` items of `records` by `allocate`, the first of each
    stratum in the seeded order."""
    by_stratum: dict[str, list[int]] = defaultdict(list)
    for r in records:
        if isinstance(r.get("id"), int):
            by_stratum[stratum_of(r)].append(r["id"])
    sizes = {k: len(v) for k, v in by_stratum.items()}
    chosen: dict[int, str] = {}
    for k, count in allocate(sizes, n).items():
        for item_id in sorted(by_stratum[k], key=lambda i: _order(seed, i))[:count]:
            chosen[item_id] = k
    return chosen, sizes


@dataclass(frozen=True, slots=True)
class DrawResult:
    """What a draw did, for the command line: the sample now, and how many items this draw added."""

    sample: AuditSample
    added: int
    asked: int


def draw_audit(run_dir: str | Path, n: int, seed: int) -> DrawResult:
    """Draw (or extend) the run's audit from its final dataset and store it. Idempotent for one seed: the
    same N adds nothing, a larger N adds the items its allocation wants beyond the stored ones, a smaller
    N adds nothing (every stored item stays). Another seed is refused: mixing two orders would no longer
    be one random sample per stratum."""
    from hardneg.review.rundata import RunData  # here: the decide stage imports this module, not the reader

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
    chosen, sizes = draw(records, n, seed)
    # a stored item the audit's labels have dropped since still belongs to the population it came from
    population = Counter(sizes)
    if before is not None:
        present = {r.get("id") for r in records}
        population.update(Counter(k for i, k in before.items.items() if i not in present))
    at = datetime.now(UTC).isoformat(timespec="seconds")
    added = store.add_audit(chosen, seed=seed, asked=n, population=dict(population), at=at)
    sample = store.audit()
    assert sample is not None
    return DrawResult(sample, added, n)


def audit_order(sample: AuditSample) -> list[int]:
    """The order the app shows the audit in: the seeded random order, strata mixed, never by score."""
    return sorted(sample.items, key=lambda i: _order(sample.seed, i))


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion k/n (it stays inside [0, 1] and is sane at 0 and n, where
    the normal interval collapses to a point); `n` may be an effective, non-integer sample size."""
    if n <= 0:
        raise ValueError("no observations")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _cell(population: int, drawn: int, labelled: int, errors: int) -> dict[str, Any]:
    out: dict[str, Any] = {"population": population, "drawn": drawn, "labelled": labelled, "errors": errors}
    if labelled:
        lo, hi = wilson(errors, labelled)
        out |= {"share": round(errors / labelled, 4), "low": round(lo, 4), "high": round(hi, 4)}
    else:
        out |= {"share": None, "low": None, "high": None}
    return out


def _combined(cells: list[dict[str, Any]]) -> dict[str, Any]:
    """Strata pooled by their sizes: the weighted share over the strata with labels, and Wilson's interval
    at Kish's effective sample size 1 / sum(W_h^2 / n_h) (n itself under proportional allocation).
    `coverage`: the share of the pooled population in strata with labels (the estimate speaks for it)."""
    population = sum(c["population"] for c in cells)
    seen = [c for c in cells if c["labelled"] and c["population"]]
    out = {
        "population": population,
        "drawn": sum(c["drawn"] for c in cells),
        "labelled": sum(c["labelled"] for c in cells),
        "errors": sum(c["errors"] for c in cells),
        "share": None,
        "low": None,
        "high": None,
        "coverage": 0.0,
    }
    covered = sum(c["population"] for c in seen)
    if not covered:
        return out
    weights = [c["population"] / covered for c in seen]
    share = sum(w * c["errors"] / c["labelled"] for w, c in zip(weights, seen, strict=True))
    n_eff = 1.0 / sum(w * w / c["labelled"] for w, c in zip(weights, seen, strict=True))
    lo, hi = wilson(share * n_eff, n_eff)
    return out | {
        "share": round(share, 4),
        "low": round(lo, 4),
        "high": round(hi, 4),
        "coverage": round(covered / population, 4) if population else 0.0,
    }


def estimate(sample: AuditSample, labels: Mapping[int, Label]) -> dict[str, Any]:
    """The audit's estimates (stats["audit"]): per stratum, per negative type (its levels pooled), and
    overall; a tied item counts as not labelled yet. A pure function of the sample and the decisions."""
    drawn: Counter[str] = Counter(sample.items.values())
    labelled: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    tied = 0
    for item_id, key in sample.items.items():
        lab = labels.get(item_id)
        if lab is None or lab.tied:
            tied += lab is not None
            continue
        labelled[key] += 1
        kind = _split_stratum(key)[0]
        errors[key] += lab.label in ERRORS["positive" if kind == "positive" else "negative"]
    keys = sorted(set(sample.population) | set(drawn))
    strata = {k: _cell(sample.population.get(k, drawn[k]), drawn[k], labelled[k], errors[k]) for k in keys}
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for k, c in strata.items():
        kind, typ, _ = _split_stratum(k)
        if kind != "positive":
            by_type[f"{kind}/{typ}"].append(c)
    overall = {
        name: _combined([c for k, c in strata.items() if _split_stratum(k)[0] in kinds]) for name, kinds in GROUPS
    }
    return {
        "seed": sample.seed,
        "asked": sample.asked,
        "drawn": len(sample.items),
        "labelled": sum(labelled.values()),
        "tied": tied,
        "drawn_at": sample.at,
        "overall": {k: v for k, v in overall.items() if v["population"]},
        "by_negative_type": {t: _combined(cells) for t, cells in sorted(by_type.items())},
        "strata": strata,
    }


def audit_summary(run_dir: str | Path, labels: Mapping[int, Label] | None = None) -> dict[str, Any]:
    """The run's audit estimates from `RUN/review.sqlite`; {} when no audit was drawn (the decide stage's
    meta carries them to stats.md)."""
    if not (Path(run_dir) / FILENAME).is_file():
        return {}
    sample = ReviewStore(run_dir, create=False).audit()
    if sample is None:
        return {}
    return estimate(sample, load_labels(run_dir) if labels is None else labels)


def audit_key(run_dir: str | Path) -> str | None:
    """A digest of the drawn sample (None without one): a new draw re-decides, so stats.md shows it."""
    if not (Path(run_dir) / FILENAME).is_file():
        return None
    sample = ReviewStore(run_dir, create=False).audit()
    if sample is None:
        return None
    text = f"{sample.seed}:{sample.asked}:{sorted(sample.items.items())}:{sorted(sample.population.items())}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
