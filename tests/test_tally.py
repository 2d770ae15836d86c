"""The corpus counts are made once, as the hygiene stage cleans each shard (`Tally`), and summed by the
plausibility stage: the sum is what counting every graph in one pass gives, whatever the sharding."""

from __future__ import annotations

import math
import random

from hardneg.core.config import RunConfig
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.gqa.ingest import graph_to_row
from hardneg.core.gqa.plausibility import Counts, Tally, fold_of
from hardneg.core.rows import GraphRow
from hardneg.core.runner.alone import run_alone
from hardneg.core.words.table import Words
from hardneg.flows.pipeline import STAGES
from tests.helpers import graph, obj

WORDS = Words.load()
NAMES = ("cup", "table", "man", "shirt", "sign", "window", "plate", "car")
COLOURS = ("white", "red", "blue", "black")


def corpus(n: int, seed: int = 7) -> list:
    """`n` small graphs with repeated names, attributes, relations and boxes of odd sizes (their log areas
    are not exact in binary, so a float sum would depend on its order)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(1, 6)
        objects = []
        for j in range(k):
            box = (rng.randint(0, 300), rng.randint(0, 200), rng.randint(3, 197), rng.randint(3, 199))
            rels = (("near", f"{i}-{rng.randrange(k)}"),) if k > 1 and rng.random() < 0.6 else ()
            attrs = (rng.choice(COLOURS),) if rng.random() < 0.5 else ()
            objects.append(obj(f"{i}-{j}", rng.choice(NAMES), attrs, rels=rels, box=box))
        out.append(graph(*objects, image_id=str(1000 + i), width=rng.randint(320, 640), height=rng.randint(240, 480)))
    return out


def summed(shards: list[list]) -> Tally:
    rows = []
    for shard in shards:
        t = Tally()
        for g in shard:
            t.add(g, WORDS)
        rows.extend(t.rows())
    return Tally.sum(rows)


def test_the_sum_of_the_shards_tallies_is_the_same_however_the_corpus_is_sharded():
    graphs = corpus(60)
    one = summed([graphs])
    for cuts in ([7, 30, 31], [1, 2, 3, 59], list(range(5, 60, 5))):
        shards = [graphs[a:b] for a, b in zip([0, *cuts], [*cuts, 60], strict=True)]
        other = summed(shards)
        assert list(other.notes.rows()) == list(one.notes.rows())  # the log areas too, to the last bit
        for k in (0, 1):
            assert list(other.folds[k].rows()) == list(one.folds[k].rows())


def test_the_sum_counts_what_one_pass_over_every_graph_counts():
    graphs = corpus(40)
    folds, notes = (Counts(), Counts()), AnnotationStats()
    for g in graphs:
        folds[fold_of(g.image_id)].add(g)
        notes.add(g, WORDS)
    got = summed([graphs[:13], graphs[13:]])
    assert {0, 1} == {fold_of(g.image_id) for g in graphs}  # both halves hold graphs
    for k in (0, 1):
        assert list(got.folds[k].rows()) == list(folds[k].rows())
    for f in ("images", "multi", "boxes", "printed", "together", "shape", "place", "graphs"):
        assert getattr(got.notes, f) == +getattr(notes, f), f
    assert got.notes.log_area.keys() == notes.log_area.keys()
    for name, v in notes.log_area.items():
        assert math.isclose(got.notes.log_area[name], v, abs_tol=1e-6 * notes.boxes[name])


def test_the_plausibility_stage_sums_what_the_hygiene_stage_tallied():
    graphs = corpus(12)
    cfg = RunConfig(prior={"weight": 0.0})
    cleaned = run_alone(STAGES, "hygiene", cfg, {"ingest": {"graphs": [graph_to_row(g) for g in graphs]}})
    assert {r["kind"] for r in cleaned.outputs["tallies"]} >= {"counts:names", "notes:log_area"}
    out = run_alone(STAGES, "plausibility", cfg, {"hygiene": cleaned.outputs})
    counts = Counts()
    for row in cleaned.outputs["graphs"]:
        counts.add(GraphRow(**row).scene_graph())
    assert out.outputs["counts"] == list(counts.rows())
    assert out.summary["stats"]["names"] == len(counts.names)
