"""Agreement between annotators: Cohen's kappa on the items both labelled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items, (p_o - p_e) / (1 - p_e).

    None when it is undefined: no common items, or both raters used one and the same label throughout
    (p_e = 1; the observed agreement is then reported on its own).
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs the same items from both raters, got {len(a)} and {len(b)} labels")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def pairwise(votes: Mapping[int, Mapping[str, str]], min_common: int = 1) -> list[dict[str, Any]]:
    """Kappa for every pair of annotators over their common items (`votes`: item -> annotator -> label)."""
    annotators = sorted({who for v in votes.values() for who in v})
    out = []
    for x, y in combinations(annotators, 2):
        common = [(v[x], v[y]) for v in votes.values() if x in v and y in v]
        if len(common) < min_common:
            continue
        a, b = [c[0] for c in common], [c[1] for c in common]
        k = cohen_kappa(a, b)
        out.append(
            {
                "a": x,
                "b": y,
                "items": len(common),
                "agreement": round(sum(p == q for p, q in common) / len(common), 4),
                "kappa": None if k is None else round(k, 4),
            }
        )
    return out
