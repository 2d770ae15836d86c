"""The mix of text negative types the splits aim at, as a pure decision rule (after refinement).

A benchmark of nine replaced objects in ten tests one skill. FineCops-Ref's test split has 9,814 text
negatives for 9,605 positives: replace object 40%, attribute 18%, relation 19%, swap object 18%, swap
attribute 5%. Real scene graphs allow replacements of objects far more often than the other kinds, so
what refinement keeps is lopsided. The rule:

1. At most `per_positive` text negatives per positive (`cap`), and never more than refinement kept.
2. Each type gets its target share of the total where it has enough (`allocate`), and what a scarce type
   cannot fill goes to the others in proportion to their shares.
3. A type whose share falls below `floor` x its target is lifted by thinning the others: the total is
   lowered until every type that has any reaches its floor, but never below the total at which no type
   exceeds its target (lower than that only loses negatives), nor below `least` (`min_per_positive` per
   positive: a type the graphs barely allow must not empty the benchmark). What still falls short is
   reported, loudly.
4. Within a type, each level keeps its part (at least one where the type has that level), and what goes
   is chosen so that refinement's balance holds: a negative is dropped together with one from its mirror
   cell (a both-zero pair alone), from the positives with the most negatives first, in a seeded order.

`mix` never runs a model: `hardneg split` re-mixes with other shares in seconds.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

VERSION = "mix@v1"


@dataclass(frozen=True, slots=True)
class MixItem:
    """A text negative refinement kept: its type, its positive and its refinement cell (group, cell)."""

    key: str
    negative_type: str
    positive: str
    cell: tuple[str, tuple[int, ...]] = ("zero", ())
    level: int = 1


@dataclass(slots=True)
class MixResult:
    kept: set[str]
    dropped: dict[str, str]  # key -> reason
    report: dict[str, dict[str, float]] = field(default_factory=dict)  # type -> available, target, emitted...
    total: int = 0  # the total aimed at
    warnings: list[str] = field(default_factory=list)


def allocate(available: dict[str, int], shares: dict[str, float], total: int) -> dict[str, int]:
    """Counts per type summing to `total` (at most the sum available): each type its share, capped by what
    it has; the remainder handed to types with room, in proportion to their shares (largest remainders)."""
    counts = dict.fromkeys(available, 0)
    left = min(total, sum(available.values()))
    while left > 0:
        room = {t: available[t] - counts[t] for t in available if available[t] > counts[t] and shares.get(t, 0) > 0}
        if not room:
            room = {t: available[t] - counts[t] for t in available if available[t] > counts[t]}
            if not room:
                break
            weights = dict.fromkeys(room, 1.0)
        else:
            weights = {t: shares[t] for t in room}
        norm = sum(weights.values())
        ideal = {t: left * w / norm for t, w in weights.items()}
        give = {t: min(room[t], math.floor(ideal[t])) for t in room}
        given = sum(give.values())
        if given == 0:  # hand out single units by largest remainder
            for t in sorted(room, key=lambda t: (-(ideal[t] - math.floor(ideal[t])), t))[:left]:
                give[t] = min(room[t], give[t] + 1)
            given = sum(give.values())
        for t, n in give.items():
            counts[t] += n
        left -= given
    return counts


def plan_total(available: dict[str, int], shares: dict[str, float], cap: int, floor: float, least: int = 0) -> int:
    """The total to emit (rule 3 of the module docstring), never below `least` (nor above what there is)."""
    most = min(cap, sum(available.values()))
    present = [t for t, n in available.items() if n > 0 and shares.get(t, 0) > 0]
    if not present or floor <= 0:
        return most
    lifted = min(available[t] / (floor * shares[t]) for t in present)
    # the total below which no type exceeds its target share: sum(min(a_t, s_t N)) == N
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(available[t], shares.get(t, 0) * mid) for t in available) >= mid - 1e-9:
            lo = mid
        else:
            hi = mid - 1
    return int(min(most, max(math.floor(lifted), lo, least)))


def mix(
    items: Sequence[MixItem], shares: dict[str, float], cap: int, floor: float, seed: int, least: int = 0
) -> MixResult:
    """Keep a subset of `items` shaped by `shares` (normalised over the types given): at most `cap`, and
    thinned to lift a scarce type to its floor no lower than `least`."""
    norm = sum(shares.values())
    shares = {t: s / norm for t, s in shares.items()} if norm > 0 else shares
    by_type: dict[str, list[MixItem]] = defaultdict(list)
    for it in items:
        by_type[it.negative_type].append(it)
    available = {t: len(by_type.get(t, [])) for t in shares} | {t: len(v) for t, v in by_type.items()}
    total = plan_total(available, shares, cap, floor, least)
    want = allocate(available, shares, total)
    kept: set[str] = {it.key for it in items}
    dropped: dict[str, str] = {}
    per_positive = Counter(it.positive for it in items)
    for t in sorted(by_type):
        if len(by_type[t]) <= want[t]:
            continue
        why = (
            f"mix: {t} has {len(by_type[t])} after refinement, {want[t]} fit its share "
            f"{shares.get(t, 0):.0%} of {total}"
        )
        by_level: dict[int, list[MixItem]] = defaultdict(list)
        for it in by_type[t]:
            by_level[it.level].append(it)
        # each level keeps its part of the type's count (level 2 is the rarer and the harder)
        levels = {lv: len(v) for lv, v in by_level.items()}
        keep = allocate(levels, {lv: n / len(by_type[t]) for lv, n in levels.items()}, want[t])
        if want[t] >= len(levels):
            for lv in levels:
                if keep[lv] == 0:  # at least one of each level the type has
                    donor = max(keep, key=lambda x: (keep[x], x))
                    keep[donor] -= 1
                    keep[lv] = 1
        for lv, members in sorted(by_level.items()):
            for it in _thin(members, len(members) - keep[lv], per_positive, seed):
                kept.discard(it.key)
                dropped[it.key] = why
                per_positive[it.positive] -= 1
    emitted = Counter(it.negative_type for it in items if it.key in kept)
    n = sum(emitted.values())
    report: dict[str, dict[str, float]] = {}
    warnings: list[str] = []
    for t in sorted(available, key=lambda t: (-shares.get(t, 0), t)):
        share = emitted[t] / n if n else 0.0
        target = shares.get(t, 0.0)
        report[t] = {"available": available[t], "emitted": emitted[t], "share": round(share, 4), "target": target}
        if target > 0 and share < floor * target:
            warnings.append(
                f"text negatives: {t} is {share:.1%} of the emitted text negatives ({emitted[t]}), below "
                f"{floor:.0%} of its target share {target:.0%}"
            )
    return MixResult(kept, dropped, report, total, warnings)


def _thin(members: list[MixItem], excess: int, per_positive: Counter, seed: int) -> list[MixItem]:
    """`excess` (or one more, to keep a mirror pair whole) members to drop: whole mirror pairs of a cell
    and its mirror, or single both-zero members, from positives with the most negatives first."""
    sides: dict[tuple[str, tuple[int, ...]], list[MixItem]] = defaultdict(list)
    singles: list[MixItem] = []
    for it in members:
        group, cell = it.cell
        if not cell:
            singles.append(it)
        else:
            sides[(group, cell)].append(it)

    def key(it: MixItem) -> tuple[int, float]:
        return (-per_positive[it.positive], random.Random(f"{VERSION}:{seed}:{it.key}").random())

    units: list[list[MixItem]] = [[it] for it in singles]
    for (group, cell), here in sorted(sides.items()):
        mirror = (group, tuple(-i for i in cell))
        if cell < mirror[1] or mirror not in sides:
            continue  # each pair of cells once, from its larger cell; a lone cell cannot occur after refinement
        here, there = sorted(here, key=key), sorted(sides[mirror], key=key)
        units += [[a, b] for a, b in zip(here, there, strict=False)]
    units.sort(key=lambda u: min(key(it) for it in u))
    # members a later filter left without a mirror partner: singly, last
    paired = {it.key for u in units for it in u}
    units += sorted(([it] for it in members if it.key not in paired), key=lambda u: key(u[0]))
    out: list[MixItem] = []
    for u in units:
        if len(out) >= excess:
            break
        out.extend(u)
    return out
