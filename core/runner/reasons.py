"""Reject reasons as keys that like reasons share, and their counts per stage.

A run's millions of rejects give a few hundred thousand distinct reasons ("image 12.jpg missing", "image
13.jpg missing"): `reason_key` keeps a reason's first clause without its numbers and ids, so the stats count
them together. Each unit's rejects are counted by key as the unit finishes (`reason_counts`, stored in its
marker), so the write stage sums a few hundred counts per unit instead of parsing every reject again.
"""

from __future__ import annotations

from collections.abc import Iterable

_ASCII_DIGITS = frozenset("0123456789")


def reason_key(reason: str, width: int = 70) -> str:
    """A reject reason as a key like reasons share: its first clause, numbers and ids left out."""
    parts = reason.split("; ")
    first = parts[0].removeprefix("filter: ")
    if first.startswith("no candidate passed") and len(parts) > 1:  # what the candidates failed on
        first = "no candidate passed: " + parts[1].split(":")[0]
    words = [w for w in first.replace("(", " ").replace(")", " ").split() if not _has_digit(w)]
    text = " ".join(words).rstrip(" ,:;.")
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _has_digit(word: str) -> bool:
    """Whether a character of `word` is a digit (`str.isdigit`): an ASCII word is checked in C."""
    return not _ASCII_DIGITS.isdisjoint(word) if word.isascii() else any(c.isdigit() for c in word)


def reason_counts(rejects: Iterable[tuple[str, str]]) -> list[list]:
    """[stage, reason key, count] of (stage, reason) pairs, in the order each first occurs (so counts summed
    file after file break their ties as one pass over the files would)."""
    counts: dict[tuple[str, str], int] = {}
    keys: dict[str, str] = {}  # reason -> its key
    for stage, reason in rejects:
        key = keys.get(reason)
        if key is None:
            key = keys[reason] = reason_key(reason)
        counts[(stage, key)] = counts.get((stage, key), 0) + 1
    return [[stage, key, n] for (stage, key), n in counts.items()]
