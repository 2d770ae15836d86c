"""The ImageCoDe export: sets of ten in ImageCoDe's own layout as its official scripts read it, read
straight into `evaluation.imagecode` (an oracle scores 100, a blind model exactly chance); every distractor
is false of the description (edits re-executed, corpus images certified on their graphs); a set holds one
image per distinct edit; a source image gives at most `max_sets_per_image` sets; a split without sets gets
no official file and says why; the pixels re-rank the graph's most alike images; `hardneg split` re-makes
the sets."""

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
from hardneg.core.gqa.run_inputs import resolve_inputs
from hardneg.core.io import read_jsonl
from hardneg.core.records import PathNode
from hardneg.core.rows import GraphRow, extended
from hardneg.core.runner.folder import stored_config
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.evaluation.imagecode import imagecode_accuracy, prediction_accuracy, read_official
from hardneg.exports.alike import Ranking, likeness, signature
from hardneg.exports.common import KeptImageNegative
from hardneg.exports.corpus import Corpus
from hardneg.exports.imagecode import SET_SIZE, ImageCodeExport, ImageSets, gather
from hardneg.flows.pipeline import resplit
from tests.export_run import EXPORT_RUN, certifier, export_run, graphs, records
from tests.helpers import image_negative_row, kept_positive

TABLE = AttributeTable.load(None)
OPTS = ImageCodeExport.model_validate(EXPORT_RUN["exports"]["imagecode"])
PHOTOS = Path(__file__).parent / "data" / "photos8"


@pytest.fixture(scope="module")
def sets() -> list[dict]:
    return records(export_run(), "imagecode")


def test_oracle_scores_100_and_blind_scores_chance(sets):
    assert len(sets) >= 3 and {len(s["images"]) for s in sets} == {SET_SIZE}
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
    summary = orjson.loads((folder / "summary.json").read_bytes())
    for split, file in OFFICIAL.items():
        if not any(s["split"] == split for s in sets):  # the scripts divide by the number of sets: no file
            assert not (folder / file).exists() and file not in summary["official"].values()
            assert any(n.startswith(f"{split}: no sets, so no `{file}`") for n in summary["notes"]), split
            continue
        data = orjson.loads((folder / file).read_bytes())  # {set: {"k": description}}
        assert isinstance(data, dict) and summary["official"][split] == file
        for name, texts in data.items():
            assert re.fullmatch(r"hardneg-open-images_[0-9a-f]{13}", name)  # one form: it tells no order
            files = official_files(folder / "image-sets" / name)
            assert [f.name for f in files] == [f"img{k}.jpg" for k in range(SET_SIZE)]  # file k is position k
            assert isinstance(texts, dict) and len(texts) == 1
            (k, text), s = next(iter(texts.items())), ours[name]
            assert isinstance(k, str) and k.isdigit() and 0 <= int(k) < len(files) and isinstance(text, str)
            assert files[int(k)].read_bytes() == (images / f"{s['image_id']}.jpg").read_bytes()  # the original
            assert (text, s["split"]) == (s["description"], split)
            assert [f.relative_to(root).as_posix() for f in files] == s["images"]
            described[name] = split
    assert described.keys() == ours.keys() == {d.name for d in (folder / "image-sets").iterdir()}
    if (folder / "test_data.json").exists():
        test = orjson.loads((folder / "test_data.json").read_bytes())
        unlabeled = orjson.loads((folder / "test_data_unlabeled.json").read_bytes())  # {set: [description]}
        assert unlabeled == {name: list(texts.values()) for name, texts in test.items()}
    assert summary["version"].startswith("imagecode@v5")


def test_leaderboard_predictions_on_the_official_layout_score_as_known(sets):
    folder = export_run() / "imagecode"
    rows = [r for split, f in OFFICIAL.items() if (folder / f).exists() for r in read_official(folder, split)]
    assert len(rows) == len(sets) and all(r["is_video"] is False for r in rows)
    right = {r["set"]: [r["target"]] for r in rows}
    assert prediction_accuracy(right, rows)["static"]["accuracy"] == 1.0
    wrong = {r["set"]: [(r["target"] + 1) % len(r["images"])] for r in rows}
    assert prediction_accuracy(wrong, rows)["all"]["accuracy"] == 0.0
    rng = random.Random(0)
    picks = [prediction_accuracy({r["set"]: [rng.randrange(len(r["images"]))] for r in rows}, rows) for _ in range(400)]
    chance = picks[0]["all"]["chance"]
    assert sum(p["all"]["accuracy"] for p in picks) / len(picks) == pytest.approx(chance, abs=0.05)


def test_every_set_holds_the_original_and_nine_distractors_false_of_the_description(sets):
    root = export_run()
    g = graphs(root)
    images = resolve_inputs(root, stored_config(root))[1]
    splits = stored_config(root).splits
    cert = certifier(root)
    decisions = {d["id"]: d for d in read_jsonl(root / "work" / "decide" / "negatives-all.jsonl")}
    negatives = {}
    for f in (root / "work" / "images").glob("image-negatives-*.jsonl"):
        negatives.update({r["id"]: r for r in read_jsonl(f)})
    assert max(Counter(s["image_id"] for s in sets).values()) <= OPTS.max_sets_per_image
    assert sum(len(s["distractors"]) for s in sets) > 0
    for s in sets:
        assert OPTS.min_edits <= len(s["edits"]) <= OPTS.edits and len(s["edits"]) + len(s["distractors"]) == 9
        assert len(set(s["images"])) == SET_SIZE
        assert s["split"] == split_of(s["image_id"], splits) and s["description"]
        original = (root / s["images"][s["target"]]).read_bytes()
        assert original == (images / f"{s['image_id']}.jpg").read_bytes()
        path = PathNode.from_json(s["path"]).without_ids()
        assert execute(path, GraphIndex(g[s["image_id"]], TABLE))  # true of the original
        at = [s["target"]] + [e["index"] for e in s["edits"]] + [d["index"] for d in s["distractors"]]
        assert sorted(at) == list(range(SET_SIZE))
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
        others = [d["image_id"] for d in s["distractors"]]
        assert len(set(others)) == len(others) and s["image_id"] not in others
        for d in s["distractors"]:  # a real image of the split in which the description certainly matches nothing
            j = d["image_id"]
            assert split_of(j, splits) == s["split"] and cert.nothing(path, g[j]) is None, (s["description"], j)
            assert (root / s["images"][d["index"]]).read_bytes() == (images / f"{j}.jpg").read_bytes()
            assert d["certificate"]["false"] == path.to_json()


def test_split_remakes_the_sets_without_new_samples(tmp_path):
    root = tmp_path / "run"
    shutil.copytree(export_run(), root)
    before = records(root, "imagecode")
    resplit(root, {"exports": {"imagecode": {"max_sets_per_image": 3}, "tricd": {"distractors": 0}}})
    after = records(root, "imagecode")
    assert len(after) > len(before) and all(len(s["images"]) == SET_SIZE for s in after)
    assert max(Counter(s["image_id"] for s in after).values()) > 1
    assert not [p for p in records(root, "tricd") if p.get("negative") == "distractor"]
    assert "imagecode" in (root / "stats.md").read_text() and "imagecode" in (root / "report.html").read_text()


# -- choosing the edits and the sets (direct, no run) -----------------------------------------------


def _neg(nid: int, pid: int, edit: dict, candidates: int = 3, image: str = "img") -> KeptImageNegative:
    """An image negative as `kept_image_negatives` gives it: `passed` holds near-identical variants."""
    passed = [f"images/cand/{nid}_{k}.jpg" for k in range(candidates)]
    row = image_negative_row(edit, id=nid, positive_id=pid, source_image_id=image, negative_type="attribute",
                             candidates=passed)  # fmt: skip
    return extended(row, KeptImageNegative, chosen=passed[0], passed=passed)


def test_a_set_takes_one_image_per_distinct_edit():
    p = kept_positive(id=1, image_id="img")
    negs = [_neg(10 + k, 1, {"op": "recolor", "object": k}) for k in range(4)]
    negs.append(_neg(20, 2, {"op": "recolor", "object": 0}))  # another positive's flip of the same edit
    pool = gather(p, negs, {(1, n.id): True for n in negs})
    ids = [n.id for n, _ in pool]
    edits = [orjson.dumps(n.edit, option=orjson.OPT_SORT_KEYS) for n, _ in pool]
    assert len(set(ids)) == len(ids) and len(set(edits)) == len(edits) == 4
    assert all(cand == n.passed[0] for n, cand in pool)  # the decide stage's best, never a variant


class _Checks:
    """GraphChecks for options whose tests need no graph: each test runs on `run()`, in the order added."""

    def __init__(self) -> None:
        self.todo: list = []

    def add(self, image_id: str, check) -> None:
        self.todo.append((image_id, check))

    def run(self) -> None:
        while self.todo:
            image_id, check = self.todo.pop(0)
            check(image_id, None)


def _sets(pools, opts, passing: set[str], ranked: list[str]) -> ImageSets:
    """An image's sets from `pools`, the corpus ranked as `ranked`, the images in `passing` certified."""
    checks = _Checks()
    search = ImageSets(pools, opts, lambda p: ranked, lambda p: lambda g, ix: g in passing, checks)  # type: ignore[arg-type]
    search.next()
    checks.run()
    return search


def _edits(n: int, image: str = "a") -> list:
    return [(_neg(1000 + k, 1, {"k": k}, 1, image), f"c{k}") for k in range(n)]


def test_a_set_is_the_edits_first_then_the_certified_corpus_images_in_rank_order():
    ranked = [f"j{k}" for k in range(12)]
    a = kept_positive(id=1, image_id="a")
    search = _sets([(a, _edits(3))], ImageCodeExport(), set(ranked) - {"j1", "j4"}, ranked)
    (made,) = search.made
    assert len(made.edits) == 3 and made.images == ["j0", "j2", "j3", "j5", "j6", "j7"]  # the first six that pass
    full = _sets([(kept_positive(id=2, image_id="a"), _edits(9))], ImageCodeExport(), set(), [])
    assert full.made[0].images == [] and not full.dropped  # nine edits need no corpus image


def test_a_positive_whose_set_cannot_be_filled_gets_none_and_the_next_is_tried():
    ranked = [f"j{k}" for k in range(7)]  # a small corpus: seven other images of the split
    pools = [(kept_positive(id=1, image_id="a"), _edits(1)), (kept_positive(id=2, image_id="a"), _edits(2)),
             (kept_positive(id=3, image_id="a"), _edits(2))]  # fmt: skip
    search = _sets(pools, ImageCodeExport(), set(ranked), ranked)
    assert [m.positive.id for m in search.made] == [2]  # 2 edits + 7 images; then the image is done
    assert [(p.id, stat) for p, stat, _ in search.dropped] == [
        (1, "positives_with_too_few_distractors"), (3, "positives_over_image_cap")]  # fmt: skip
    assert "8 of 9 distractors certified (1 edits, 7 of the 7 most alike" in search.dropped[0][2]
    strict = _sets(pools[1:], ImageCodeExport(min_edits=3), set(ranked), ranked)
    assert not strict.made and {stat for _, stat, _ in strict.dropped} == {"positives_with_too_few_edits"}
    two = _sets(pools, ImageCodeExport(max_sets_per_image=2), set(ranked), ranked)
    assert [m.positive.id for m in two.made] == [2, 3]


def test_min_edits_is_checked_against_edits():
    assert ImageCodeExport().min_edits == 0 and ImageCodeExport().edits == 9
    assert ImageCodeExport().max_sets_per_image == 1 and ImageCodeExport().pixels
    with pytest.raises(ValidationError, match="min_edits"):
        ImageCodeExport(edits=3, min_edits=5)
    with pytest.raises(ValidationError):
        ImageCodeExport(edits=10)  # a set holds ten images: nine distractors at most


# -- the pixels (real photos) ------------------------------------------------------------------------


def test_a_photo_is_most_like_itself_then_its_edits_then_other_photos(tmp_path):
    from PIL import Image, ImageEnhance

    src = PHOTOS / "images" / "2.jpg"
    darker = tmp_path / "darker.jpg"
    ImageEnhance.Brightness(Image.open(src)).enhance(0.8).save(darker)
    mine = signature(src)
    assert likeness(mine, signature(src)) == pytest.approx(1.0)
    near = likeness(mine, signature(darker))
    far = [likeness(mine, signature(PHOTOS / "images" / f"{i}.jpg")) for i in ("1339", "2331963", "2400861", "4")]
    assert near > max(far), (near, far)
    assert likeness(mine, signature(tmp_path / "missing.jpg")) == 0.0  # an unreadable photo is like nothing


def test_with_the_photos_the_graphs_most_alike_images_are_ordered_by_both_ranks():
    from hardneg.core.config import SplitsConfig

    raw = orjson.loads((PHOTOS / "sceneGraphs.json").read_bytes())
    index = Corpus.of_rows(
        (GraphRow(image_id=k, graph=v) for k, v in raw.items()), SplitsConfig(train=1, val=0, test=0)
    )
    p = kept_positive(PathNode("car"), id=7, image_id="2")
    opts = ImageCodeExport()
    by_graph = Ranking(index, opts, 0, None, {}).rank(p)
    assert sorted(by_graph) == sorted(set(raw) - {"2"})  # a small corpus: every other image of the split
    signatures: dict = {}
    both = Ranking(index, opts, 0, PHOTOS / "images", signatures).rank(p)
    assert sorted(both) == sorted(by_graph) and set(signatures) == set(raw)
    mine = signatures["2"]
    pixel_rank = {j: r for r, j in enumerate(sorted(by_graph, key=lambda j: (-likeness(mine, signatures[j]),
                                                                               by_graph.index(j))))}  # fmt: skip
    keys = [(by_graph.index(j) + pixel_rank[j], by_graph.index(j)) for j in both]
    assert keys == sorted(keys)


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
