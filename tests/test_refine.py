"""SugarCREPE adversarial refinement (filters.refine) against the paper's rule."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hardneg.filters.refine import (
    RefinePair,
    assign_cells,
    bin_index,
    chance_accuracy,
    gaps,
    refine,
)


def make(values: Sequence[tuple[float, float]], prefix: str = "k") -> list[RefinePair]:
    return [RefinePair(f"{prefix}{i:05d}", g1, g2) for i, (g1, g2) in enumerate(values)]


def biased(n: int = 2000, seed: int = 0) -> list[RefinePair]:
    """Most negatives clearly less plausible: gaps mostly positive; some one-zero and both-zero pairs."""
    rng = random.Random(seed)
    out: list[tuple[float, float]] = []
    for i in range(n):
        g1, g2 = rng.gauss(1.0, 1.0), rng.gauss(0.6, 1.0)
        if i % 10 == 0:
            g2 = 0.0  # the rule scorer often ties
        elif i % 17 == 0:
            g1, g2 = 0.0, 0.0
        out.append((g1, g2))
    return make(out)


def strict_accuracy(pairs: Sequence[RefinePair], kept: set[str]) -> tuple[float, float]:
    """Accuracy of the higher-score pick over kept pairs where that scorer does not tie."""
    res = []
    for attr in ("g1", "g2"):
        vals = [getattr(p, attr) for p in pairs if p.key in kept and getattr(p, attr) != 0]
        res.append(sum(v > 0 for v in vals) / len(vals))
    return res[0], res[1]


def test_both_zero_pairs_are_kept():
    pairs = make([(0.0, 0.0), (0.0, 0.0), (1.0, 2.0)])
    res = refine(pairs, seed=0)
    assert res.kept == {"k00000", "k00001"}
    assert set(res.dropped) == {"k00002"}  # its mirror cell is empty


def test_exactly_mirrored_population_is_kept_whole():
    rng = random.Random(1)
    values = [(rng.uniform(-3, 3), rng.uniform(-1, 1)) for _ in range(500)]
    pairs = make(values, "a") + make([(-a, -b) for a, b in values], "b")
    res = refine(pairs, seed=0)
    assert res.kept == {p.key for p in pairs}
    assert res.dropped == {}


def test_random_symmetric_population_keeps_almost_everything():
    rng = random.Random(2)
    pairs = make([(rng.gauss(0, 1), rng.gauss(0, 1)) for _ in range(4000)])
    sym = refine(pairs, seed=0, bins_2d=4)
    assert sym.kept_share > 0.9
    # the same grid on a biased population keeps far less
    skewed = make([(rng.gauss(1, 1), rng.gauss(0.6, 1)) for _ in range(4000)])
    assert refine(skewed, seed=0, bins_2d=4).kept_share < 0.6


def test_biased_population_ends_at_chance():
    pairs = biased()
    before = chance_accuracy(pairs)
    res = refine(pairs, seed=0)
    after = chance_accuracy(pairs, res.kept)
    assert before[0] > 0.75 and before[1] > 0.65
    for b, a in zip(before, after, strict=True):
        assert abs(a - 0.5) <= 1e-9  # ties count half, so balance is exact
        assert a < b
    # ignoring ties, the pick is still a coin flip for both scorers
    assert strict_accuracy(pairs, res.kept) == (0.5, 0.5)
    assert 0.05 < res.kept_share < 0.9


def test_one_zero_pairs_are_balanced_in_one_dimension():
    # scale 1.0, bins_1d=10 -> 5 bins per sign: 0.1 is bin 1, 1.0 is bin 5
    g1_only = [(0.1, 0.0)] * 5 + [(-0.1, 0.0)] * 2 + [(1.0, 0.0)] + [(-1.0, 0.0)] * 3
    g2_only = [(0.0, 0.4)] * 4 + [(0.0, -0.4)] * 1  # its own scale: 0.4 is bin 5
    pairs = make(g1_only, "a") + make(g2_only, "b")
    res = refine(pairs, seed=3, bins_1d=10)
    kept = [p for p in pairs if p.key in res.kept]
    assert Counter((p.g1, p.g2) for p in kept) == {
        (0.1, 0.0): 2,
        (-0.1, 0.0): 2,
        (1.0, 0.0): 1,
        (-1.0, 0.0): 1,
        (0.0, 0.4): 1,
        (0.0, -0.4): 1,
    }
    reasons = set(res.dropped.values())
    assert reasons == {
        "refine: 1d bin g1=+1 larger than mirror g1=-1",
        "refine: 1d bin g1=-5 larger than mirror g1=+5",
        "refine: 1d bin g2=+5 larger than mirror g2=-5",
    }


def test_cells_with_an_empty_mirror_are_dropped_with_that_reason():
    pairs = make([(1.0, 1.0), (1.0, 1.0), (-1.0, -1.0), (0.5, -1.0), (0.3, 0.0)])
    res = refine(pairs, seed=0, bins_2d=50)
    assert res.dropped["k00003"] == "refine: mirror cell empty: 2d cell (13,-25), mirror (-13,25)"
    assert res.dropped["k00004"] == "refine: mirror cell empty: 1d bin g1=+5, mirror g1=-5"
    assert res.dropped[next(k for k in ("k00000", "k00001") if k not in res.kept)] == (
        "refine: larger side of 2d cell (25,25) vs mirror (-25,-25)"
    )
    assert len(res.kept) == 2 and "k00002" in res.kept


def test_bin_index_is_signed_magnitude_and_point_symmetric():
    assert bin_index(1.0, 1.0, 50) == 25
    assert bin_index(-1.0, 1.0, 50) == -25
    assert bin_index(1e-9, 1.0, 50) == 1
    assert bin_index(0.04, 1.0, 50) == 1  # 0.04 * 25 = 1.0
    assert bin_index(0.041, 1.0, 50) == 2
    assert bin_index(0.5, 2.0, 10) == 2  # 0.25 * 5 = 1.25
    rng = random.Random(0)
    for _ in range(1000):
        g, scale = rng.uniform(1e-6, 5), 5.0
        b = bin_index(g, scale, 50)
        assert 1 <= b <= 25 and bin_index(-g, scale, 50) == -b


def test_deterministic_for_a_seed_and_independent_of_input_order():
    pairs = biased()
    a = refine(pairs, seed=7)
    b = refine(pairs, seed=7)
    shuffled = list(pairs)
    random.Random(99).shuffle(shuffled)
    c = refine(shuffled, seed=7)
    assert a == b == c
    other = refine(pairs, seed=8)
    assert other.kept != a.kept
    assert len(other.kept) == len(a.kept)  # the seed picks which, never how many


def test_every_key_is_either_kept_or_dropped():
    pairs = biased(500, seed=4)
    res = refine(pairs, seed=1)
    assert not res.kept & set(res.dropped)
    assert res.kept | set(res.dropped) == {p.key for p in pairs}
    assert all(r.startswith("refine: ") for r in res.dropped.values())


def test_empty_input_and_bad_input():
    res = refine([], seed=0)
    assert res.kept == set() and res.dropped == {} and math.isnan(res.kept_share)
    assert all(math.isnan(x) for x in chance_accuracy([]))
    with pytest.raises(ValueError, match="bins_2d"):
        refine(make([(1, 1)]), seed=0, bins_2d=7)
    with pytest.raises(ValueError, match="bins_1d"):
        refine(make([(1, 1)]), seed=0, bins_1d=0)
    with pytest.raises(ValueError, match="duplicate pair key 'x'"):
        refine([RefinePair("x", 1, 1), RefinePair("x", -1, -1)], seed=0)
    with pytest.raises(ValueError, match="non-finite"):
        refine([RefinePair("x", math.nan, 1)], seed=0)


def test_zero_tol_treats_tiny_gaps_as_ties():
    pairs = make([(1e-12, 1e-12), (1.0, 1e-12), (-1.0, 0.0)])
    assert refine(pairs, seed=0).kept == set()  # exact zero only: 2d pair alone, 1d pair alone
    res = refine(pairs, seed=0, zero_tol=1e-9)
    assert res.kept == {"k00000", "k00001", "k00002"}
    assert chance_accuracy(pairs, res.kept, zero_tol=1e-9) == (0.5, 0.5)


def test_chance_accuracy_counts_ties_as_half():
    pairs = make([(1.0, 0.0), (-1.0, 0.0), (2.0, 3.0), (0.0, -1.0)])
    assert chance_accuracy(pairs) == (2.5 / 4, 2.0 / 4)
    assert chance_accuracy(pairs, {"k00000", "k00002"}) == (1.0, 0.75)


def test_gaps_are_pos_minus_neg_and_finite():
    assert gaps([1.0, 2.0], [0.5, 3.0]) == [0.5, -1.0]
    with pytest.raises(ValueError, match="2 items but neg_scores has 1"):
        gaps([1.0, 2.0], [0.5])
    with pytest.raises(ValueError, match="non-finite gap at pair index 0"):
        gaps([math.inf], [0.0])


GAP_VALUES = st.sampled_from([-2.0, -1.0, -0.5, -0.01, 0.0, 0.0, 0.01, 0.5, 1.0, 2.0])


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(st.tuples(GAP_VALUES, GAP_VALUES), max_size=80),
    seed=st.integers(0, 2**32),
    bins_2d=st.sampled_from([2, 4, 10, 50]),
    bins_1d=st.sampled_from([2, 4, 10]),
)
def test_property_kept_set_is_exactly_balanced_per_mirror_pair(values, seed, bins_2d, bins_1d):
    pairs = make(values)
    res = refine(pairs, seed=seed, bins_2d=bins_2d, bins_1d=bins_1d)
    cells = assign_cells(pairs, bins_2d, bins_1d)
    assert res.kept | set(res.dropped) == set(cells) and not res.kept & set(res.dropped)
    before = Counter(cells.values())
    after = Counter(cells[k] for k in res.kept)
    for (group, cell), n in before.items():
        if group == "zero":
            assert after[(group, cell)] == n
            continue
        mirror = (group, tuple(-i for i in cell))
        assert after[(group, cell)] == min(n, before[mirror])  # before[mirror] is 0 when empty
        assert after[(group, cell)] == after[mirror]
    if res.kept:
        assert chance_accuracy(pairs, res.kept) == (0.5, 0.5)


def test_the_larger_side_keeps_first_the_positives_with_no_pair_kept():
    # Positive "a" has a pair on the smaller side (kept whole) and five on the larger; "b" has one on the
    # larger. One larger-side pair can stay: it must be b's, whatever the seed (a uniform sample keeps
    # one of a's five times in six, leaving b with nothing while a holds two).
    pairs = [RefinePair("a0", -1.0, 0.0, of="a")]
    pairs += [RefinePair(f"a{i}", 1.0, 0.0, of="a") for i in range(1, 6)] + [RefinePair("b0", 1.0, 0.0, of="b")]
    for seed in range(12):
        result = refine(pairs, seed=seed, bins_1d=2)
        assert result.kept == {"a0", "b0"}, seed
        assert chance_accuracy(pairs, result.kept) == (0.5, 0.5)


def test_keeping_by_positive_keeps_the_balance_and_spreads_over_more_positives():
    rng = random.Random(3)
    pairs = [
        RefinePair(f"k{i:04d}", rng.gauss(0.8, 1.0), rng.gauss(0.5, 1.0), of=f"p{i // 3}") for i in range(1500)
    ]  # three candidates a positive, most preferred over their negative by both scorers
    spread = refine(pairs, seed=0, min_per_cell=5)
    uniform = refine([RefinePair(p.key, p.g1, p.g2) for p in pairs], seed=0, min_per_cell=5)
    assert len(spread.kept) == len(uniform.kept)  # the same cells, the same counts: the same balance
    assert chance_accuracy(pairs, spread.kept) == (0.5, 0.5)
    served = {p.of for p in pairs if p.key in spread.kept}
    assert len(served) > 1.1 * len({p.of for p in pairs if p.key in uniform.kept})
