"""End to end on the demo world: the run folder re-checks from what is on disk alone."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.gqa.loader import load_graphs
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.records import PathNode
from hardneg.core.rows import PATHS_POSITIVES, SELECT_KEPT
from hardneg.core.runner.stage import Run
from hardneg.core.splits import SPLITS
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.flows.pipeline import STAGES, run_local
from hardneg.generators.paths.stage import path_level, path_type
from tests.runs import NO_IMAGES, shared_run

ALL_TYPES = {"0_hop", "1_hop", "and", "2_hop", "same_attr", "same_attr_2hop"}


@pytest.fixture(scope="module")
def demo_run() -> Path:
    return shared_run(NO_IMAGES)


def _positives(root: Path) -> list[dict]:
    return [r for s in SPLITS for r in orjson.loads((root / "splits" / s / "positive.json").read_bytes())]


def _graphs_from_disk(root: Path) -> tuple[dict, AttributeTable]:
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    table = AttributeTable.from_json(orjson.loads((root / "attribute_categories.json").read_bytes()))
    graphs = {c.image_id: c.graph for c in load_graphs(root / manifest["inputs"]["scene_graphs"])}
    return graphs, table


def test_every_positive_re_executes_to_exactly_its_target(demo_run: Path):
    graphs, table = _graphs_from_disk(demo_run)
    rows = _positives(demo_run)
    assert len(rows) > 100
    for r in rows:
        path = PathNode.from_json(r["path"])
        index = GraphIndex(graphs[r["image_id"]], table)
        assert execute(path, index) == {r["objects_id"][0]}, r["expression"]
        assert path.id == r["objects_id"][0]
        target = graphs[r["image_id"]].objects[path.id]
        assert r["bbox"] == list(target.box)
        assert r["distractors"] == index.name_count(target.name) - 1


def test_levels_and_types_recompute_from_the_written_path(demo_run: Path):
    graphs, table = _graphs_from_disk(demo_run)
    for r in _positives(demo_run):
        path = PathNode.from_json(r["path"])
        index = GraphIndex(graphs[r["image_id"]], table)
        assert path_level(path, index) == r["level"], r["expression"]
        assert path_type(path) == r["tuple_type"]
        assert (r["level"] == 1) == (r["distractors"] == 0)


def test_no_emitted_hop_is_degenerate(demo_run: Path):
    """Above level 1, dropping any relation or same edge (anywhere in the path) must break uniqueness."""
    graphs, table = _graphs_from_disk(demo_run)

    def without_each_edge(n: PathNode):
        for i in range(len(n.relations)):
            yield PathNode(n.name, n.attributes, n.relations[:i] + n.relations[i + 1 :], n.same, n.id)
        for i in range(len(n.same)):
            yield PathNode(n.name, n.attributes, n.relations, n.same[:i] + n.same[i + 1 :], n.id)
        for i, e in enumerate(n.relations):
            for sub in without_each_edge(e.object):
                rels = list(n.relations)
                rels[i] = type(e)(e.name, sub)
                yield PathNode(n.name, n.attributes, tuple(rels), n.same, n.id)
        for i, s in enumerate(n.same):
            for sub in without_each_edge(s.object):
                same = list(n.same)
                same[i] = type(s)(s.category, sub)
                yield PathNode(n.name, n.attributes, n.relations, tuple(same), n.id)

    checked = 0
    for r in _positives(demo_run):
        if r["level"] == 1:
            continue
        path = PathNode.from_json(r["path"])
        index = GraphIndex(graphs[r["image_id"]], table)
        for smaller in without_each_edge(path):
            assert len(execute(smaller, index)) > 1, (r["expression"], smaller)
            checked += 1
    assert checked > 20


def test_demo_covers_every_type_and_level(demo_run: Path):
    rows = _positives(demo_run)
    by_type = Counter(r["tuple_type"] for r in rows)
    assert set(by_type) == ALL_TYPES
    assert min(by_type.values()) >= 12, by_type
    assert {r["level"] for r in rows} == {1, 2, 3}
    # One edge that alone decides (L2) leaves any second hop degenerate, so these never occur.
    assert not [r for r in rows if r["level"] == 2 and r["tuple_type"] in {"and", "2_hop", "same_attr_2hop"}]


def test_positive_records_carry_the_vanilla_keys(demo_run: Path):
    keys = {
        "id",
        "image_id",
        "objects_id",
        "tuple",
        "tuple_type",
        "level",
        "spatial",
        "attribute",
        "expression",
        "path",
    }
    rows = _positives(demo_run)
    assert all(keys <= set(r) for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["expression"] and r["expression"].startswith("the ") for r in rows)


def test_coco_files_load_with_pycocotools(demo_run: Path):
    from pycocotools.coco import COCO

    for s in SPLITS:
        positives = orjson.loads((demo_run / "splits" / s / "positive.json").read_bytes())
        negatives = orjson.loads((demo_run / "splits" / s / "negative.json").read_bytes())
        coco = COCO(str(demo_run / "splits" / s / "coco.json"))
        assert len(coco.imgs) == len(positives) + len(negatives) and positives and negatives
        for r in positives + negatives:
            ann_ids = coco.getAnnIds(imgIds=r["id"])
            assert len(ann_ids) == 1
            ann = coco.loadAnns(ann_ids)[0]
            img = coco.loadImgs(r["id"])[0]
            assert ann["bbox"] == r["bbox"] and ann["level"] == r["level"]
            # every file name is relative to the run folder: the dataset's copy of the source image
            assert img["caption"] == r["expression"] and (demo_run / img["file_name"]).is_file()
            if r.get("negative_cate") != "image":
                assert img["file_name"] == f"data/positives/{s}/images/{r['image_id']}.jpg"
            assert (img["width"], img["height"]) == (r["width"], r["height"])
            if "negative_type" in r:
                assert {k: ann[k] for k in ("negative_type", "negative_level", "positive_id", "negative_cate")} == {
                    k: r[k] for k in ("negative_type", "negative_level", "positive_id", "negative_cate")
                }
            else:
                assert "negative_type" not in ann


def test_splits_are_by_image(demo_run: Path):
    split_of_image: dict[str, str] = {}
    for s in SPLITS:
        for r in orjson.loads((demo_run / "splits" / s / "positive.json").read_bytes()):
            assert split_of_image.setdefault(r["image_id"], s) == s


def test_manifest_and_attribute_table(demo_run: Path):
    m = orjson.loads((demo_run / "manifest.json").read_bytes())
    # the demo's inputs live in the run folder: named relative to it, never by an absolute path
    assert m["inputs"]["scene_graphs"] == "inputs/demo/demo_sceneGraphs.json"
    assert m["inputs"]["images"] == "inputs/demo/images"
    assert (demo_run / m["inputs"]["scene_graphs"]).exists() and (demo_run / m["inputs"]["images"]).is_dir()
    assert m["versions"]["stages"]["paths"] == "paths@v12+balance@v1"
    assert m["versions"]["stages"]["images"] == "negatives_image@v5"
    assert m["versions"]["data"]["templates"] == "templates@v1"
    assert m["versions"]["data"]["prior"] == "prior-gqa@v3"  # the prior of real graphs the run added to its counts
    assert sum(m["counts"]["positives"].values()) == len(_positives(demo_run))
    assert m["counts"]["positives_kept"] + m["counts"]["balance_dropped"] == m["counts"]["positives_candidates"]
    table = orjson.loads((demo_run / "attribute_categories.json").read_bytes())
    assert "red" in table["categories"]["color"]


def test_rejects_say_why(demo_run: Path):
    rows = [orjson.loads(line) for line in (demo_run / "rejects.jsonl").read_bytes().splitlines()]
    stages = Counter(r["stage"] for r in rows)
    assert stages["targets"] > 0 and stages["balance"] > 0
    assert all(r["reason"] for r in rows)
    m = orjson.loads((demo_run / "manifest.json").read_bytes())
    assert stages["balance"] == m["counts"]["balance_dropped"]


def test_same_seed_gives_byte_identical_splits(demo_run: Path, tmp_path: Path):
    other = tmp_path / "again"
    run_local(load_config(None, NO_IMAGES), other)
    for s in SPLITS:
        for f in ("positive.json", "coco.json"):
            assert (demo_run / "splits" / s / f).read_bytes() == (other / "splits" / s / f).read_bytes()
    assert (demo_run / "rejects.jsonl").read_bytes() == (other / "rejects.jsonl").read_bytes()


def test_another_seed_changes_the_selection(demo_run: Path, tmp_path: Path):
    """The run resumed with another seed up to the select stage keeps other expressions (ids aside: they
    are seeded too)."""
    other = tmp_path / "seed7"
    shutil.copytree(demo_run, other)
    cfg = load_config(None, {**NO_IMAGES, "seed": 7})
    upto = STAGES[: [s.name for s in STAGES].index("select") + 1]
    prepare_run(cfg, other)
    run = Run(other, cfg, upto)
    for name in run.order:
        run.run_stage(name)

    def kept(run: Run) -> set[tuple[str, str]]:
        ids = {r.id for r in run.records_all(SELECT_KEPT)}
        return {(p.image_id, p.expression) for p in run.records_all(PATHS_POSITIVES) if p.id in ids}

    a, b = kept(Run(demo_run, load_config(None, NO_IMAGES), upto)), kept(Run(other, cfg, upto))
    assert a and b and a != b


def test_rerun_resumes_without_redoing_or_duplicating(demo_run: Path, tmp_path: Path):
    root = tmp_path / "resume"
    shutil.copytree(demo_run, root)
    shards = sorted(p for p in (root / "work" / "paths").glob("positives-*.jsonl") if ".rejects" not in p.name)
    assert len(shards) >= 3  # the demo config shards 40 images by 16
    stamps = {p: p.stat().st_mtime_ns for p in shards}
    # Simulate a crash after the first shard: its output is gone, the others remain.
    shards[1].unlink()
    rejects_before = (root / "rejects.jsonl").read_bytes()
    run_local(load_config(None, NO_IMAGES), root)
    assert shards[1].exists()
    for p in shards:
        if p != shards[1]:
            assert p.stat().st_mtime_ns == stamps[p], f"{p.name} was redone"
    assert (root / "rejects.jsonl").read_bytes() == rejects_before
    for s in SPLITS:
        assert (root / "splits" / s / "positive.json").read_bytes() == (
            demo_run / "splits" / s / "positive.json"
        ).read_bytes()


def test_changed_config_redoes_the_stage(demo_run: Path, tmp_path: Path):
    root = tmp_path / "changed"
    shutil.copytree(demo_run, root)
    run_local(load_config(None, {**NO_IMAGES, "paths": {"types": ["0_hop", "1_hop"]}}), root)
    types = {r["tuple_type"] for r in _positives(root)}
    assert types == {"0_hop", "1_hop"}
