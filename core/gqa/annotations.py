"""How the corpus annotates each name: which names come in many, which sit inside signs and pictures, how
big their boxes usually are, and whether one object is split over two boxes. Counted from the cleaned
scene graphs by the plausibility stage and stored with the run; read by the paths stage's annotation
rules and by each positive's risk.

A graph annotates some of what a photo shows. A positive claims its expression picks out one object, so
it fails a person when another object fits as well but is not annotated ("the brown meat", one of ten
pieces on a plate), or when the box is not the object its name says ("the hotel" that is the word HOTEL
printed on a sign; a cabinet drawn as two boxes). What the graph alone cannot show, the corpus can
suggest: a name usually seen several times per image comes in many; a name usually boxed inside a sign is
usually printed; a name usually annotated beside another is probably there beside it, annotated or not.

The same notes make claims of absence stricter (`core/certify.py`, with the run's notes): a name that
comes in many is like a crowd name (one of its instances is annotated, the next may not be: "the zebra to
the right of the tree" may be true of a zebra nobody boxed), and a name usually annotated beside one of
the image's names is likely there unannotated ("the plate" beside a fork). Counted with the prior of real
graphs (`core/gqa/prior.py`), so a run of ten images knows what thousands say.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from hardneg.core.geometry import intersection
from hardneg.core.gqa.boxes import bin_key, box_bins
from hardneg.core.records import SceneGraph, SceneObject
from hardneg.core.words.table import Words

INSIDE = 0.9  # of a box's area inside another box: it lies inside it
SAME_OBJECT_IOU = 0.5  # two boxes this alike are one object under two names
MANY = 0.5  # images holding a name twice or more, of those holding it: the name comes in many
MIN_IMAGES = 5  # a name in fewer images decides nothing about coming in many
PRINTED = 0.5  # boxes of a name inside a text surface, of all its boxes: the name is usually printed
MIN_BOXES = 5  # a name with fewer boxes decides nothing about being printed or its usual size
OVERSIZED = 10.0  # a box this many times its name's usual area is suspect (4x is an ordinary close-up)
BESIDE = 0.35  # of the images holding a name, the share that also hold another: the other is often there
# A small thing is overlooked more often than annotated (a phone on a desk, a fork by a plate), so the scene
# holds it at a lower annotated rate: a name whose usual box is under SMALL of the image is likely there
# when at least OFTEN of the images holding one of the image's names hold it too, and LIFT times as often as
# the corpus's images at large (so a small thing that is everywhere is not said to be in every scene)
SMALL = 0.03  # cutlery (2% of the image in real GQA), phones, cups; not tables, beds or buses
OFTEN = 0.1
LIFT = 3.0
FOREIGN = 0.05  # the lift `scene_fit` gives two names never annotated together


def inside(a: SceneObject, b: SceneObject) -> bool:
    """Whether `a`'s box lies inside `b`'s, and `b` is the larger."""
    return a.area > 0 and b.area > a.area and intersection(a.box, b.box) >= INSIDE * a.area


def split_pair(a: SceneObject, b: SceneObject) -> bool:
    """Whether two boxes tile one rectangle: they touch or barely overlap, span the same extent on one
    axis (within a tenth), and their union fills its bounding box (a cabinet annotated in two halves)."""
    ax, ay, aw, ah = a.box
    bx, by, bw, bh = b.box
    ux0, uy0, ux1, uy1 = min(ax, bx), min(ay, by), max(ax + aw, bx + bw), max(ay + ah, by + bh)
    union_box = (ux1 - ux0) * (uy1 - uy0)
    if union_box <= 0:
        return False
    shared = intersection(a.box, b.box)
    if shared > 0.2 * min(a.area, b.area):
        return False  # overlapping: two objects in depth, or a duplicate (hygiene merges those)
    rows = abs(ay - by) <= 0.1 * max(ah, bh) and abs(ah - bh) <= 0.1 * max(ah, bh)
    cols = abs(ax - bx) <= 0.1 * max(aw, bw) and abs(aw - bw) <= 0.1 * max(aw, bw)
    return (rows or cols) and (a.area + b.area - shared) >= 0.9 * union_box


@dataclass(slots=True)
class AnnotationStats:
    images: Counter = field(default_factory=Counter)  # name -> images holding it
    multi: Counter = field(default_factory=Counter)  # name -> images holding it twice or more
    boxes: Counter = field(default_factory=Counter)  # name -> boxes
    printed: Counter = field(default_factory=Counter)  # name -> boxes inside a text surface of another name
    log_area: Counter = field(default_factory=Counter)  # name -> sum of log(box area / image area)
    together: Counter = field(default_factory=Counter)  # (name, other name), sorted -> images holding both
    shape: Counter = field(default_factory=Counter)  # "<name>\t<bin>" -> boxes (`core/gqa/boxes.py`)
    place: Counter = field(default_factory=Counter)  # the same for where the box's centre is
    graphs: Counter = field(default_factory=Counter)  # "all" -> images counted; "described" -> of them, full ones
    # Images holding a name among the graphs that annotate every name they show (the prior's full graphs), and
    # the names the prior also counted in graphs that annotate a few hundred names only (`partial`: 1 each).
    # A share of images holding two names is counted over the graphs that could annotate both: "a bat" is
    # beside "a ball" in the full graphs, never in the ones whose names stop at "ball" (`holding`).
    described: Counter = field(default_factory=Counter)
    partial: Counter = field(default_factory=Counter)

    def add(self, graph: SceneGraph, words: Words, described: bool = False) -> None:
        """Count one graph; `described`: it annotates every name it shows (the prior's full graphs; a run's
        own graphs are all counted so when the prior is added, `with_prior`)."""
        self.graphs["all"] += 1
        per_image = Counter(o.name for o in graph.objects.values())
        if described:
            self.graphs["described"] += 1
            self.described.update(per_image.keys())
        for name, n in per_image.items():
            self.images[name] += 1
            self.multi[name] += n >= 2
        names = sorted(per_image)
        self.together.update(combinations(names, 2))  # (a, b), a before b: as a nested loop would, in C
        texts = [o for o in graph.objects.values() if words.surface_kind(o.name) == "text"]
        image_area = graph.width * graph.height
        self.boxes.update(per_image)
        for o in graph.objects.values():
            if o.area > 0:
                self.log_area[o.name] += math.log(o.area / image_area)
            if (bins := box_bins(o.box, graph.width, graph.height)) is not None:
                self.shape[bin_key(o.name, bins["shape"])] += 1
                self.place[bin_key(o.name, bins["place"])] += 1
            if texts and any(t.name != o.name and inside(o, t) for t in texts):
                self.printed[o.name] += 1

    def many(self, name: str) -> float | None:
        """The share of the images holding `name` that hold it twice or more; None below `MIN_IMAGES`."""
        n = self.images[name]
        return self.multi[name] / n if n >= MIN_IMAGES else None

    def comes_in_many(self, name: str) -> str | None:
        """Why the corpus says `name` comes in many (one of them annotated, the next maybe not), or None."""
        share = self.many(name)
        if share is None or share < MANY:
            return None
        return f"comes in many: {share:.0%} of the images holding it hold several"

    def holding(self, *names: str) -> tuple[Counter, float]:
        """(images holding a name, images counted) over the graphs that can annotate every one of `names`:
        all of them where the prior's partial graphs annotate each, else the fully annotated ones."""
        if not self.partial or all(self.partial[n] for n in names):
            return self.images, self.graphs["all"]
        return self.described, self.graphs["described"]

    def beside(self, name: str, names: Iterable[str], small: float = SMALL) -> str | None:
        """Why `name` is likely in an image holding `names` though none is annotated, or None: one of
        `names` is annotated with it in at least `BESIDE` of the images holding that one (and in
        `MIN_IMAGES` or more); or `name` is small (usual box under `small`: overlooked more often than boxed)
        and annotated with one of `names` in at least `OFTEN` of its images, `LIFT` times its share of all
        images (a phone beside a desk or a keyboard)."""
        holding, total = self.holding(name)
        usual = self.usual_area(name)
        base = holding[name] / total if usual is not None and usual < small and total > 0 else 0.0
        for other in names:
            n = self.holding(name, other)[0][other]
            if other == name or n < MIN_IMAGES:
                continue
            both = self.together[(name, other) if name < other else (other, name)]
            if both >= BESIDE * n:
                return f"usually annotated beside '{other}' ({both / n:.0%} of the images holding one)"
            if base > 0 and both >= OFTEN * n and both >= LIFT * base * n:
                return (
                    f"a small thing, often overlooked, annotated beside '{other}' in {both / n:.0%} of the images "
                    f"holding one ({both / n / base:.0f}x its share of all images)"
                )
        return None

    def scene_fit(self, name: str, names: Iterable[str]) -> float | None:
        """How well `name` fits a scene whose object names are `names`: the mean, over the scene's names seen in
        `MIN_IMAGES` images or more, of the log of how much more often than in the corpus at large `name` is
        annotated in the images holding that one (0: as often; -1: at a third of its rate; never seen
        together counts as `FOREIGN`). None when the corpus knows too little of `name` or of the scene. An
        airplane scores -1.4 in a street, a bus +0.3; a bed -1.4 there and +1.2 in a bedroom."""
        holding, total = self.holding(name)
        n = holding[name]
        if n < MIN_IMAGES or total <= 0:
            return None
        fit, weight = 0.0, 0.0
        for other in dict.fromkeys(names):
            if other == name:
                continue
            holding, total = self.holding(name, other)  # both counted over the graphs that can show both
            k, n = holding[other], holding[name]
            if k < MIN_IMAGES or k >= total or n <= 0:
                continue
            both = self.together[(name, other) if name < other else (other, name)]
            w = math.log(total / k)  # a name of few scenes says more of this one (a toilet) than a wall does
            fit += w * math.log(max(both / k / (n / total), FOREIGN))
            weight += w
        return fit / weight if weight > 0 else None

    def printed_share(self, name: str) -> float | None:
        n = self.boxes[name]
        return self.printed[name] / n if n >= MIN_BOXES else None

    def usual_area(self, name: str) -> float | None:
        """The geometric mean of the name's box areas, as a fraction of the image."""
        n = self.boxes[name]
        return math.exp(self.log_area[name] / n) if n >= MIN_BOXES else None

    def rows(self) -> Iterator[dict[str, Any]]:
        for kind in ("images", "multi", "boxes", "printed", "log_area", "together", "shape", "place", "graphs"):
            c: Counter = getattr(self, kind)
            for key in sorted(c):
                if c[key]:
                    yield {"kind": kind, "key": list(key) if isinstance(key, tuple) else key, "n": c[key]}

    def with_prior(self, rows: Iterable[dict[str, Any]]) -> AnnotationStats:
        """These statistics plus the prior's pseudo-counts (`core/gqa/prior.py`: the plausibility stage's
        `prior` rows of kind "notes:<table>"). The run's own graphs annotate every name they show: they count
        among the described ones too."""
        own, graphs = Counter(self.images), self.graphs["all"]
        for r in rows:
            kind, _, table = r["kind"].partition(":")
            if kind == "notes":
                counts = getattr(self, table)
                for key, n in zip(r["keys"], r["n"], strict=True):
                    counts[tuple(key) if isinstance(key, list) else key] += n
        self.described.update(own)
        self.graphs["described"] += graphs
        return self

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> AnnotationStats:
        out = cls()
        for r in rows:
            key = r["key"]
            getattr(out, r["kind"])[tuple(key) if isinstance(key, list) else key] = r["n"]
        return out
