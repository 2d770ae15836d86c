"""Which replacement names a picture can take: not one it likely holds unannotated, not one foreign to it.

A replaced object's new name is false of the image when no object there is or could be it; it is a *hard*
negative only when the name belongs in such a picture. "The airplane" in a street, "the giraffe" beside a
sofa, "the bed" in a kitchen are false and test nothing: a model rejects them from the scene alone. How
well a name fits a picture is read from how real graphs annotate names together
(`AnnotationStats.scene_fit`: the weighted mean log lift of the name over the picture's names, the run's
counts plus the prior's). Two rules read it:

- an absolute floor (`language.scene_fit`): a name annotated with the picture's names at under e^floor of
  its usual rate is foreign to it;
- a drop against the name replaced (`language.replacement_fit`): the object really is in the picture, so
  its own fit says how well the corpus knows this kind of scene; a replacement under `UNUSUAL` of its
  usual rate there that fits it e^drop times less is foreign however the scene's names dilute the mean.
  Two objects of one category that really share a picture are that far apart in about 1 of 1,000 ordered
  pairs of real graphs (`benchmarks/scene_fit.py`); a cat for a dog, a bike for a car on a street, a pot
  for a knife stay; a giraffe for a dog, an airplane for a car on a street, a bed for a kitchen counter do
  not.

With the floor on, a mean over the picture's names misses one thing: a name nearly always annotated with
another (`needs`: a boat with water in 78% of its images, 7.5 times water's share of all images) is
foreign to a picture that holds nothing that is or names that other: "the boat" for a car on a city
street fits the street's buildings, trees and people at 70% of its usual rate, yet no water is there.

The names that stay are drawn in proportion to their weight times their fit (as a rate): the names of
the picture's kind of scene come first, and one that barely fits is drawn only where little else is left.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from hardneg.core.gqa.annotations import MIN_IMAGES, AnnotationStats
from hardneg.core.words.table import Words

UNUSUAL = -0.5  # a name annotated with the picture's names under e^-0.5 (61%) of its usual rate: unusual there
NEEDS = 0.7  # a name annotated with another in this share of its images, ...
NEEDS_LIFT = 3.0  # ... this many times that one's share of all images, needs it in view (a boat, water)


@dataclass(frozen=True, slots=True)
class SceneFit:
    """The two fit rules over the corpus's `notes`; either off with None."""

    notes: AnnotationStats
    floor: float | None = None  # log rate under which a name is foreign to the picture
    drop: float | None = None  # log rate a replacement may fit worse than the name it replaces
    words: Words | None = None  # the name categories: a replaced name the corpus does not know is read by its kin
    needs_share: float | None = NEEDS  # with the floor: a name is foreign where what it needs is not (`needs`)
    _fits: dict[tuple[str, frozenset[str]], float | None] = field(default_factory=dict, compare=False, repr=False)
    _needs: dict[str, tuple[tuple[str, float], ...]] = field(default_factory=dict, compare=False, repr=False)
    _with: dict[str, list[tuple[str, int]]] = field(default_factory=dict, compare=False, repr=False)

    def needs(self, name: str) -> tuple[tuple[str, float], ...]:
        """The names `name` is seldom annotated without: another seen with it in `needs_share` of its images
        and `NEEDS_LIFT` times as often as at large, not a part or kind of it (a boat, water: 78%, 7.5 times;
        an airplane's wing is its own). Each with its share, most needed first."""
        if self.needs_share is None:
            return ()
        if name not in self._needs:
            if not self._with:  # every name's companions, from one pass over the pairs
                for (a, b), k in self.notes.together.items():
                    self._with.setdefault(a, []).append((b, k))
                    self._with.setdefault(b, []).append((a, k))
            out = []
            for other, k in self._with.get(name, ()):
                holding, total = self.notes.holding(name, other)
                n, m = holding[name], holding[other]
                if n < MIN_IMAGES or m <= 0 or total <= 0 or k < self.needs_share * n or k / n < NEEDS_LIFT * m / total:
                    continue
                if self.words is None or self.words.name_relation(other, name) is None:
                    out.append((other, k / n))
            self._needs[name] = tuple(sorted(out, key=lambda x: (-x[1], x[0])))
        return self._needs[name]

    def lacks(self, name: str, scene: frozenset[str]) -> str | None:
        """Why a picture whose names are `scene` lacks what `name` needs (`needs`), or None: none of its names
        is the needed one or names the same thing (the ocean for water)."""
        words = self.words
        for other, share in self.needs(name):
            if not any(n == other or (words is not None and words.name_relation(n, other)) for n in scene):
                why = f"annotated with {other!r} in {share:.0%} of its images, and it holds none"
                return f"{name!r} is foreign to the scene: {why}"
        return None

    def fit(self, name: str, scene: frozenset[str]) -> float | None:
        """`AnnotationStats.scene_fit` (over the names sorted: a float sum in one order), once per name and scene:
        the options of every site of an image, and the names they replace, ask again and again."""
        if (key := (name, scene)) not in self._fits:
            self._fits[key] = self.notes.scene_fit(name, sorted(scene))
        return self._fits[key]

    def reference(self, original: str, scene: frozenset[str]) -> float | None:
        """How well what is replaced fits the picture: its own fit, or where the corpus knows too little of
        it (a van where only a hundred images were counted), the best fit of the picture's other objects of
        its category (the car parked beside it), which are really there too."""
        got = self.fit(original, scene)
        if got is not None or self.words is None or (kind := self.words.name_category(original)) is None:
            return got
        kin = (self.fit(n, scene) for n in scene if n != original and self.words.name_category(n) == kind)
        return max((f for f in kin if f is not None), default=None)

    def why(self, name: str, scene: frozenset[str], original: str | None = None) -> str | None:
        """Why `name` is foreign to a picture whose object names are `scene`, replacing `original`; or None."""
        got = self.fit(name, scene)
        if got is None:
            return None
        if self.floor is not None and (lacks := self.lacks(name, scene)) is not None:
            return lacks
        if self.floor is not None and got < self.floor:
            why = f"annotated with its names at {math.exp(got):.0%} of its usual rate"
            return f"{name!r} is foreign to the scene: {why}"
        if self.drop is None or got >= UNUSUAL or not original or (was := self.reference(original, scene)) is None:
            return None
        if was - got > self.drop:
            why = f"it fits its names {math.exp(was - got):.1f} times less than {original!r} does"
            return f"{name!r} is foreign to the scene: {why}"
        return None


class LikelyAbsent:
    """Replacement names less those the scene likely holds unannotated (`AnnotationStats.beside`: a phone where
    a desk is) and that no object of the image could be (`could_be`): "the phone on the desk" may well be
    true; less those the corpus barely knows (`barely_known`: "the bat" for a ball, "the spoon" for a
    plate); and less those foreign to the scene (`SceneFit`), which test nothing. Counted in `refused` as
    the pool's other refusals are. The rest are weighed by their fit and put most plausible first. Whether a
    name may stay, and its factor, are worked out once per image, replaced name and name."""

    def __init__(self, fit: SceneFit, small: float, refused: Counter) -> None:
        self.scene_fit, self.small, self.refused = fit, small, refused
        # (image, replaced name, name) -> the refusal's kind (None: it stays) and the factor of its weight
        self._why: dict[tuple[str, str, str], tuple[str | None, float]] = {}

    def filter(
        self,
        options: tuple[str, ...],
        weights: tuple[float, ...],
        image_id: str,
        original: str,
        scene: frozenset[str],
        could_be: Callable[[str], bool],
    ) -> tuple[tuple[str, ...], tuple[float, ...]]:
        memo, keep = self._why, []
        for w in options:
            if (key := (image_id, original, w)) not in memo:
                memo[key] = self._judge(w, original, scene, could_be)
            why, factor = memo[key]
            if why is None:
                keep.append((w, factor))
            else:
                self.refused[why] += 1
        if not weights:
            return tuple(w for w, _ in keep), weights
        given = dict(zip(options, weights, strict=True))
        drawn = sorted(((w, given[w] * f) for w, f in keep), key=lambda wx: (-wx[1], wx[0]))
        return tuple(w for w, _ in drawn), tuple(x for _, x in drawn)

    def _judge(
        self,
        name: str,
        original: str,
        scene: frozenset[str],
        could_be: Callable[[str], bool],
    ) -> tuple[str | None, float]:
        got = self.scene_fit.fit(name, scene)
        factor = 1.0 if got is None else math.exp(got)
        if could_be(name):
            return None, factor
        if self.scene_fit.notes.beside(name, scene, self.small) is not None:
            return "object:likely in the scene unannotated", factor
        if self.barely_known(name):
            return "object:barely known", factor
        if self.scene_fit.why(name, scene, original) is not None:
            return "object:foreign to the scene", factor
        return None, factor

    def barely_known(self, name: str) -> bool:
        """Whether the corpus knows too little of `name` to say it is likely absent: it is in fewer than
        `MIN_IMAGES` of the graphs that could annotate it ("bat", "spoon", "pepper shaker"), so neither `beside`
        nor the fit has numbers for it. A replacement is of the kind of the object it replaces, which is in
        view, and things of a kind come together (a bat where a ball is, a spoon where a plate is)."""
        return self.scene_fit.notes.holding(name)[0][name] < MIN_IMAGES
