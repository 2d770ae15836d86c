"""Stages run alone (`core/runner/alone.py`) on small hand-written upstream rows: hygiene, select, decide and
the TRICD export, each in well under a second, with no demo run; and the record types against the
records they describe."""

from __future__ import annotations

import pytest

from hardneg.core.config import RunConfig
from hardneg.core.gqa.ingest import graph_to_row
from hardneg.core.records import PathNode
from hardneg.core.rows import ImageNegativeRow, PositiveRow, TextNegativeRow
from hardneg.core.runner.alone import run_alone
from hardneg.core.schema import as_row, row_problem, to_record
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.flows.pipeline import STAGES
from hardneg.generators.paths.select import balance_row
from tests.helpers import graph, node, obj


def positive(pid: int, path: PathNode, image_id: str = "1", tuple_type: str = "0_hop", level: int = 2,
             risk: list | None = None, expression: str = "the red cup") -> dict:  # fmt: skip
    return as_row(PositiveRow.made(
        id=pid, image_id=image_id, width=500, height=400, path=path, tuple_type=tuple_type, level=level,
        expression=expression, template=f"{tuple_type}@v1#0", bbox=(10, 10, 40, 40), distractors=1,
        generator="paths@test", spatial=bool(path.relations), attribute=bool(path.attributes),
        risk_reasons=risk or [],
    ))  # fmt: skip


def text_negative(nid: int, p: dict, negative_type: str = "replace_attribute") -> dict:
    return as_row(TextNegativeRow.made(
        id=nid, positive_id=p["id"], image_id=p["image_id"], width=500, height=400,
        path=PathNode.from_json(p["path"]).without_ids(), ori_type=p["tuple_type"], level=p["level"],
        negative_type=negative_type, negative_level=1, shuffle_index=[0], change={"nodes": [0]},
        expression="the blue cup", template=p["template"], bbox=(10, 10, 40, 40), generator="negatives@test",
        backend="none",
    ))  # fmt: skip


def image_negative(nid: int, p: dict) -> dict:
    return as_row(ImageNegativeRow.made(
        id=nid, source_image_id=p["image_id"], positive_id=p["id"], negative_level=1,
        negative_type="replace_attribute", shuffle_index=[0], ori_type=p["tuple_type"], level=p["level"],
        expression=p["expression"], path=p["path"], edit={"object": "1", "attributes": ["blue"]},
        edit_boxes=[[10, 10, 40, 40]], candidates=[f"images/{nid}-0.jpg"], bbox=[10, 10, 40, 40], width=500,
        height=400, generator="negatives_image@test", backend="opencv",
    ))  # fmt: skip


def test_the_sample_records_write_rows_of_their_record_types():
    p = positive(1, node("cup", "red", oid="1"))
    assert row_problem(p, PositiveRow) is None
    assert row_problem(text_negative(2, p), TextNegativeRow) is None
    assert row_problem(image_negative(3, p), ImageNegativeRow) is None
    assert row_problem({**p, "split": "test"}, PositiveRow) == "a row has split, which PositiveRow does not declare"


def test_a_sample_read_back_writes_the_row_it_was_read_from():
    """The language stage adds a rewrite's keys only where rewrites were asked for (and the backend only
    where one answered): a record read from any of those rows writes that row again, keys in order."""
    p = positive(1, node("cup", "red", oid="1"))
    asked = {**p, "template_expression": "the red cup", "rewrites": [], "expression_source": "template"}
    answered = {**asked, "rewrites": ["a red cup", "the cup that is red"], "expression": "a red cup",
                "expression_source": "rewrite#1", "rewrite_backend": "lexicon@v1"}  # fmt: skip
    n = text_negative(2, p)
    n_answered = {**n, "rewrites": ["a blue cup"], "rewrite_backend": "lexicon@v1"}
    for row, record in [(p, PositiveRow), (asked, PositiveRow), (answered, PositiveRow), (n, TextNegativeRow),
                        ({**n, "rewrites": []}, TextNegativeRow), (n_answered, TextNegativeRow),
                        (image_negative(3, p), ImageNegativeRow)]:  # fmt: skip
        again = as_row(to_record(row, record))
        assert list(again.items()) == list(row.items())


def test_hygiene_merges_duplicate_boxes_and_drops_an_edge_the_boxes_contradict():
    g = graph(
        obj("1", "cup", ("red",), rels=(("to the right of", "3"),), box=(10, 10, 40, 40)),
        obj("2", "cup", ("small",), box=(11, 10, 40, 40)),  # the same cup, annotated twice
        obj("3", "plate", box=(300, 10, 80, 40)),  # the boxes say the cup is left of the plate
    )
    out = run_alone(STAGES, "hygiene", RunConfig(), {"ingest": {"graphs": [graph_to_row(g)]}})
    [row] = out.outputs["graphs"]
    objects = row["graph"]["objects"]
    assert sorted(objects) == ["1", "3"]
    assert objects["1"]["attributes"] == ["red", "small"] and objects["1"]["relations"] == []
    assert out.summary["stats"] == {"dropped_contradicted_edge": 1, "merged_duplicate": 1}
    assert [(r["reason"].split(" ")[0], r["detail"]["objects"]) for r in out.rejects] == [
        ("'cup'", ["1", "2"]),
        ("'cup'", ["1", "3"]),
    ]


def test_hygiene_drops_colour_skin_and_body_words_from_people_only():
    """Real VG photo: "the white walking man carrying the silver backpack" named a man by a colour the graph put
    on him (a race? his clothes are dark). No positive or negative describes a person by skin, ethnicity or
    body; the rest of what the graph says of them, and colours of things, stay."""
    g = graph(
        obj("1", "man", ("white", "walking", "bald"), box=(10, 10, 40, 100)),
        obj("2", "backpack", ("silver",), box=(20, 20, 20, 20)),
        obj("3", "woman", ("asian", "smiling"), box=(200, 10, 40, 100)),
        obj("4", "pitcher", ("clear",), box=(300, 10, 20, 30)),  # a jug, or the baseball player: said of the jug
    )
    out = run_alone(STAGES, "hygiene", RunConfig(), {"ingest": {"graphs": [graph_to_row(g)]}})
    objects = out.outputs["graphs"][0]["graph"]["objects"]
    assert [objects[k]["attributes"] for k in "1234"] == [["walking"], ["silver"], ["smiling"], ["clear"]]
    assert out.summary["stats"] == {"dropped_person_attribute": 2, "added_side_by_side": 1}  # the woman, the jug
    assert out.rejects[0]["reason"] == (
        "'man' 1: not said of a person: 'white' (skin: on a person noun it reads as skin colour or race); 'bald' "
        "(body: a judgement of a person's body)"
    )
    kept = run_alone(STAGES, "hygiene", RunConfig(hygiene={"drop_person_attributes": False}),
                     {"ingest": {"graphs": [graph_to_row(g)]}})  # fmt: skip
    assert kept.outputs["graphs"][0]["graph"]["objects"]["1"]["attributes"] == ["white", "walking", "bald"]


def test_select_keeps_a_candidate_that_allows_an_attribute_swap_first_and_rejects_what_its_caps_drop():
    plain = positive(1, node("cup", "red", oid="1"), expression="the red cup")
    swappable = positive(
        2, node("plate", "white", rel=[("on", node("table", "brown", oid="3"))], oid="2"), tuple_type="0_hop",
        expression="the white plate on the brown table",
    )  # fmt: skip
    other = positive(3, node("table", oid="3"), tuple_type="1_hop", level=1, expression="the table")
    cfg = RunConfig(balance={"per_type_level": 1})
    table, rows = AttributeTable.load(), [plain, swappable, other]
    balance = [as_row(balance_row(to_record(r, PositiveRow), table, Words.load())) for r in rows]
    upstream = {"paths": {"positives": rows, "balance": balance}}
    out = run_alone(STAGES, "select", cfg, upstream)
    assert out.outputs["kept"] == [{"id": 2}, {"id": 3}]
    [reject] = out.rejects
    assert reject["sample_id"] == 1 and reject["reason"] == "balance: per_type_level cap 1 for 0_hop L2"
    assert out.summary["stats"]["kept"] == 2


def test_decide_drops_a_risky_positive_with_its_negatives_and_keeps_the_rest():
    safe = positive(1, node("cup", "red", oid="1"))
    risky = positive(
        2,
        node("cup", "red", oid="1"),
        image_id="2",
        risk=[{"kind": "in_picture", "why": "inside a picture", "weight": 0.4}],
    )
    upstream = {
        "language": {"positives": [safe, risky], "negatives": [text_negative(11, safe), text_negative(12, risky)]},
        "images": {"image-negatives": [image_negative(21, safe)]},
    }
    cfg = RunConfig(refine={"enabled": False}, risk={"max": 0.3})
    out = run_alone(STAGES, "decide", cfg, upstream)
    positives = {d["id"]: d for d in out.outputs["positives"]}
    assert positives[1]["keep"] and positives[1]["scores"] == {"annotation_risk": 0.1}  # no detector: 0.1
    assert not positives[2]["keep"] and positives[2]["reason"].startswith("risk: 0.46 above risk.max 0.3")
    negatives = {d["id"]: d for d in out.outputs["negatives"]}
    assert negatives[11]["keep"]
    assert negatives[12] == {"id": 12, "keep": False, "reason": f"its positive was dropped: {positives[2]['reason']}"}
    assert negatives[21] == {"id": 21, "keep": True, "candidate": 0, "scores": {}, "passed": [0]}
    assert [(r["stage"], r["sample_id"]) for r in out.rejects] == [("risk", 2)]


def same_split_ids(n: int) -> list[str]:
    """`n` image ids of the test split (a distractor is always taken from its positive's split)."""
    cfg = RunConfig()
    return [i for i in map(str, range(1, 500)) if split_of(i, cfg.splits) == "test"][:n]


def test_the_tricd_export_pairs_a_positive_with_a_confusable_image_where_its_expression_is_false(tmp_path):
    i0, i1 = same_split_ids(2)
    g0 = graph(obj("1", "cup", ("red",)), obj("2", "table", box=(0, 60, 400, 200)), image_id=i0)
    g1 = graph(obj("1", "cup", ("blue",)), obj("2", "table", box=(0, 60, 400, 200)), image_id=i1)
    p = positive(1, node("cup", "red", oid="1"), image_id=i0)
    phrases = {"id": 1, "phrases": [{"text": "the red cup", "start": 0, "end": 11, "node": 0}], "chunks": 1}
    upstream = {
        "hygiene": {"graphs": [graph_to_row(g0), graph_to_row(g1)]},
        "language": {"positives": [p]},
        "decide": {"positives": [{"id": 1, "keep": True}]},
        "phrases": {"phrases": [phrases]},
    }
    (tmp_path / "graphs.json").write_text("{}")  # a run without images: the pairs name no image file
    cfg = RunConfig(inputs={"scene_graphs": tmp_path / "graphs.json"}, exports={"tricd": {"distractors": 1}})
    out = run_alone(STAGES, "tricd", cfg, upstream, root=tmp_path / "run")
    pairs = out.outputs["pairs"]
    assert [(r["image_id"], r["negative"], r["phrases"]) for r in pairs] == [
        (i0, None, {"p0": [[10, 10, 40, 40]]}),
        (i1, "distractor", {"p0": []}),
    ]
    assert {r["caption"] for r in pairs} == {"the red cup"} and pairs[1]["positive_id"] == pairs[0]["id"]
    assert pairs[1]["certificate"] == {"kind": "distractor", "image_id": i1}
    assert (tmp_path / "run" / "tricd" / "TRICD_grounding_test.json").exists()


def test_a_stage_run_alone_checks_the_given_rows_against_their_record_types():
    with pytest.raises(RuntimeError, match="a row lacks graph"):
        run_alone(STAGES, "hygiene", RunConfig(), {"ingest": {"graphs": [{"image_id": "1"}]}})
    with pytest.raises(ValueError, match="no stage is called ingets"):
        run_alone(STAGES, "hygiene", RunConfig(), {"ingets": {"graphs": []}})


def test_by_default_two_independent_doubts_drop_a_positive_of_any_level():
    """Failed before (`risk.max` was null: flag only): a level-1 positive the graph leaves open twice (another
    object with nothing to rule it out, and more people than shirts) was published, flagged. One doubt
    alone still only flags it at level 1."""
    one = positive(
        1, node("shirt", oid="1"), level=1, risk=[{"kind": "unannotated_twin", "why": "a twin", "weight": 0.4}]
    )
    two = positive(
        2, node("shirt", oid="1"), image_id="2", level=1,
        risk=[{"kind": "unannotated_twin", "why": "a twin", "weight": 0.4},
              {"kind": "other_wholes", "why": "others", "weight": 0.4}],
    )  # fmt: skip
    out = run_alone(STAGES, "decide", RunConfig(refine={"enabled": False}), {"language": {"positives": [one, two]}})
    positives = {d["id"]: d for d in out.outputs["positives"]}
    assert positives[1]["keep"] and positives[1]["scores"]["at_risk"] == 1.0
    assert not positives[2]["keep"] and positives[2]["reason"].startswith("risk: 0.68 above risk.max 0.6")
