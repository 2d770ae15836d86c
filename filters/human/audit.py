"""The audit: a random, stratified sample of the final dataset, labelled blind, that states its error rate.

The review queue puts the samples the scores most doubt first, so its labels say nothing about the share
of bad samples in what ships. The audit draws instead at random from the kept positives and negatives
(`RUN/splits/<split>/`), stratified by kind (positive, text negative, image negative), type and level,
stores the sample in `RUN/work/review.sqlite` (`ReviewStore.audit`), and the app serves only those items,
without scores (`hardneg review RUN --audit N`). From their labels (the decision in force per item, the
same rule as everywhere: `apply.decide`) come the estimated share of negatives still true and of
positives unusable, per stratum and per negative type with 95% Wilson intervals, and overall, weighted by
the strata's sizes in the dataset the sample was drawn from. The labels vote like any other: an audited
negative found Still true is dropped by the next `hardneg split`, and still counts in the estimate.

Allocation (`allocate`): every non-empty stratum first gets one item (when N is below the number of
strata, the command says so, and the kinds take turns so none goes unseen), then `MIN_PER_STRATUM` each
where N allows every stratum that many, and the rest in proportion to the strata's sizes, never more than a
stratum holds. The audit holds exactly N items: a larger N extends the stored sample to N. Within a stratum
the items are taken in a seeded hash order, so a larger N with the same seed extends the sample.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hardneg.filters.human.apply import Label, load_labels
from hardneg.filters.human.labels import kind_of
from hardneg.filters.human.store import AuditSample, ReviewStore, store_path

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


def allocate(
    sizes: Mapping[str, int], n: int, minimum: int = MIN_PER_STRATUM, have: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Items per stratum, summing to exactly max(what `have` holds, min(n, total)): first one item for
    every non-empty stratum (when `n` is below the number of strata, one each in turn over the kinds, the
    largest strata first, so no kind goes unseen), then `minimum` each where `n` allows every stratum that
    many, then the rest in proportion to size (the largest shortfall first, ties by name), never more than
    a stratum holds and never fewer than `have` already drew from it (an audit extended from N1 to N2
    holds N2 items)."""
    strata = sorted(k for k, v in sizes.items() if v > 0)
    alloc = {k: min((have or {}).get(k, 0), sizes[k]) for k in strata}
    n = max(sum(alloc.values()), min(n, sum(sizes[k] for k in strata)))

    def give(k: str, up_to: int) -> None:
        alloc[k] = max(alloc[k], min(up_to, sizes[k], alloc[k] + n - sum(alloc.values())))

    for k in coverage_order(strata, sizes):
        give(k, 1)
    floor = min(minimum, n // len(strata)) if strata else 0
    for k in coverage_order(strata, sizes):
        give(k, floor)
    base, rest = dict(alloc), n - sum(alloc.values())
    total = sum(sizes[k] for k in strata)
    target = {k: base[k] + rest * sizes[k] / total for k in strata} if total else {}
    while sum(alloc.values()) < n:
        k = min((k for k in strata if alloc[k] < sizes[k]), key=lambda k: (alloc[k] - target[k], k))
        alloc[k] += 1
    return {k: v for k, v in alloc.items() if v}


def coverage_order(strata: list[str], sizes: Mapping[str, int]) -> list[str]:
    """The strata in the order a small sample reaches them: one of each kind in turn (positive, text
    negative, image negative), the largest stratum of each first."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for k in sorted(strata, key=lambda k: (-sizes[k], k)):
        by_kind[k.split("/")[0]].append(k)
    queues = [by_kind[kind] for kind in sorted(by_kind)]
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def _order(seed: int, item_id: Any) -> int:
    """A seeded, stable random order of ids (the same for every N: a larger N extends the sample)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:{item_id}".encode(), digest_size=8).digest(), "big")


def draw(
    records: Iterable[dict[str, Any]], n: int, seed: int, stored: Mapping[int, str] | None = None
) -> tuple[dict[int, str], dict[str, int]]:
    """(newly drawn id -> stratum, stratum -> size): what `n` items by `allocate` add to the `stored` ones
    (each stays and counts in its stratum), the first of each stratum in the seeded order. A stored item
    the labels have dropped from the dataset since still belongs to the population it was drawn from."""
    by_stratum: dict[str, list[int]] = defaultdict(list)
    for r in records:
        if isinstance(r.get("id"), int):
            by_stratum[stratum_of(r)].append(r["id"])
    stored = stored or {}
    present = {i for ids in by_stratum.values() for i in ids}
    gone = Counter(k for i, k in stored.items() if i not in present)
    sizes = {k: len(by_stratum.get(k, ())) + gone[k] for k in by_stratum.keys() | gone.keys()}
    have = Counter(stored.values())
    chosen: dict[int, str] = {}
    for k, count in allocate(sizes, n, have=have).items():
        fresh = [i for i in sorted(by_stratum[k], key=lambda i: _order(seed, i)) if i not in stored]
        for item_id in fresh[: count - have[k]]:
            chosen[item_id] = k
    return chosen, sizes


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
    """The run's audit estimates from `RUN/work/review.sqlite`; {} when no audit was drawn (the decide stage's
    meta carries them to stats.md)."""
    if not store_path(run_dir).is_file():
        return {}
    sample = ReviewStore(run_dir, create=False).audit()
    if sample is None:
        return {}
    return estimate(sample, load_labels(run_dir) if labels is None else labels)


def audit_key(run_dir: str | Path) -> str | None:
    """A digest of the drawn sample (None without one): a new draw re-decides, so stats.md shows it."""
    if not store_path(run_dir).is_file():
        return None
    sample = ReviewStore(run_dir, create=False).audit()
    if sample is None:
        return None
    text = f"{sample.seed}:{sample.asked}:{sorted(sample.items.items())}:{sorted(sample.population.items())}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
