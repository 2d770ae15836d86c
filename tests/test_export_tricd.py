"""The TRICD export: its pairs read straight into `evaluation.tricd` (an oracle scores 100, an image-blind
model scores chance on Group-Recall@1), its files in TRICD's own layout read as the official code reads
them, its distractors are the most confusable images, and every certificate holds when re-executed."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from hardneg.core.certify import Certifier, context_objects
from hardneg.core.config import SplitsConfig
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathEdge, PathNode, Relation, SceneGraph, SceneObject
from hardneg.core.rows import GraphRow
from hardneg.core.runner.folder import stored_config
from hardneg.core.schema import to_record
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.evaluation.tricd import evaluate_cpd, group_recall_at_1, official_pairs, official_predictions
from hardneg.exports.corpus import Corpus
from hardneg.exports.tricd.rank import rank_distractors
from hardneg.flows.pipeline import resplittable_keys
from tests.export_run import certifier, export_run, graphs, records
from tests.helpers import kept_positive

TABLE = AttributeTable.load(None)


@pytest.fixture(scope="module")
def pairs() -> list[dict]:
    return records(export_run(), "tricd")


@pytest.fixture(scope="module")
def official() -> dict[str, dict]:
    """Each split's file in TRICD's own layout, by split."""
    root = export_run() / "tricd"
    return {s: orjson.loads((root / f"TRICD_grounding_{s}.json").read_bytes()) for s in ("train", "val", "test")}


def _groups(pairs: list[dict]) -> dict[int, list[dict]]:
    negs = defaultdict(list)
    for p in pairs:
        if p["positive_id"] is not None:
            negs[p["positive_id"]].append(p)
    return negs


def test_oracle_scores_100_and_image_blind_scores_chance(pairs):
    positives = [p for p in pairs if p["positive_id"] is None]
    negs = _groups(pairs)
    assert positives and all(negs[p["id"]] for p in positives)
    assert {n["negative"] for ns in negs.values() for n in ns} == {"distractor", "image_edit"}
    oracle = [
        {"pair_id": p["id"], "phrase_id": ph, "bbox": b, "score": 1.0}
        for p in positives
        for ph, boxes in p["phrases"].items()
        for b in boxes
    ]
    ap = evaluate_cpd(pairs, oracle)
    assert ap["ap"] == pytest.approx(1.0) and ap["num_negative_pairs"] == len(pairs) - len(positives)
    assert group_recall_at_1(pairs, oracle)["value"] == pytest.approx(1.0)
    # a model that cannot tell the images apart: the positive's boxes, at one score, on every pair of a group
    blind = [
        {**d, "pair_id": pair["id"]}
        for p in positives
        for pair in (p, *negs[p["id"]])
        for d in oracle
        if d["pair_id"] == p["id"]
    ]
    chance = [1 / (1 + len(negs[p["id"]])) for p in positives for ph, b in p["phrases"].items() if b]
    gr = group_recall_at_1(pairs, blind)
    assert gr["value"] == pytest.approx(sum(chance) / len(chance))
    assert evaluate_cpd(pairs, blind)["ap"] < 0.75


def test_every_certificate_holds_on_reexecution(pairs):
    root = export_run()
    g = graphs(root)
    cert = certifier(root)
    positives = {p["id"]: p for p in pairs if p["positive_id"] is None}
    splits = stored_config(root).splits
    for p in positives.values():
        path = PathNode.from_json(p["path"])
        index = GraphIndex(g[p["image_id"]], TABLE)
        assert execute(path.without_ids(), index) == {path.id}  # the positive is unique on I0
        ctx = context_objects(path, index, path.id)
        for ph, boxes in p["phrases"].items():
            assert p["phrase_text"][ph] in p["caption"]
            node = p["phrase_node"][ph]
            assert boxes == [list(g[p["image_id"]].objects[o].box) for o in sorted(ctx[node])] and boxes
        assert p["split"] == split_of(p["image_id"], splits)
        assert (root / p["image"]).is_file()
    for n in (x for x in pairs if x["positive_id"] is not None):
        p = positives[n["positive_id"]]
        assert n["phrases"] == {ph: [] for ph in p["phrases"]} and n["caption"] == p["caption"]
        assert n["split"] == p["split"] and (root / n["image"]).is_file()
        path = PathNode.from_json(p["path"])
        c = n["certificate"]
        if c["kind"] == "distractor":
            i1 = g[c["image_id"]]
            assert c["image_id"] != p["image_id"] and split_of(c["image_id"], splits) == p["split"]
            assert not execute(path.without_ids(), GraphIndex(i1, TABLE))
            assert cert.nothing(path, i1) is None
        else:
            assert not execute(path.without_ids(), GraphIndex(apply_edit(g[c["image_id"]], c["edit"]), TABLE))


def test_distractors_share_core_traits(pairs):
    """Most distractors show the target's name (the hard case); every one shares some name with I0."""
    g = graphs(export_run())
    positives = {p["id"]: p for p in pairs if p["positive_id"] is None}
    dis = [n for n in pairs if n["negative"] == "distractor"]
    same_name = 0
    for n in dis:
        p = positives[n["positive_id"]]
        names0 = {o.name for o in g[p["image_id"]].objects.values()}
        names1 = {o.name for o in g[n["image_id"]].objects.values()}
        assert names0 & names1
        same_name += p["path"]["name"] in names1
    assert same_name > len(dis) / 2


# -- TRICD's own layout, read as its official evaluation code reads it ---------------------------------

IMAGE_KEYS = {"id": int, "file_name": str, "caption": str, "source": str, "positive": bool, "original_id": str}
ANNOTATION_KEYS = {"id": int, "image_id": int, "phrase_id": int, "category_id": int, "bbox": list}


def _read_official(data: dict[str, Any], folder: Path) -> dict[int, dict[str, Any]]:
    """A reader written from the official layout's description: COCO-style `images`, `annotations` and
    `categories`; every image's phrases {integer id as a string: [[start, end], ...]} slicing its caption,
    phrase ids unique in the file; a positive "N_0" with its negative "N_1" (same caption and spans); the
    annotations' phrase ids among their positive image's phrases. Returns the images by id."""
    assert {"images", "annotations", "categories"} <= data.keys()
    images: dict[int, dict[str, Any]] = {}
    phrase_owner: dict[int, int] = {}
    for img in data["images"]:
        for key, kind in IMAGE_KEYS.items():
            assert isinstance(img[key], kind), (key, img)
        assert img["id"] not in images and (folder / img["file_name"]).is_file()
        assert isinstance(img["width"], int) and isinstance(img["height"], int) and img["width"] > 0 < img["height"]
        assert img["source"] in ("coco_test2017", "winoground")  # the official per-subset table knows no other
        assert img["source"] != "coco_test2017" or img["coco_type"] in ("object", "relation")
        assert re.fullmatch(r"\d+_\d+", img["original_id"])
        images[img["id"]] = img
        assert img["phrases"]
        for pid, spans in img["phrases"].items():
            assert int(pid) not in phrase_owner  # unique in the file
            phrase_owner[int(pid)] = img["id"]
            for start, end in spans:
                assert img["caption"][start:end] == img["phrase_text"][pid]
    by_key = {(i["source"], i["original_id"], i["positive"]): i for i in images.values()}
    assert len(by_key) == len(images)  # the official group recall keys images by these
    for img in images.values():
        if img["positive"]:
            group, k = img["original_id"].split("_")
            neg = by_key[(img["source"], f"{group}_{1 - int(k)}", False)]  # what the official code looks up
            assert neg["caption"] == img["caption"]
            assert sorted(neg["phrases"].values()) == sorted(img["phrases"].values())
    category_ids = {c["id"] for c in data["categories"]}
    boxed, ann_ids = set(), set()
    for a in data["annotations"]:
        for key, kind in ANNOTATION_KEYS.items():
            assert isinstance(a[key], kind), (key, a)
        assert a["id"] >= 1 and a["id"] not in ann_ids and a["category_id"] in category_ids and a["iscrowd"] == 0
        ann_ids.add(a["id"])
        assert images[a["image_id"]]["positive"] and str(a["phrase_id"]) in images[a["image_id"]]["phrases"]
        w, h = a["bbox"][2:]
        assert len(a["bbox"]) == 4 and w >= 0 and h >= 0 and a["area"] == w * h
        boxed.add(a["phrase_id"])
    positive_phrases = {int(p) for i in images.values() if i["positive"] for p in i["phrases"]}
    assert positive_phrases == boxed  # the official recall needs a box for every positive phrase
    return images


def test_official_layout_reads_like_tricd(official, pairs):
    root = export_run()
    for split, data in official.items():
        images = _read_official(data, root / "tricd")
        ours = [p for p in pairs if p["split"] == split]
        assert sorted(i["pair_id"] for i in images.values()) == sorted(p["id"] for p in ours)
        assert all(i["split"] == split for i in images.values())
    assert sum(len(d["images"]) for d in official.values()) == len(pairs)


def test_official_layout_scores_an_oracle_100(official):
    gt = official["test"]
    results: dict[str, dict[str, list]] = {
        str(i["id"]): {"scores": [], "boxes": [], "phrase_ids": []} for i in gt["images"]
    }
    for a in gt["annotations"]:
        x, y, w, h = a["bbox"]
        r = results[str(a["image_id"])]
        r["scores"].append(1.0)
        r["boxes"].append([x, y, x + w, y + h])  # the official results hold x0, y0, x1, y1
        r["phrase_ids"].append(a["phrase_id"])
    pairs = official_pairs(gt)
    preds = official_predictions(gt, results)
    assert evaluate_cpd(pairs, preds)["ap"] == pytest.approx(1.0)
    assert group_recall_at_1(pairs, preds)["value"] == pytest.approx(1.0)


# -- confusable distractors --------------------------------------------------------------------------


def _row(image_id: str, *objects: tuple[str, list[tuple[str, int]]]) -> dict[str, Any]:
    """A cleaned graph row: objects (name, [(relation, index of the partner)])."""
    objs = {
        str(k): {
            "name": n,
            "x": 0,
            "y": 0,
            "w": 1,
            "h": 1,
            "relations": [{"name": r, "object": str(o)} for r, o in rel],
        }
        for k, (n, rel) in enumerate(objects)
    }
    return {"image_id": image_id, "graph": {"width": 10, "height": 10, "objects": objs}}


def test_distractors_rank_by_name_then_scene():
    """The target's name first, then the expression's partners and relations: "a man holding a bag" is the
    most confusable image for "the man holding an umbrella", an image without a man the least."""
    splits = SplitsConfig(train=1.0, val=0.0, test=0.0)
    rows = [
        _row("i0", ("man", [("holding", 1)]), ("umbrella", []), ("street", [])),
        _row("same_relation", ("man", [("holding", 1)]), ("bag", []), ("street", [])),
        _row("partner_only", ("man", []), ("umbrella", []), ("car", []), ("tree", [])),
        _row("name_only", ("man", []), ("car", []), ("tree", [])),
        _row("no_man", ("umbrella", []), ("street", []), ("dog", [("holding", 0)])),
        _row("unrelated", ("sky", []), ("cloud", [])),
    ]
    index = Corpus.of_rows([to_record(r, GraphRow) for r in rows], splits)
    path = PathNode("man", relations=(PathEdge("holding", PathNode("umbrella")),))
    ranked = rank_distractors(index, kept_positive(id=1, image_id="i0"), path, 10, 10, 0)
    assert ranked == ["same_relation", "partner_only", "name_only", "no_man"]  # "unrelated" shares no name


def test_tricd_is_a_decision_stage_split_can_retune():
    keys = resplittable_keys()
    assert {"exports.tricd.distractors", "exports.tricd.checked", "exports.imagecode", "exports.probes"} <= keys
    assert "exports.probe_b" not in keys and "exports.tricd.enabled" not in keys  # they need new work


# -- the certifier on hand-made graphs ---------------------------------------------------------------


def _graph(*objects: SceneObject) -> SceneGraph:
    return SceneGraph("g", 200, 100, {o.id: o for o in objects})


def test_unannotated_attributes_and_missing_edges_prove_nothing():
    cert = Certifier(Words.load(), TABLE)
    white_cup = PathNode("cup", ("white",))
    assert cert.nothing(white_cup, _graph(SceneObject("1", "cup", 10, 10, 20, 20))) is not None  # no colour known
    assert cert.nothing(white_cup, _graph(SceneObject("1", "cup", 10, 10, 20, 20, ("red",)))) is None
    assert cert.nothing(white_cup, _graph(SceneObject("1", "plate", 10, 10, 20, 20))) is None  # no cup at all
    assert cert.nothing(white_cup, _graph(SceneObject("1", "mug", 10, 10, 20, 20))) is not None  # a mug is a cup
    # an object under a broader name may be the one: a "person" may be the man, an "animal" the dog
    holding = PathNode("man", relations=(PathEdge("holding", PathNode("umbrella")),))
    person = SceneObject("1", "person", 10, 10, 20, 60, relations=(Relation("holding", "2"),))
    umbrella = SceneObject("2", "umbrella", 0, 0, 50, 20)
    assert cert.nothing(holding, _graph(person, umbrella)) is not None
    assert cert.nothing(PathNode("dog"), _graph(SceneObject("1", "animal", 10, 10, 20, 20))) is not None
    # a plural or synonym of the name could be the object
    assert cert.nothing(PathNode("cup"), _graph(SceneObject("1", "cups", 10, 10, 20, 20))) is not None
    on_table = PathNode("cup", relations=(PathEdge("on", PathNode("table")),))
    cup, table = SceneObject("1", "cup", 10, 10, 20, 20), SceneObject("2", "table", 0, 30, 200, 70)
    assert cert.nothing(on_table, _graph(cup, table)) is not None  # no edge stored: still may be on it
    under = SceneObject("1", "cup", 10, 10, 20, 20, relations=(Relation("under", "2"),))
    assert cert.nothing(on_table, _graph(under, table)) is None  # a contradicting relation is stored
    left = PathNode("cup", relations=(PathEdge("to the left of", PathNode("table")),))
    right_cup = SceneObject("1", "cup", 150, 10, 20, 20)
    small_table = SceneObject("2", "table", 10, 30, 40, 40)
    assert cert.nothing(left, _graph(right_cup, small_table)) is None  # the boxes say right of


def test_absence_of_a_crowd_name_proves_nothing():
    cert = Certifier(Words.load(), TABLE)
    cup = SceneObject("1", "cup", 10, 10, 20, 20)
    near_trees = PathNode("cup", relations=(PathEdge("near", PathNode("trees")),))
    assert cert.nothing(near_trees, _graph(cup)) is not None
    assert cert.nothing(PathNode("grass"), _graph(cup)) is not None
    near_dog = PathNode("cup", relations=(PathEdge("near", PathNode("dog")),))
    assert cert.nothing(near_dog, _graph(cup)) is None
