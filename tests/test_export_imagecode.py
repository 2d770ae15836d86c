"""The ImageCoDe export: it is in ImageCoDe's own layout as its official scripts read it, its sets read
straight into `evaluation.imagecode` (an oracle scores 100, a blind model exactly chance), every edit
re-checks as false, a set holds one image per distinct edit, a source image gives at most
`max_sets_per_image` sets, and `hardneg split` re-makes the sets."""

from __future__ import annotations

import random
import re
import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.io import read_jsonl
from hardneg.core.records import PathNode
from hardneg.core.runner.folder import resolve_inputs, stored_config
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.evaluation.imagecode import imagecode_accuracy, prediction_accuracy, read_official
from hardneg.exports.imagecode import ImageCodeExport, choose, gather
from hardneg.flows.pipeline import resplit
from tests.export_run import EXPORT_RUN, export_run, graphs, records

TABLE = AttributeTable.load(None)
OPTS = ImageCodeExport.model_validate(EXPORT_RUN["exports"]["imagecode"])


@pytest.fixture(scope="module")
def sets() -> list[dict]:
    return records(export_run(), "imagecode")


def test_oracle_scores_100_and_blind_scores_chance(sets):
    assert len(sets) >= 3
    # a record plus a model's scores is what the metric reads (its `target`, `is_video` come along)
    oracle = [{**s, "scores": [float(i == s["target"]) for i in range(len(s["images"]))]} for s in sets]
    best = imagecode_accuracy(oracle)["all"]
    assert best["accuracy"] == 1.0 and best["count"] == len(sets)
    blind = imagecode_accuracy([{**s, "scores": [0.5] * len(s["images"])} for s in sets])["all"]
    chance = sum(1 / len(s["images"]) for s in sets) / len(sets)
    assert blind["accuracy"] == pytest.approx(chance) == pytest.approx(blind["chance"])
    first = imagecode_accuracy([{**s, "scores": [1.0] + [0.0] * (len(s["images"]) - 1)} for s in sets])["all"]
    assert first["accuracy"] < 1.0  # the original is not always first: the order is shuffled


# -- ImageCoDe's own layout, as its official scripts read it (written from its data description) ---------

OFFICIAL = {"train": "train_data.json", "val": "valid_data.json", "test": "test_data.json"}


def official_files(set_dir: Path) -> list[Path]:
    """What the official loaders do: glob the set's `*.jpg` and sort by the number after `img`; a
    description's key is a position in that list."""
    return sorted(set_dir.glob("*.jpg"), key=lambda x: int(str(x).split("/")[-1].split(".")[0][3:]))


def test_the_export_reads_as_the_official_scripts_read_imagecode(sets):
    root = export_run()
    folder = root / "imagecode"
    images = resolve_inputs(root, stored_config(root))[1]
    ours = {s["set"]: s for s in sets}
    described: dict[str, str] = {}
    for split, file in OFFICIAL.items():
        data = orjson.loads((folder / file).read_bytes())  # {set: {"k": description}}
        assert isinstance(data, dict)
        for name, texts in data.items():
            assert re.fullmatch(r"hardneg-open-images_[0-9a-f]{13}", name)  # one form: it tells no order
            files = official_files(folder / "image-sets" / name)
            assert [f.name for f in files] == [f"img{k}.jpg" for k in range(len(files))]  # file k is position k
            assert isinstance(texts, dict) and len(texts) == 1
            (k, text), s = next(iter(texts.items())), ours[name]
            assert isinstance(k, str) and k.isdigit() and 0 <= int(k) < len(files) and isinstance(text, str)
            assert files[int(k)].read_bytes() == (images / f"{s['image_id']}.jpg").read_bytes()  # the original
            assert (text, s["split"], len(files)) == (s["description"], split, len(s["images"]))
            assert [f.relative_to(root).as_posix() for f in files] == s["images"]
            described[name] = split
    assert described.keys() == ours.keys() == {d.name for d in (folder / "image-sets").iterdir()}
    test = orjson.loads((folder / "test_data.json").read_bytes())
    unlabeled = orjson.loads((folder / "test_data_unlabeled.json").read_bytes())  # {set: [description]}
    assert unlabeled == {name: list(texts.values()) for name, texts in test.items()}
    summary = orjson.loads((folder / "summary.json").read_bytes())
    assert summary["version"] == "imagecode@v3" and summary["official"]["val"] == "valid_data.json"


def test_leaderboard_predictions_on_the_official_layout_score_as_known(sets):
    rows = [r for split in OFFICIAL for r in read_official(export_run() / "imagecode", split)]
    assert len(rows) == len(sets) and all(r["is_video"] is False for r in rows)
    right = {r["set"]: [r["target"]] for r in rows}
    assert prediction_accuracy(right, rows)["static"]["accuracy"] == 1.0
    wrong = {r["set"]: [(r["target"] + 1) % len(r["images"])] for r in rows}
    assert prediction_accuracy(wrong, rows)["all"]["accuracy"] == 0.0
    rng = random.Random(0)
    picks = [prediction_accuracy({r["set"]: [rng.randrange(len(r["images"]))] for r in rows}, rows) for _ in range(400)]
    chance = picks[0]["all"]["chance"]
    assert sum(p["all"]["accuracy"] for p in picks) / len(picks) == pytest.approx(chance, abs=0.05)


def test_every_set_holds_the_original_and_edits_that_make_the_expression_false(sets):
    root = export_run()
    g = graphs(root)
    images = resolve_inputs(root, stored_config(root))[1]
    splits = stored_config(root).splits
    decisions = {d["id"]: d for d in read_jsonl(root / "work" / "decide" / "negatives-all.jsonl")}
    negatives = {}
    for f in (root / "work" / "images").glob("image-negatives-*.jsonl"):
        negatives.update({r["id"]: r for r in read_jsonl(f)})
    assert max(Counter(s["image_id"] for s in sets).values()) <= OPTS.max_sets_per_image
    for s in sets:
        assert OPTS.min_edits <= len(s["edits"]) <= OPTS.edits and len(s["images"]) == len(s["edits"]) + 1
        assert len(set(s["images"])) == len(s["images"])
        assert s["split"] == split_of(s["image_id"], splits) and s["description"]
        original = (root / s["images"][s["target"]]).read_bytes()
        assert original == (images / f"{s['image_id']}.jpg").read_bytes()
        path = PathNode.from_json(s["path"]).without_ids()
        assert execute(path, GraphIndex(g[s["image_id"]], TABLE))  # true of the original
        assert sorted([s["target"]] + [e["index"] for e in s["edits"]]) == list(range(len(s["images"])))
        edits = set()
        for e in s["edits"]:
            n, d = negatives[e["negative_id"]], decisions[e["negative_id"]]
            assert d["keep"] and n["candidates"].index(e["candidate"]) == d["candidate"]  # the chosen one
            assert d["candidate"] in d.get("passed", [d["candidate"]])  # which every filter kept
            assert n["source_image_id"] == s["image_id"] and n["edit"] == e["edit"]
            assert not execute(path, GraphIndex(apply_edit(g[s["image_id"]], e["edit"]), TABLE))
            assert (root / s["images"][e["index"]]).read_bytes() == (root / e["candidate"]).read_bytes()
            edits.add(orjson.dumps(e["edit"], option=orjson.OPT_SORT_KEYS))
        assert len(edits) == len(s["edits"]) == len({e["negative_id"] for e in s["edits"]})  # one image an edit


def test_split_remakes_the_sets_without_new_samples(tmp_path):
    root = tmp_path / "run"
    shutil.copytree(export_run(), root)
    before = len(records(root, "imagecode"))
    resplit(root, {"exports": {"imagecode": {"edits": 1, "min_edits": 1}, "tricd": {"distractors": 0}}})
    after = records(root, "imagecode")
    assert len(after) >= before and all(len(s["images"]) == 2 for s in after)
    assert not [p for p in records(root, "tricd") if p.get("negative") == "distractor"]
    assert "imagecode" in (root / "stats.md").read_text() and "imagecode" in (root / "report.html").read_text()


# -- choosing the edits and the sets (direct, no run) -----------------------------------------------


def _neg(nid: int, pid: int, edit: dict, candidates: int = 3, image: str = "img") -> dict:
    """An image negative as `kept_image_negatives` gives it: `passed` holds near-identical variants."""
    passed = [f"images/cand/{nid}_{k}.jpg" for k in range(candidates)]
    return {"id": nid, "positive_id": pid, "edit": edit, "source_image_id": image, "negative_type": "attribute",
            "passed": passed, "chosen": passed[0]}  # fmt: skip


def test_a_set_takes_one_image_per_distinct_edit():
    p = {"id": 1, "image_id": "img"}
    negs = [_neg(10 + k, 1, {"op": "recolor", "object": k}) for k in range(4)]
    negs.append(_neg(20, 2, {"op": "recolor", "object": 0}))  # another positive's flip of the same edit
    pool = gather(p, negs, {(1, n["id"]): True for n in negs})
    ids = [n["id"] for n, _ in pool]
    edits = [orjson.dumps(n["edit"], option=orjson.OPT_SORT_KEYS) for n, _ in pool]
    assert len(set(ids)) == len(ids) and len(set(edits)) == len(edits) == 4
    assert all(cand == n["passed"][0] for n, cand in pool)  # the decide stage's best, never a variant


def _pools(image_edits: dict[str, list[int]]) -> list[tuple[dict, list]]:
    """Positives with their distinct edits, as `gather` gives them: per image, one positive per count."""
    pools, nid = [], 100
    for image, counts in image_edits.items():
        for count in counts:
            nid += 100
            p = {"id": nid, "image_id": image}
            pools.append((p, [(_neg(nid + k, nid, {"k": k}, 1, image), f"c{nid + k}") for k in range(count)]))
    return pools


def test_a_positive_with_fewer_than_min_edits_gets_no_set():
    opts = ImageCodeExport(edits=9, min_edits=5)
    chosen, dropped = choose(_pools({"a": [4], "b": [5], "c": [12]}), opts, 0)
    assert [(p["image_id"], len(pool)) for p, pool in chosen] == [("b", 5), ("c", 9)]  # at most `edits`
    assert [(p["image_id"], stat) for p, stat, _ in dropped] == [("a", "positives_with_too_few_edits")]
    assert "a set needs 5" in dropped[0][2]


def test_one_source_image_gives_at_most_max_sets_per_image_sets_the_same_on_every_run():
    pools = _pools({"a": [6, 9, 7, 9, 9, 3], "b": [5, 5]})
    for cap in (1, 2):
        opts = ImageCodeExport(min_edits=5, max_sets_per_image=cap)
        chosen, dropped = choose(pools, opts, 7)
        per_image = Counter(p["image_id"] for p, _ in chosen)
        assert per_image == {"a": cap, "b": cap}
        assert all(len(pool) == 9 for p, pool in chosen if p["image_id"] == "a")  # the fullest sets first
        over = [p for p, stat, _ in dropped if stat == "positives_over_image_cap"]
        assert len(over) == 5 - cap + 2 - cap and len(dropped) == len(over) + 1  # and the one with 3 edits
        # the same choice whatever the order the positives come in, and on a rerun
        again, _ = choose(pools[::-1], opts, 7)
        assert {p["id"] for p, _ in again} == {p["id"] for p, _ in chosen}
    # ties are broken by the seed, not by the order: some seed picks another of the three full sets
    picks = {next(p["id"] for p, _ in choose(pools, ImageCodeExport(), seed)[0] if p["image_id"] == "a")
             for seed in range(20)}  # fmt: skip
    assert len(picks) > 1


def test_min_edits_is_checked_against_edits():
    assert ImageCodeExport().min_edits == 5 and ImageCodeExport().max_sets_per_image == 1
    assert ImageCodeExport(edits=3).min_edits == 3  # a small set size alone needs no minimum of its own
    with pytest.raises(ValidationError, match="min_edits"):
        ImageCodeExport(edits=3, min_edits=5)


def test_the_export_and_the_metrics_name_the_official_layout_alike():
    from hardneg.evaluation import imagecode as metrics
    from hardneg.exports import imagecode as export

    for name in ("OFFICIAL_FILES", "UNLABELED_FILE", "IMAGE_SETS", "STATIC_MARK"):
        assert getattr(export, name) == getattr(metrics, name), name


def test_every_split_of_an_export_table_has_one_schema_even_when_empty(tmp_path):
    # empty splits were 0-row, 0-column parquet files and the column order followed each split's records
    import pandas as pd
    import pyarrow.parquet as pq

    from hardneg.exports.common import ExportFolder

    folder = ExportFolder(tmp_path, "shape")
    folder.reset()
    folder.write_tables(
        {"train": [{"id": 1, "b": "x", "n": {"k": 1}}], "val": [{"n": {"k": 2}, "id": 2, "c": 0.5}], "test": []}
    )
    frames = {s: pd.read_parquet(folder.dir / f"{s}.parquet") for s in ("train", "val", "test")}
    assert {s: list(f.columns) for s, f in frames.items()} == {s: ["id", "b", "n", "c"] for s in frames}
    assert len(frames["test"]) == 0 and pq.ParquetFile(folder.dir / "test.parquet").metadata.num_row_groups == 0
    assert frames["val"]["n"][0] == '{"k":2}' and frames["train"]["c"].isna().all()
    assert (folder.dir / "test.json").read_text() == "[]\n"
