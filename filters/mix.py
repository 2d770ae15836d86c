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

Before the shares, the negatives are spread over positives and images (`spread`): at most
`per_object_set` about one set of objects (the objects a positive's path names: "the man left of the
mirror", "the mirror right of the man" and their negatives are about one pair), and at most
`per_image` per positive of an image (rounded up), so a photo with a few positives over three objects
does not hold the benchmark's variety. What a cap drops goes first from the types with most to spare
against their shares, and each drop is one negative, not a mirror pair (the caps bite on few).

`mix` never runs a model: `hardneg split` re-mixes with other shares in seconds.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

VERSION = "mix@v2"  # v2: spread over object sets and images


@dataclass(frozen=True, slots=True)
class MixItem:
    """A text negative refinement kept: its type, its positive and its refinement cell (group, cell)."""

    key: str
    negative_type: str
    positive: str
    cell: tuple[str, tuple[int, ...]] = ("zero", ())
    level: int = 1
    image: str = ""  # the image the positive is about ("": each positive its own)
    objects: frozenset[str] = frozenset()  # the objects its positive's path names (empty: the positive alone)


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


def spread(
    items: Sequence[MixItem],
    shares: dict[str, float],
    per_object_set: int | None,
    per_image: float | None,
    image_positives: dict[str, int],
    seed: int,
) -> dict[str, str]:
    """What the caps per set of objects and per image drop (key -> reason; None: no such cap). Each group
    over its cap, object sets first, then images, in a stable order, loses one negative at a time: of the
    type then furthest above its share of what is kept (a seeded draw among ties)."""
    if per_object_set is None and per_image is None:
        return {}
    kept = Counter(it.negative_type for it in items)
    n = len(items)

    def excess(it: MixItem) -> tuple[float, float]:
        over = kept[it.negative_type] / max(n, 1) - shares.get(it.negative_type, 0.0)
        return over, random.Random(f"{VERSION}:{seed}:{it.key}").random()

    dropped: dict[str, str] = {}
    caps: list[tuple[dict[object, list[MixItem]], Callable[[object], int], Callable[[int], str]]] = []
    if per_object_set is not None:
        sets: dict[object, list[MixItem]] = defaultdict(list)
        for it in items:
            sets[(it.image or it.positive, tuple(sorted(it.objects or {it.positive})))].append(it)
        caps.append((sets, lambda _g: per_object_set, lambda c: f"mix: spread: {c} text negatives about these objects"))
    if per_image is not None:
        images: dict[object, list[MixItem]] = defaultdict(list)
        for it in items:
            images[it.image or it.positive].append(it)

        def image_cap(g: object) -> int:
            return math.ceil(per_image * image_positives.get(str(g), 1) - 1e-9)

        caps.append(
            (images, image_cap, lambda c: f"mix: spread: {c} text negatives on this image ({per_image} a positive)")
        )
    for groups, cap_of, reason in caps:
        for g in sorted(groups, key=str):
            members = [it for it in groups[g] if it.key not in dropped]
            cap = cap_of(g)
            while len(members) > cap:
                worst = max(members, key=excess)
                members.remove(worst)
                dropped[worst.key] = reason(cap)
                kept[worst.negative_type] -= 1
                n -= 1
    return dropped


def mix(
    items: Sequence[MixItem],
    shares: dict[str, float],
    cap: int,
    floor: float,
    seed: int,
    least: int = 0,
    per_object_set: int | None = None,
    per_image: float | None = None,
    image_positives: dict[str, int] | None = None,
) -> MixResult:
    """Keep a subset of `items` shaped by `shares` (normalised over the types given): spread over object sets
    and images (`spread`; `image_positives`: the kept positives of each image), at most `cap`, and thinned to
    lift a scarce type to its floor no lower than `least`."""
    norm = sum(shares.values())
    shares = {t: s / norm for t, s in shares.items()} if norm > 0 else shares
    dropped: dict[str, str] = spread(items, shares, per_object_set, per_image, image_positives or {}, seed)
    all_items, items = items, [it for it in items if it.key not in dropped]
    by_type: dict[str, list[MixItem]] = defaultdict(list)
    for it in items:
        by_type[it.negative_type].append(it)
    available = {t: len(by_type.get(t, [])) for t in shares} | {t: len(v) for t, v in by_type.items()}
    total = plan_total(available, shares, cap, floor, least)
    want = allocate(available, shares, total)
    kept: set[str] = {it.key for it in items}
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
    before = Counter(it.negative_type for it in all_items)
    n = sum(emitted.values())
    report: dict[str, dict[str, float]] = {}
    warnings: list[str] = []
    for t in sorted(available, key=lambda t: (-shares.get(t, 0), t)):
        share = emitted[t] / n if n else 0.0
        target = shares.get(t, 0.0)
        report[t] = {"available": before[t], "emitted": emitted[t], "share": round(share, 4), "target": target}
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
