"""Spatial relations decided by boxes: the one rule, in one place.

Scene graphs store "to the left of" for some pairs only: a forest holds many trees the graph never
relates to the road, but every tree has a box. So for the relations boxes can decide, the executor
(`core/executor.py`) counts a pair as related when the stored edge says so *or* the boxes do:

- a negative "the tree to the right of the road" is rejected when any tree's box lies right of the
  road's by the rule below, stored edge or not;
- a positive is unique only when no other object of its name satisfies its relations by edge or by box.

The rule. For boxes A and B (xywh) and a relation on an axis, with centres cA, cB and extents (widths for
left/right, heights for above/below) eA, eB:

    A <dir> B  when  (cB - cA) along <dir> > MARGIN * min(eA, eB)

that is, A's centre lies beyond B's centre in the relation's direction by at least a tenth of the smaller
box's extent. The margin keeps two vertically stacked objects (a cup on a plate) from reading as left or
right of each other; everything beyond it counts, because a person would accept "to the left of" for a
box only slightly left. Image y grows downwards, so "above" means a smaller centre y.
"""

from __future__ import annotations

from functools import lru_cache

MARGIN = 0.1  # of the smaller box's extent on the relation's axis

# GQA's spellings of the relations boxes decide, by direction. "under"/"beneath" also claim contact or
# cover, which boxes cannot confirm, but their vertical part they can: if A lies below B, "A under B"
# could be true, so a negative claiming it is refused.
DIRECTION: dict[str, str] = {
    "to the left of": "left",
    "on the left of": "left",
    "on the left side of": "left",
    "left of": "left",
    "to the right of": "right",
    "on the right of": "right",
    "on the right side of": "right",
    "right of": "right",
    "above": "above",
    "over": "above",
    "below": "below",
    "under": "below",
    "beneath": "below",
    "underneath": "below",
    "underneath of": "below",
}


@lru_cache(maxsize=4096)
def _spelling(relation: str) -> str:
    """A relation's words without "the": GQA and VG write "to the left of", "to left of", "on left side of"."""
    return " ".join(w for w in relation.lower().replace("_", " ").split() if w != "the")


_BY_SPELLING = {_spelling(r): d for r, d in DIRECTION.items()}


@lru_cache(maxsize=4096)  # asked per candidate edge in the path search
def direction(relation: str) -> str | None:
    """The direction a relation claims that boxes decide ("left", "right", "above", "below"), or None."""
    return _BY_SPELLING.get(_spelling(relation))


Box = tuple[int, int, int, int]


def intersection(a: Box | tuple[float, ...], b: Box | tuple[float, ...]) -> float:
    """The area two xywh boxes share (0 when they are apart)."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    iw = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    ih = max(0, min(ay + ah, by + bh) - max(ay, by))
    return iw * ih


def iou(a: Box | tuple[float, ...], b: Box | tuple[float, ...]) -> float:
    """Intersection over union of two xywh boxes; 0 when the union is empty."""
    inter = intersection(a, b)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def holds(direction: str, a: Box, b: Box) -> bool:
    """Whether box `a` lies in `direction` ("left", "right", "above", "below") of box `b` by the rule."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    if direction in ("left", "right"):
        gap = (bx + bw / 2) - (ax + aw / 2)  # > 0: a's centre is left of b's
        need = MARGIN * min(aw, bw)
        return gap > need if direction == "left" else -gap > need
    if direction in ("above", "below"):
        gap = (by + bh / 2) - (ay + ah / 2)  # > 0: a's centre is above b's
        need = MARGIN * min(ah, bh)
        return gap > need if direction == "above" else -gap > need
    raise ValueError(f"no geometric rule for direction {direction!r}")


def relation_holds(relation: str, a: Box, b: Box) -> bool | None:
    """True/False when boxes decide `relation` between a and b; None when it is not a box relation."""
    d = direction(relation)
    return None if d is None else holds(d, a, b)


OPPOSITE = {"left": "right", "right": "left", "above": "below", "below": "above"}


# Relations that claim only a direction, so boxes can contradict them. "under", "beneath", "over" also
# claim contact or cover (a table is "under" a cup whose box sits in the table's upper part), and a
# centre comparison cannot refute that: they are never dropped for geometry.
COVER = ("under", "beneath", "underneath", "underneath of", "over")
PURE = frozenset(_spelling(r) for r in DIRECTION if r not in COVER)


def contradicted(relation: str, a: Box, b: Box) -> bool:
    """A stored edge `a relation b` that the boxes contradict: they say the opposite direction holds."""
    return _spelling(relation) in PURE and holds(OPPOSITE[direction(relation)], a, b)


# GQA's graphs relate two objects "to the left of" / "to the right of" (both ways) when they stand side by
# side: apart across, in one band of height, and near. Over the 15,077 object pairs of 87 real GQA graphs
# that store such edges, the pairs these three bounds select are all stored by GQA (precision 100%) and are
# 80% of the pairs GQA stores (`benchmarks/spatial_layer.py`), so a graph whose spatial layer was left out
# (Visual Genome's raw graphs, a reduced corpus, one's own annotations) gets GQA's from its boxes and
# nothing GQA would not say.
SIDE_OVERLAP = 0.3  # at most this share of the narrower box's width is shared across
BAND = 0.6  # at least this share of the shorter box's height is shared in height
REACH = 0.2  # at most this share of the image's width lies between the two boxes


def side_by_side(
    a: Box, b: Box, width: float, bounds: tuple[float, float, float] = (SIDE_OVERLAP, BAND, REACH)
) -> str | None:
    """Which side of `b` GQA would say `a` stands on: "left" or "right" when the two stand side by side,
    None when GQA would not relate them across (one above the other, far apart, overlapping). `bounds`:
    (side overlap, band, reach), the module's by default."""
    side_overlap, band, reach = bounds
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    if min(aw, ah, bw, bh) <= 0:
        return None
    across = min(ax + aw, bx + bw) - max(ax, bx)  # > 0: shared width; < 0: the gap between them
    if across > side_overlap * min(aw, bw) or -across > reach * width:
        return None
    if min(ay + ah, by + bh) - max(ay, by) < band * min(ah, bh):
        return None
    return "left" if 2 * ax + aw < 2 * bx + bw else "right"
