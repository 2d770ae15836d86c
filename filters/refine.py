"""SugarCREPE's adversarial refinement (Hsieh et al., 2023) as a pure decision rule.

Two text-only scorers (a plausibility model and a grammar-acceptability model in the paper) score the
positive and the negative text of each pair. If a scorer prefers the positive for most pairs, a
"blind" model that never looks at the image can solve the benchmark; refinement removes that shortcut
by keeping a subset in which, for each scorer, the gap ``g = s(pos) - s(neg)`` is as often positive as
negative, at every magnitude.

Binning (per group, per axis; ``half = bins // 2``)::

    scale  = max |g| over the group's pairs on that axis
    bin(g) = sign(g) * min(half, ceil(|g| / scale * half))      # in {-half..-1, 1..half}, never 0

so the bin of ``-g`` is exactly ``-bin(g)`` and each cell ``(i, j)`` has the point-mirror cell ``(-i, -j)``.
Groups: pairs with both gaps zero ("zero") are kept; pairs with both gaps non-zero ("2d") are binned on
a ``bins_2d x bins_2d`` grid; pairs with exactly one zero gap are binned in one dimension with
``bins_1d`` bins on the non-zero gap, separately for "1d:g1" (g2 = 0) and "1d:g2" (g1 = 0) because the two
scorers have different scales. For each cell and its mirror, the smaller side is kept whole and an
equal-size seeded sample of the larger side is kept; a cell whose mirror is empty is dropped.

Small corpora (``min_per_cell > 0``): pairs carry a ``group`` (the negative type and level) and each
group is refined on its own, so a type a blind model finds easy cannot hide behind one it finds hard.
SugarCREPE's 50 x 50 grid assumes tens of thousands of pairs; on a few hundred nearly every cell's mirror
is empty and nearly everything is dropped. So the grid is pooled to the group's size: ``half`` magnitude
bins per sign with at least ``min_per_cell`` pairs expected per cell (``half = floor(sqrt(n / (4 m)))``
in 2d, ``floor(n / (2 m))`` in 1d, between 1 and ``bins // 2``), their edges at quantiles of ``|g|`` so
each magnitude bin holds as many pairs (one large gap cannot squeeze the rest into bin 1). The bin of
``-g`` is still ``-bin(g)``: mirror cells stay exact, and the result is still at chance for both scorers.

Which pairs of the larger side are kept does not change the balance, only whom it serves. A pair may name
the positive it negates (``of``); several candidates of one positive then compete, and the larger side keeps
first the pairs whose positive has fewest kept so far (the smaller sides, kept whole, count first), the
rest in a seeded order. A positive the blind scorers find easy for most of its candidates then still keeps
one, instead of the sample happening to keep two of one positive and none of the next: on 8,196 real GQA
graphs as many kept pairs gave an eighth more positives a negative.

Sampling sorts members by key and seeds one RNG per (seed, group, cell pair); cells are visited in sorted
order, so the result depends on the set of pairs and the seed only, never on input order.

Scoring is the refine stage's (`filters/refine_stage.py`, with the `filters/scorers/text.py` filters);
`refine` never runs a model, so re-refining with another seed or grid costs nothing.
"""

from __future__ import annotations

import bisect
import logging
import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

# recorded in provenance; bump when the binning or sampling changes. v2: groups, pooled bins (min_per_cell);
# v3: the larger side keeps first the pairs of positives with fewest kept
VERSION = "refine@v3"

Cell = tuple[int, ...]  # (i, j) for "2d", (i,) for the 1d groups


@dataclass(frozen=True, slots=True)
class RefinePair:
    """One positive/negative pair: the gaps s1(pos) - s1(neg) and s2(pos) - s2(neg) of two scorers."""

    key: str
    g1: float
    g2: float
    group: str = ""  # refined on its own (with `min_per_cell`): the negative's type and level
    of: str = ""  # the positive it negates: a larger side keeps first the pairs of positives with fewest kept


@dataclass(frozen=True, slots=True)
class RefineResult:
    """Every input key is in exactly one of `kept` and `dropped` (key -> reason). `groups`: per pair group,
    its pairs and how many were kept; `cells`: each key's cell (a kept cell and its mirror hold as many)."""

    kept: set[str]
    dropped: dict[str, str]
    groups: dict[str, dict[str, int]] = field(default_factory=dict)
    cells: dict[str, tuple[str, Cell]] = field(default_factory=dict, compare=False)  # key -> (group, cell)

    @property
    def kept_share(self) -> float:
        total = len(self.kept) + len(self.dropped)
        return len(self.kept) / total if total else math.nan


def gaps(pos_scores: Sequence[float], neg_scores: Sequence[float]) -> list[float]:
    """Element-wise ``pos - neg``; both sequences are one scorer's scores, aligned by pair."""
    if len(pos_scores) != len(neg_scores):
        raise ValueError(f"pos_scores has {len(pos_scores)} items but neg_scores has {len(neg_scores)}")
    out = [float(p) - float(n) for p, n in zip(pos_scores, neg_scores, strict=True)]
    bad = [i for i, g in enumerate(out) if not math.isfinite(g)]
    if bad:
        raise ValueError(f"non-finite gap at pair index {bad[0]} ({len(bad)} in all)")
    return out


def bin_index(g: float, scale: float, bins: int) -> int:
    """Signed bin of a non-zero gap: ``sign(g) * min(bins//2, ceil(|g| / scale * bins//2))``."""
    half = bins // 2
    # min(): |g| == scale can round a hair above half
    return int(math.copysign(min(half, max(1, math.ceil(abs(g) / scale * half))), g))


def assign_cells(
    pairs: Sequence[RefinePair], bins_2d: int = 50, bins_1d: int = 10, *, zero_tol: float = 0.0, min_per_cell: int = 0
) -> dict[str, tuple[str, Cell]]:
    """Key -> (group, cell) with group "zero", "2d", "1d:g1" or "1d:g2", prefixed by the pair's own group
    ("replace_object/L1|2d") when it has one (see the module docstring)."""
    _check(pairs, bins_2d, bins_1d, zero_tol, min_per_cell)
    groups: dict[str, list[RefinePair]] = defaultdict(list)
    for p in pairs:
        z1, z2 = abs(p.g1) <= zero_tol, abs(p.g2) <= zero_tol
        kind = "zero" if z1 and z2 else "2d" if not (z1 or z2) else "1d:g1" if z2 else "1d:g2"
        groups[_group(p.group, kind)].append(p)
    out: dict[str, tuple[str, Cell]] = {}
    for group, members in groups.items():
        kind = group.rpartition("|")[2]
        if kind == "zero":
            out.update((p.key, (group, ())) for p in members)
            continue
        axes = ("g1", "g2") if kind == "2d" else (kind[3:],)
        bins = bins_2d if kind == "2d" else bins_1d
        binners = [_binner([abs(getattr(p, a)) for p in members], bins, min_per_cell, len(axes)) for a in axes]
        for p in members:
            out[p.key] = (group, tuple(b(getattr(p, a)) for a, b in zip(axes, binners, strict=True)))
    return out


def bins_per_sign(n: int, bins: int, min_per_cell: int, dims: int) -> int:
    """Magnitude bins per sign for `n` pairs: `bins // 2`, or fewer so that each of the (2 * half) ** dims
    cells expects `min_per_cell` pairs (at least 1)."""
    if min_per_cell <= 0:
        return bins // 2
    fit = math.sqrt(n / (4 * min_per_cell)) if dims == 2 else n / (2 * min_per_cell)
    return max(1, min(bins // 2, math.floor(fit)))


def _binner(magnitudes: list[float], bins: int, min_per_cell: int, dims: int) -> Callable[[float], int]:
    """The signed bin of a gap on one axis: SugarCREPE's uniform bins up to the largest |g| (min_per_cell 0),
    or `bins_per_sign` bins with edges at quantiles of |g|."""
    if min_per_cell <= 0:
        scale = max(magnitudes)
        return lambda g: bin_index(g, scale, bins)
    half = bins_per_sign(len(magnitudes), bins, min_per_cell, dims)
    ranked = sorted(magnitudes)
    edges = [ranked[(len(ranked) * k) // half] for k in range(1, half)]
    return lambda g: int(math.copysign(1 + bisect.bisect_left(edges, abs(g)), g))


def refine(
    pairs: Sequence[RefinePair],
    seed: int,
    bins_2d: int = 50,
    bins_1d: int = 10,
    *,
    zero_tol: float = 0.0,
    min_per_cell: int = 0,
) -> RefineResult:
    """Keep a subset of `pairs` on which both scorers prefer the positive exactly as often as the negative
    (within each pair group, with `min_per_cell`).

    `zero_tol`: a gap with ``|g| <= zero_tol`` counts as zero (0.0: exact ties only, right for the discrete
    rule scorer and for identical texts). `min_per_cell`: 0 is SugarCREPE's fixed grid; above 0, each
    group's grid is pooled to its size (see the module docstring).
    """
    cells = assign_cells(pairs, bins_2d, bins_1d, zero_tol=zero_tol, min_per_cell=min_per_cell)
    kept: set[str] = set()
    dropped: dict[str, str] = {}
    members: dict[tuple[str, Cell], list[str]] = defaultdict(list)
    for key, (group, cell) in cells.items():
        if group.rpartition("|")[2] == "zero":
            kept.add(key)  # neither scorer prefers either text: no bias to remove
        else:
            members[(group, cell)].append(key)
    larger: list[tuple[str, Cell, list[str], int]] = []
    for (group, cell), keys in sorted(members.items()):
        mirror = tuple(-i for i in cell)
        here, there = _label(group, cell), _label(group, mirror, short=True)
        other = members.get((group, mirror))
        if not other:
            for k in keys:
                dropped[k] = f"refine: mirror cell empty: {here}, mirror {there}"
            continue
        if len(keys) <= len(other):
            kept.update(keys)  # the smaller (or an equal) side is kept whole
        else:
            larger.append((group, cell, keys, len(other)))
    of = {p.key: p.of for p in pairs}
    served = Counter(of[k] for k in kept if of[k])  # kept pairs per positive named
    for group, cell, keys, n in larger:
        # The larger side: an equal-size sample, seeded per cell pair so other cells cannot shift it, the pairs
        # of positives with fewest kept first.
        mirror = tuple(-i for i in cell)
        canonical = max(cell, mirror)
        rng = random.Random(f"{VERSION}:{seed}:{group}:{canonical}")
        if any(of[k] for k in keys):
            rank = {k: i for i, k in enumerate(rng.sample(sorted(keys), len(keys)))}
            chosen = set(sorted(keys, key=lambda k: (served[of[k]] if of[k] else 0, rank[k]))[:n])
        else:  # no positive named: SugarCREPE's uniform sample
            chosen = set(rng.sample(sorted(keys), n))
        kept.update(chosen)
        served.update(of[k] for k in chosen if of[k])
        here, there = _label(group, cell), _label(group, mirror, short=True)
        for k in keys:
            if k not in chosen:
                dropped[k] = (
                    f"refine: larger side of {here} vs mirror {there}"
                    if group.endswith("2d")
                    else f"refine: {here} larger than mirror {there}"
                )
    report: dict[str, dict[str, int]] = {}
    by_key = {p.key: p for p in pairs}
    for key in cells:
        g = report.setdefault(by_key[key].group, {"pairs": 0, "kept": 0})
        g["pairs"] += 1
        g["kept"] += key in kept
    logger.info(
        "refine: kept %d of %d pairs (%d both-zero); dropped %d",
        len(kept),
        len(cells),
        sum(1 for g, _ in cells.values() if g.endswith("zero")),
        len(dropped),
    )
    return RefineResult(kept=kept, dropped=dropped, groups=report, cells=cells)


def chance_accuracy(
    pairs: Sequence[RefinePair], kept: Collection[str] | None = None, *, zero_tol: float = 0.0
) -> tuple[float, float]:
    """Per scorer, the accuracy of "pick the higher-scored text" over `pairs` (only `kept` keys if given).

    A pair counts 1 when s(pos) > s(neg) (gap > zero_tol), 0 when below, and 0.5 on a tie (a blind pick
    between equal scores is right half the time), so a set refined with the same `zero_tol` scores exactly
    0.5 for both scorers. Returns (nan, nan) when no pair is counted.
    """
    chosen = [p for p in pairs if kept is None or p.key in kept]
    if not chosen:
        return math.nan, math.nan

    def acc(values: list[float]) -> float:
        return sum(0.5 if abs(g) <= zero_tol else 1.0 if g > 0 else 0.0 for g in values) / len(values)

    return acc([p.g1 for p in chosen]), acc([p.g2 for p in chosen])


def _group(own: str, kind: str) -> str:
    return f"{own}|{kind}" if own else kind


def _label(group: str, cell: Cell, short: bool = False) -> str:
    # "2d cell (3,-2)" / "1d bin g1=+3", after the pair group ("swap_object/L1: 2d cell (1,1)"); short drops
    # both, for the mirror named right after
    own, _, kind = group.rpartition("|")
    prefix = "" if short or not own else f"{own}: "
    if kind == "2d":
        return f"{prefix}{'' if short else '2d cell '}({cell[0]},{cell[1]})"
    return f"{prefix}{'' if short else '1d bin '}{kind[3:]}={cell[0]:+d}"


def _check(pairs: Sequence[RefinePair], bins_2d: int, bins_1d: int, zero_tol: float, min_per_cell: int = 0) -> None:
    if min_per_cell < 0:
        raise ValueError(f"min_per_cell must be >= 0, got {min_per_cell}")
    for name, bins in (("bins_2d", bins_2d), ("bins_1d", bins_1d)):
        if bins < 2 or bins % 2:
            raise ValueError(f"{name} must be an even integer >= 2 (half the bins per sign), got {bins}")
    if not zero_tol >= 0:
        raise ValueError(f"zero_tol must be >= 0, got {zero_tol}")
    seen: set[str] = set()
    for p in pairs:
        if p.key in seen:
            raise ValueError(f"duplicate pair key {p.key!r}")
        seen.add(p.key)
        if not (math.isfinite(p.g1) and math.isfinite(p.g2)):
            raise ValueError(f"pair {p.key!r} has a non-finite gap ({p.g1}, {p.g2})")
