"""The prior of real scene graphs (`core/gqa/prior.py`): pseudo-counts that a run's own counts outweigh as
it grows, an image counted once, the bundled file and the script that rebuilds it, the stage that serves it."""

from __future__ import annotations

import json

import pytest

from hardneg.core.config import RunConfig
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.gqa.ingest import graph_to_row
from hardneg.core.gqa.plausibility import Counts, Plausibility, Tally
from hardneg.core.gqa.prior import Prior
from hardneg.core.resources import data_path
from hardneg.core.runner.alone import run_alone
from hardneg.core.words.table import Words
from hardneg.flows.pipeline import STAGES
from tests.helpers import graph, node, obj

WORDS = Words.load()


def cup_on_table(image_id: str, colour: str = "white") -> object:
    return graph(
        obj(f"{image_id}1", "cup", (colour,), rels=(("on", f"{image_id}2"),)),
        obj(f"{image_id}2", "table", box=(0, 50, 200, 100)),
        image_id=image_id,
    )


def prior_of(graphs, described: bool = True) -> Prior:
    p = Prior("prior@test")
    for g in graphs:
        p.add(g, WORDS, described)
    return p


def flat(rows) -> dict[tuple[str, str], float]:
    """Served prior rows (one per table) as {(kind, key as JSON): count}."""
    return {(r["kind"], json.dumps(k)): n for r in rows for k, n in zip(r["keys"], r["n"], strict=True)}


def run_counts(graphs) -> Counts:
    c = Counts()
    for g in graphs:
        c.add(g)
    return c


def test_a_small_run_leans_on_the_prior_and_a_big_one_on_itself():
    prior = prior_of([cup_on_table(f"p{i}") for i in range(400)])  # 400 real images: a cup on a table
    rows = list(prior.rows(weight=100))  # speaking as 100 images: each count a quarter of the prior's
    cup = {kind: n for (kind, key), n in flat(rows).items() if key == '"cup"'}
    assert cup["counts:names"] == cup["notes:images"] == cup["notes:boxes"] == 100.0

    def share_of_prior(run_images: int) -> float:
        run = [graph(obj(f"r{i}1", "mug", ("white",), rels=(("under", f"r{i}2"),)), obj(f"r{i}2", "table"),
                     image_id=f"r{i}") for i in range(run_images)]  # fmt: skip
        c = run_counts(run).with_prior(rows)
        on, under = c.triples[("cup", "on", "table")], c.triples[("mug", "under", "table")]
        return on / (on + under)

    assert share_of_prior(10) == pytest.approx(100 / 110)  # ten images: the prior's share W / (W + R)
    assert share_of_prior(1000) == pytest.approx(100 / 1100)  # a thousand: the run's own counts lead
    assert run_counts([]).with_prior([]).triples == run_counts([]).triples  # weight 0: the run alone


def test_a_table_counted_over_fewer_images_than_the_weight_speaks_as_itself():
    # attributes counted over 10 full graphs, names and relations over 10 + 990 reduced ones
    prior = prior_of([cup_on_table(f"f{i}") for i in range(10)])
    for i in range(990):
        prior.add(cup_on_table(f"r{i}", colour="red"), WORDS, described=False)
    rows = flat(prior.rows(weight=100))
    assert rows[("counts:names", '"cup"')] == pytest.approx(100)  # 1,000 images scaled to 100
    assert rows[("counts:attribute_name", '["white", "cup"]')] == 10  # 10 images never speak as 100
    assert ("counts:attribute_name", '["red", "cup"]') not in rows  # a reduced graph's attributes: not counted
    assert rows[("counts:full", '"cup"')] == 10  # boxes where a missing attribute is evidence


def test_the_absence_of_an_attribute_in_reduced_graphs_is_no_evidence():
    """An attribute the prior's reduced graphs never carry (their attributes were stripped) is not absurd
    for their names: the rule counts the boxes of the full graphs only."""
    prior = prior_of([cup_on_table(f"f{i}") for i in range(3)])
    for i in range(2000):
        prior.add(cup_on_table(f"r{i}"), WORDS, described=False)
    c = run_counts([cup_on_table("x", colour="white")]).with_prior(list(prior.rows(weight=5000)))
    assert c.names["cup"] > 1000 and c.boxes("cup") == 4  # the run's box and three full graphs'
    assert Plausibility(c).absurd(node("cup", "blue")) is None


def test_an_image_the_prior_counted_is_counted_once():
    a, b = cup_on_table("a"), cup_on_table("b", colour="red")
    both, only_b = prior_of([a, b]), prior_of([b])
    left = both.without([a, cup_on_table("c")], WORDS)  # "c" is not in the prior: nothing to take out
    assert left.images == {"b"} and left.described == {"b"}
    assert left.counts.names == only_b.counts.names and left.counts.attribute_name == only_b.counts.attribute_name
    assert left.notes.images == only_b.notes.images and left.notes.together == only_b.notes.together
    assert both.without([cup_on_table("c")], WORDS) is both


def test_the_plausibility_stage_serves_the_prior_less_the_runs_own_images(tmp_path):
    prior = prior_of([cup_on_table("a"), cup_on_table("b", colour="red")])
    path = tmp_path / "prior.json"
    prior.write(path)
    cfg = RunConfig.model_validate({"prior": {"file": str(path), "weight": 1.0}})
    tally = Tally()
    tally.add(cup_on_table("a"), WORDS)
    hygiene = {"graphs": [graph_to_row(cup_on_table("a"))], "tallies": list(tally.rows())}
    out = run_alone(STAGES, "plausibility", cfg, {"hygiene": hygiene})
    served = flat(out.outputs["prior"])
    assert served[("counts:attribute_name", '["red", "cup"]')] == 1  # image b, at its own weight (1 of 1)
    assert ("counts:attribute_name", '["white", "cup"]') not in served  # image a is the run's: counted there
    assert out.summary["data_versions"] == {"prior": "prior@test"}
    assert out.summary["stats"]["prior_images_left_out"] == 1


def test_the_bundled_prior_is_real_versioned_and_small():
    path = data_path(RunConfig().prior.file)
    assert path.stat().st_size < 2_000_000
    prior = Prior.load(path)
    assert prior.version.startswith("prior-gqa@") and len(prior.images) > 8000 and prior.described
    # what thousands of real images say: a man wears a shirt, a plate sits on a table, zebras come in herds
    assert prior.counts.triples[("man", "wearing", "shirt")] > 100
    assert prior.notes.together[("plate", "table")] > 100
    assert prior.notes.comes_in_many("zebra") is not None and prior.notes.comes_in_many("man") is None


def test_the_build_script_counts_as_a_run_does(tmp_path):
    from benchmarks.build_prior import main

    full = {"1": cup_on_table("1").to_gqa(), "2": cup_on_table("2", colour="red").to_gqa()}
    reduced = {"2": {**cup_on_table("2").to_gqa()}, "3": cup_on_table("3").to_gqa()}
    for g in reduced.values():
        for o in g["objects"].values():
            o["attributes"] = []
    (tmp_path / "full.json").write_text(json.dumps(full))
    (tmp_path / "reduced.json").write_text(json.dumps(reduced))
    out = tmp_path / "prior.json"
    assert main(["--source", f"full={tmp_path / 'full.json'}", "--source", f"reduced={tmp_path / 'reduced.json'}",
                 "--out", str(out), "--version", "prior@t"]) == 0  # fmt: skip
    prior = Prior.load(out)
    assert prior.images == {"1", "2", "3"} and prior.described == {"1", "2"}  # image 2 once, from the first
    assert prior.counts.attribute_name == {("white", "cup"): 1, ("red", "cup"): 1}
    assert prior.counts.names["cup"] == 3 and prior.notes.together[("cup", "table")] == 3
    assert prior.sources[0].startswith("full: 2 of 2 graphs") and "without attributes" in prior.sources[1]
    again = tmp_path / "again.json"
    main(["--source", f"full={tmp_path / 'full.json'}", "--source", f"reduced={tmp_path / 'reduced.json'}",
          "--out", str(again), "--version", "prior@t"])  # fmt: skip
    assert again.read_bytes() == out.read_bytes()  # the same graphs, the same file


def test_notes_with_the_prior_know_which_names_come_in_many_and_go_together():
    notes = AnnotationStats()
    for i in range(10):  # ten images: each with a fork and a plate, three zebras in six of them
        zebras = [obj(f"{i}z{k}", "zebra") for k in range(3 if i < 6 else 1)]
        notes.add(graph(obj(f"{i}f", "fork"), obj(f"{i}p", "plate"), *zebras, image_id=str(i)), WORDS)
    assert notes.comes_in_many("zebra") == "comes in many: 60% of the images holding it hold several"
    assert notes.comes_in_many("fork") is None
    assert notes.beside("plate", ["fork"]) == "usually annotated beside 'fork' (100% of the images holding one)"
    assert notes.beside("plate", ["cup"]) is None  # a cup is seen in no image: it says nothing


def test_a_name_the_reduced_graphs_cannot_hold_is_counted_over_the_full_graphs():
    """The reduced graphs stop at a few hundred names: "bat" is never in them, though bats lie beside balls.
    A count of "bat" is a count over the full graphs only, and so is the share of the images holding a ball
    that hold a bat: over all graphs it would read 1 in 100 for a pair seen together in every full graph."""

    def game(image_id: str, bat: bool) -> object:
        bats = (obj(f"{image_id}b", "bat", box=(60, 10, 10, 40)),) if bat else ()
        return graph(obj(f"{image_id}a", "ball"), *bats, image_id=image_id)

    prior = prior_of([game(f"f{i}", bat=True) for i in range(10)])
    for i in range(990):
        prior.add(game(f"r{i}", bat=False), WORDS, described=False)
    assert prior.notes.partial == {"ball": 1}
    rows = list(prior.rows(weight=100))
    served = flat(rows)
    assert served[("counts:names", '"bat"')] == 10  # seen in 10 full graphs: speaks as itself, not as 10 of 1,000
    assert served[("counts:names", '"ball"')] == pytest.approx(100)  # 1,000 graphs speak as 100
    notes = AnnotationStats()
    notes.add(game("x", bat=False), WORDS)  # the run: one ball, no bat annotated
    notes.with_prior(rows)
    assert notes.beside("bat", ["ball"]) == "usually annotated beside 'ball' (91% of the images holding one)"
    # a run alone counts over its own graphs, as before
    alone = AnnotationStats()
    for i in range(6):
        alone.add(game(f"y{i}", bat=i < 3), WORDS)
    assert alone.beside("bat", ["ball"]) == "usually annotated beside 'ball' (50% of the images holding one)"
    again = Prior.from_json(json.loads(json.dumps(prior.to_json())))
    assert again.notes.partial == prior.notes.partial and again.notes.described == prior.notes.described
    kinds = ("counts:names", "notes:images", "notes:described", "notes:partial", "notes:together", "notes:graphs")
    assert {k: n for k, n in flat(again.rows(weight=100)).items() if k[0] in kinds} == {
        k: n for k, n in served.items() if k[0] in kinds
    }  # the file keeps what the rows serve (box bins are not in it; log areas rounded)
