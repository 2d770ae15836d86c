"""The path search's random order: a `random.Random` keyed by (seed, image, target, type), so sharding,
resumes and timing never change which paths are found."""

from __future__ import annotations

import random

from hardneg.core.records import keyed_seed


class KeyedRandom:
    """`random.Random(keyed_seed(*key))`, seeded at its first draw: a third of the (target, type) searches
    draw nothing (a shuffle of fewer than two items draws nothing), and seeding cost more than the rest
    of many of them. Draws the very numbers the seeded `random.Random` draws."""

    __slots__ = ("_key", "_rng")

    def __init__(self, *key: object) -> None:
        self._key = key
        self._rng: Rng | None = None

    def _seeded(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(keyed_seed(*self._key))
        return self._rng

    def shuffle(self, x: list) -> None:
        if len(x) > 1:
            self._seeded().shuffle(x)

    def randrange(self, n: int) -> int:
        return self._seeded().randrange(n)


Rng = random.Random | KeyedRandom
