"""Deterministic, seeded balancing of positives.

GQA is dominated by left/right relations and a few names; caps per (type, level), per relation name and
per target name keep any one of them from swamping the benchmark. Candidates are visited in an order keyed
by (seed, sample id), which is independent of sharding, and each is kept when none of its caps is full.

Two preferences come first. A candidate that can carry a swap of attributes (two of its objects described
in one category, differently: "the white plate on the brown table") is visited before the rest. That is
the rarest kind of text negative (3% of real GQA candidates allow it, and the paper's benchmark has 5% of
them); visited in plain random order, the caps fill before most of them are reached. And a candidate that
states nothing a text negative may change is visited last: a bare part of things ("the shirt", "the head",
"the tail": no attribute, no relation) can only be renamed, and the name of another part or garment is no
negative where its wearer or whole is in view (its absence proves nothing). On 8,196 real GQA graphs such
paths held a third of the bare-target cap's places (5,256 of 15,000), and 91% of them got no candidate.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

from hardneg.core.config import BalanceConfig
from hardneg.core.records import Reject
from hardneg.core.rows import PATHS_BALANCE, SELECT_KEPT, BalanceRow, PositiveRow
from hardneg.core.runner.stage import Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words


@dataclass(slots=True, frozen=True)
class BalanceItem:
    id: int
    tuple_type: str
    level: int
    target_name: str
    relations: tuple[str, ...]  # distinct relation names on the path
    swappable: bool = False  # two objects of the path carry different attributes of one category
    unalterable: bool = False  # nothing a text negative may change: a bare part of things (`unalterable`)


def _order_key(seed: int, item: BalanceItem) -> tuple[bool, bool, bytes]:
    return (not item.swappable, item.unalterable, hashlib.sha1(f"{seed}:balance:{item.id}".encode()).digest())


def unalterable(path: dict, words: Words) -> bool:
    """Whether a path (its JSON) states nothing a text negative may change: its one object has no attribute
    and no relation, and its name is a part of things only (a shirt, a head): renamed to another part or
    garment, the negative's object may be there unannotated on the same wearer or whole."""
    return (
        not path.get("attributes")
        and not path.get("relations")
        and not path.get("same")
        and words.is_part_of_things(path["name"])
    )


def swappable(path: dict, table: AttributeTable) -> bool:
    """Whether two objects of a path (its JSON) carry attributes of one category that differ, neither held
    by the other: the path allows a swap of attributes (`generators/sites.enumerate_sites`)."""
    nodes: list[set[str]] = []
    _node_attributes(path, nodes)
    return attributes_swappable(nodes, table)


def _node_attributes(n: dict, out: list[set[str]]) -> None:
    """Each node's attributes, depth first (a module function: a nested one that calls itself is a cycle the
    runner's sleeping collector would leave behind, once per candidate)."""
    out.append(set(n.get("attributes", ())))
    for e in n.get("relations", ()):
        _node_attributes(e["object"], out)
    for e in n.get("same", ()):
        _node_attributes(e["object"], out)


def attributes_swappable(nodes: list[set[str]], table: AttributeTable) -> bool:
    """`swappable` for the attribute sets of a path's nodes (`AttributeTable.swap_pairs`)."""
    described = [attrs for attrs in nodes if attrs]
    return any(
        next(table.swap_pairs(a, b), None) is not None for i, a in enumerate(described) for b in described[i + 1 :]
    )


def balance(items: list[BalanceItem], cfg: BalanceConfig, seed: int) -> tuple[set[int], dict[int, str]]:
    """Return (kept ids, {dropped id: reason})."""
    by_tl: Counter = Counter()
    by_rel: Counter = Counter()
    by_name: Counter = Counter()
    kept: set[int] = set()
    dropped: dict[int, str] = {}
    for it in sorted(items, key=lambda i: _order_key(seed, i)):
        if cfg.per_type_level is not None and by_tl[(it.tuple_type, it.level)] >= cfg.per_type_level:
            dropped[it.id] = f"balance: per_type_level cap {cfg.per_type_level} for {it.tuple_type} L{it.level}"
            continue
        full = [r for r in it.relations if cfg.per_relation is not None and by_rel[r] >= cfg.per_relation]
        if full:
            dropped[it.id] = f"balance: per_relation cap {cfg.per_relation} for {full[0]!r}"
            continue
        if cfg.per_target_name is not None and by_name[it.target_name] >= cfg.per_target_name:
            dropped[it.id] = f"balance: per_target_name cap {cfg.per_target_name} for {it.target_name!r}"
            continue
        kept.add(it.id)
        by_tl[(it.tuple_type, it.level)] += 1
        by_name[it.target_name] += 1
        for r in it.relations:
            by_rel[r] += 1
    return kept, dropped


def balance_row(positive: PositiveRow, table: AttributeTable, words: Words) -> BalanceRow:
    """What the select stage balances a candidate positive by."""
    path = positive.path
    return BalanceRow(
        id=positive.id, image_id=positive.image_id, expression=positive.expression, tuple_type=positive.tuple_type,
        level=positive.level, target=path["name"],
        relations=sorted({t[1] for t in positive.tuple if t[1] != "has attribute" and not t[1].startswith("same ")}),
        swappable=swappable(path, table), unalterable=unalterable(path, words),
    )  # fmt: skip


class SelectStage(Stage):
    """Global balancing over every shard's candidate positives, by what the paths stage wrote of each for
    it (`BalanceRow`: a few fields, not the candidates whole)."""

    name = "select"
    # v2: candidates that allow a swap of attributes first; v3: read from the balance rows the paths stage writes,
    # and candidates that allow no text negative last
    version = "select@v3"
    reads = ("paths",)
    writes = outputs(SELECT_KEPT)
    config = ("balance", "seed")
    sharded = False

    def run(self, unit: Unit) -> None:
        """Streams the balance rows: only what balancing and the reject lines need is held (a GQA-scale run
        has ~600k candidates; holding them whole took ~3 GB)."""
        items: list[BalanceItem] = []
        about: dict[int, tuple[str, str]] = {}  # id -> (image, expression): the reject line's rest is in the item
        for r in unit.records_all(PATHS_BALANCE):
            items.append(
                BalanceItem(r.id, r.tuple_type, r.level, r.target, tuple(r.relations), r.swappable, r.unalterable)
            )
            about[r.id] = (r.image_id, r.expression)
        unit.items_in = len(items)
        if len(about) != len(items):
            raise AssertionError("two positives share an id: content ids collided or a shard was read twice")
        kept, dropped = balance(items, unit.cfg.balance, unit.cfg.seed)
        for it in items:
            if it.id not in kept:
                image_id, expression = about[it.id]
                detail = {"tuple_type": it.tuple_type, "level": it.level, "expression": expression}
                unit.reject(Reject("balance", dropped[it.id], image_id, it.id, detail=detail))
        unit.write("kept", ({"id": i} for i in sorted(kept)))
        unit.stats.update({"kept": len(kept), "dropped": len(dropped)})
        unit.stats.update(Counter(f"dropped:{why}" for why in dropped.values()))
