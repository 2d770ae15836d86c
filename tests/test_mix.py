"""The type mix of text negatives (filters/mix.py) and the refinement groups it follows."""

from __future__ import annotations

import random
from collections import Counter

from hardneg.core.config import BalanceConfig, NegativeMixConfig
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.filters.mix import MixItem, allocate, mix, plan_total
from hardneg.filters.refine import RefinePair, chance_accuracy, refine
from hardneg.generators.paths.select import BalanceItem, balance, swappable, unalterable

PAPER = {"replace_object": 0.40, "replace_attribute": 0.18, "replace_relation": 0.19, "swap_object": 0.18,
         "swap_attribute": 0.05}  # fmt: skip


def normalised(shares: dict[str, float]) -> dict[str, float]:
    return {t: v / sum(shares.values()) for t, v in shares.items()}


def items(counts: dict[str, int], per_positive: int = 1) -> list[MixItem]:
    out = []
    for t, n in counts.items():
        for i in range(n):
            out.append(MixItem(f"{t}:{i}", t, f"p{i // per_positive}:{t}"))
    return out


def test_allocate_gives_each_type_its_share_and_hands_on_what_a_scarce_one_lacks():
    got = allocate({"replace_object": 500, "swap_object": 5, "replace_relation": 100}, PAPER, 200)
    assert sum(got.values()) == 200
    # swap_object has 5 of its 18% share; the other 195 split 0.40 : 0.19 (132.2 : 62.8)
    assert got == {"replace_object": 133, "swap_object": 5, "replace_relation": 62}


def test_no_thinning_when_the_total_is_under_the_cap_and_every_floor_holds():
    res = mix(items({"replace_object": 40, "replace_attribute": 18, "replace_relation": 19, "swap_object": 18,
                     "swap_attribute": 5}), PAPER, cap=200, floor=0.5, seed=0)  # fmt: skip
    assert res.dropped == {} and res.warnings == []
    assert res.report["swap_object"]["emitted"] == 18


def test_the_cap_thins_the_abundant_type_toward_its_share():
    res = mix(items({"replace_object": 300, "replace_relation": 30, "swap_object": 30}), PAPER, cap=200,
              floor=0.5, seed=0)  # fmt: skip
    emitted = Counter(k.split(":")[0] for k in res.kept)
    assert sum(emitted.values()) == 200
    assert emitted["replace_relation"] == 30 and emitted["swap_object"] == 30
    assert all(why.startswith("mix: replace_object") for why in res.dropped.values())
    # a type with nothing at all is reported, never silently absent
    assert [w.split(" is ")[0] for w in res.warnings] == [
        "text negatives: replace_attribute", "text negatives: swap_attribute"]  # fmt: skip


def test_a_scarce_type_is_lifted_to_its_floor_but_never_below_the_least_total():
    avail = {"replace_object": 300, "replace_relation": 40, "swap_object": 9}
    shares = {t: PAPER[t] for t in avail}  # the configured types
    # swap_object at 9 is half its share (23% of these three types) of at most 77: thinning lifts it there
    assert plan_total({t: n for t, n in avail.items()}, normalised(shares), cap=349, floor=0.5) == 77
    # but never below `least`: 300 here, and then the shortfall is reported
    res = mix(items(avail), shares, cap=349, floor=0.5, seed=0, least=300)
    assert len(res.kept) == 300
    assert any("swap_object" in w and "below 50% of its target share 23%" in w for w in res.warnings)
    lifted = mix(items(avail), shares, cap=349, floor=0.5, seed=0)
    assert len(lifted.kept) == 77 and not lifted.warnings


def test_thinning_keeps_refinement_at_chance():
    """Refinement leaves each cell and its mirror equally full; the mix drops whole mirror pairs, so the
    blind scorers stay at chance on what it keeps."""
    rng = random.Random(0)
    pairs = [RefinePair(f"replace_object:{i}", rng.gauss(0.5, 1), rng.gauss(0.3, 1), "replace_object/L1")
             for i in range(600)]  # fmt: skip
    pairs += [RefinePair(f"swap_object:{i}", rng.gauss(0, 1), rng.gauss(0, 1), "swap_object/L1") for i in range(60)]
    refined = refine(pairs, seed=0, min_per_cell=5)
    kept = [p for p in pairs if p.key in refined.kept]
    mi = [MixItem(p.key, p.key.split(":")[0], p.key, refined.cells[p.key]) for p in kept]
    res = mix(mi, PAPER, cap=120, floor=0.5, seed=0)
    ro = [p for p in kept if p.key in res.kept and p.key.startswith("replace_object")]
    assert 0 < len(ro) < sum(1 for p in kept if p.key.startswith("replace_object"))
    acc = chance_accuracy(ro)
    assert acc == (0.5, 0.5), acc


def test_thinning_takes_from_positives_with_the_most_negatives_first():
    # 40 replace_object negatives: positives p0..p9 have 3 each, p10..p19 one each (zero cells: singles)
    mi = [MixItem(f"a{i}:{k}", "replace_object", f"p{i}") for i in range(10) for k in range(3)]
    mi += [MixItem(f"b{i}", "replace_object", f"p{10 + i}") for i in range(10)]
    mi += [MixItem(f"s{i}", "swap_object", f"q{i}") for i in range(10)]
    res = mix(mi, {"replace_object": 0.5, "swap_object": 0.5}, cap=30, floor=0, seed=0)
    kept_positives = {it.positive for it in mi if it.key in res.kept}
    assert {f"p{10 + i}" for i in range(10)} <= kept_positives  # the lone negatives all stay


def test_a_path_allows_a_swap_of_attributes_when_two_objects_differ_in_one_category():
    table = AttributeTable.load()
    plate = {"name": "plate", "attributes": ["white"], "relations": [
        {"name": "on", "object": {"name": "table", "attributes": ["brown"], "relations": [], "same": []}}],
        "same": []}  # fmt: skip
    assert swappable(plate, table)
    plate["relations"][0]["object"]["attributes"] = ["wooden"]
    assert not swappable(plate, table)  # material and colour: nothing to swap
    plate["relations"][0]["object"]["attributes"] = ["white"]
    assert not swappable(plate, table)  # the same colour: a swap changes nothing


def test_a_type_with_a_level_too_small_to_balance_is_refined_as_one_group():
    """Pairs of swap_object L2 alone (3 here) cannot fill a quadrant grid; they join the type's L1 pairs in
    one group instead of a group of their own where nearly every mirror cell is empty."""
    from hardneg.core.config import load_config
    from hardneg.core.rows import RefineScoreRow
    from hardneg.filters.decide_stage import _refine

    rng = random.Random(3)
    rows = {}
    for i in range(60):
        g1, g2 = rng.gauss(0, 1), rng.gauss(0, 1)
        rows[i] = RefineScoreRow(id=i, group="swap_object/L1", s1=[g1, 0.0], s2=[g2, 0.0])
    for i, (g1, g2) in enumerate([(0.5, 0.4), (-0.6, -0.3), (0.2, -0.1)], start=100):
        rows[i] = RefineScoreRow(id=i, group="swap_object/L2", s1=[g1, 0.0], s2=[g2, 0.0])
    for i in range(200, 260):
        g1, g2 = rng.gauss(0, 1), rng.gauss(0, 1)
        rows[i] = RefineScoreRow(id=i, group="replace_object/L1", s1=[g1, 0.0], s2=[g2, 0.0])
    kept, _, cells, groups = _refine(load_config(), rows)
    assert set(groups) == {"swap_object", "replace_object/L1"}
    assert groups["swap_object"]["pairs"] == 63
    assert {100, 101} & kept  # the L2 pairs in a (+,+) and a (-,-) cell are each other's mirrors
    assert cells[100][0] == "swap_object|2d"


def test_types_too_rare_to_balance_alone_are_refined_together():
    """A type of one pair has no mirror of its own: alone it would always be dropped, and a small run would
    publish none of it. The types too small even with their levels pooled are balanced as one group, where
    a pair of one can mirror a pair of another."""
    from hardneg.core.config import load_config
    from hardneg.core.rows import RefineScoreRow
    from hardneg.filters.decide_stage import _refine

    rng = random.Random(5)
    rows = {i: RefineScoreRow(id=i, group="replace_object/L1", s1=[rng.gauss(0, 1), 0.0], s2=[rng.gauss(0, 1), 0.0])
            for i in range(60)}  # fmt: skip
    rows[100] = RefineScoreRow(id=100, group="swap_attribute/L1", s1=[0.5, 0.0], s2=[0.4, 0.0])  # (+,+)
    rows[101] = RefineScoreRow(id=101, group="swap_object/L2", s1=[-0.6, 0.0], s2=[-0.3, 0.0])  # (-,-)
    rows[102] = RefineScoreRow(id=102, group="swap_object/L1", s1=[0.2, 0.0], s2=[-0.1, 0.0])
    kept, dropped, cells, groups = _refine(load_config(), rows)
    assert set(groups) == {"swap_attribute+swap_object", "replace_object/L1"}
    assert groups["swap_attribute+swap_object"]["pairs"] == 3
    assert {100, 101} <= kept  # each the other's mirror
    assert 102 in dropped and cells[100][0] == "swap_attribute+swap_object|2d"


def test_a_type_rare_alone_is_refined_with_the_smallest_other_type():
    """Fourteen real GQA graphs made seven swaps of attributes, most of which the blind scorers find easier
    than their positives: alone, the type had no mirror and was dropped whole though every other type was
    big enough for its own group. A type rare alone joins the smallest other one."""
    from hardneg.core.config import load_config
    from hardneg.core.rows import RefineScoreRow
    from hardneg.filters.decide_stage import _refine

    rng = random.Random(7)
    rows = {i: RefineScoreRow(id=i, group="replace_object/L1", s1=[rng.gauss(0, 1), 0.0], s2=[rng.gauss(0, 1), 0.0])
            for i in range(60)}  # fmt: skip
    rows |= {i: RefineScoreRow(id=i, group="swap_object/L1", s1=[rng.gauss(0, 1), 0.0], s2=[rng.gauss(0, 1), 0.0])
             for i in range(100, 125)}  # fmt: skip
    rows[200] = RefineScoreRow(id=200, group="swap_attribute/L1", s1=[0.5, 0.0], s2=[0.4, 0.0])  # (+,+)
    rows[201] = RefineScoreRow(id=201, group="swap_attribute/L1", s1=[0.3, 0.0], s2=[0.6, 0.0])  # (+,+)
    kept, _, cells, groups = _refine(load_config(), rows)
    assert set(groups) == {"swap_attribute+swap_object", "replace_object/L1"}
    assert groups["swap_attribute+swap_object"]["pairs"] == 27
    assert cells[200][0] == "swap_attribute+swap_object|2d"
    assert {200, 201} & kept  # mirrored by swaps of objects the scorers find harder than their positives


def test_negatives_spread_over_object_sets_and_images():
    """One photo, three objects, many positives over them: at most `per_object_set` negatives about one set
    of objects and `per_image` per positive of the image; what goes is of the type furthest above its share."""
    about_pair = frozenset({"switch", "mirror"})
    many = [MixItem(f"so:{i}", "swap_object", f"p{i}", image="photo", objects=about_pair) for i in range(6)]
    many += [MixItem(f"ro:{i}", "replace_object", f"p{i}", image="photo", objects=about_pair) for i in range(2)]
    elsewhere = [MixItem(f"ra:{i}", "replace_attribute", f"q{i}", image=f"other{i}", objects=frozenset({f"o{i}"}))
                 for i in range(4)]  # fmt: skip
    res = mix([*many, *elsewhere], PAPER, cap=100, floor=0.0, seed=0, per_object_set=3, per_image=1.0,
              image_positives={"photo": 6, **{f"other{i}": 1 for i in range(4)}})  # fmt: skip
    kept = sorted(res.kept)
    assert len([k for k in kept if not k.startswith("ra:")]) == 3  # three about the switch and the mirror
    assert {k for k in kept if k.startswith("ro:")} == {"ro:0", "ro:1"}  # the swaps were far above their share
    assert all(res.dropped[k].startswith("mix: spread: 3 text negatives about these objects") for k in res.dropped)
    # an image's cap: one negative per positive of the image
    spread_out = [MixItem(f"ro:{i}", "replace_object", f"p{i}", image="photo", objects=frozenset({f"o{i}"}))
                  for i in range(5)]  # fmt: skip
    res = mix(spread_out, PAPER, cap=100, floor=0.0, seed=0, per_object_set=3, per_image=1.0,
              image_positives={"photo": 2})  # fmt: skip
    assert len(res.kept) == 2 and all("on this image" in why for why in res.dropped.values())
    # no caps: everything stays
    assert len(mix(spread_out, PAPER, cap=100, floor=0.0, seed=0).kept) == 5


def test_an_image_rich_in_negatives_makes_up_for_one_without():
    """The default image cap lets a photo keep more than one negative per positive (another photo allowed
    none), while the total stays at `per_positive` each: with a cap of one per positive on every image the
    benchmark falls below one negative per positive wherever some positives allow none."""
    cfg = NegativeMixConfig()
    rich = [MixItem(f"ro:{i}", "replace_object", f"p{i % 2}", image="rich", objects=frozenset({f"o{i}"}))
            for i in range(4)]  # fmt: skip
    res = mix(rich, {"replace_object": 1.0}, cap=round(cfg.per_positive * 4), floor=0.0, seed=0,
              per_object_set=cfg.per_object_set, per_image=cfg.per_image,
              image_positives={"rich": 2, "poor": 2})  # fmt: skip
    assert len(res.kept) == 3  # ceil(1.5 x 2) on the rich photo; the poor one's two positives have none
    capped = mix(rich, {"replace_object": 1.0}, cap=2, floor=0.0, seed=0, per_image=cfg.per_image,
                 image_positives={"rich": 2})  # fmt: skip
    assert len(capped.kept) == 2  # the total cap still holds


def test_a_bare_part_of_things_allows_no_text_negative_and_a_described_one_does():
    words = Words.load()

    def bare(name: str) -> dict:
        return {"name": name, "attributes": [], "relations": [], "same": []}

    assert unalterable(bare("shirt"), words)  # "the hat": may be on the same man, unannotated
    assert unalterable(bare("tail"), words)
    assert not unalterable(bare("sign"), words)  # "the cone" where no cone is: a negative
    assert not unalterable({**bare("shirt"), "attributes": ["red"]}, words)  # "the blue shirt"
    assert not unalterable({**bare("shirt"), "relations": [{"name": "on", "object": bare("man")}]}, words)


def test_balancing_fills_a_cap_with_paths_that_allow_a_negative_before_those_that_allow_none():
    # Twenty bare targets, half of them parts of things that no negative can change; a cap of ten keeps the
    # ten that can be changed, whatever the seed (a random order keeps about half of them).
    items = [BalanceItem(i, "0_hop", 1, "shirt", (), unalterable=True) for i in range(10)]
    items += [BalanceItem(100 + i, "0_hop", 1, "sign", ()) for i in range(10)]
    for seed in range(5):
        kept, dropped = balance(items, BalanceConfig(per_type_level=10), seed)
        assert kept == set(range(100, 110)), seed
        assert all("per_type_level cap 10" in why for why in dropped.values())
