"""The run folder is a Hugging Face dataset: `datasets.load_dataset(run)` with no other argument gives
train/val/test positives, a `negatives` config holds text and image negatives in one schema, and images
decode from any working directory. Every test here fails on the code before the dataset was built (no
`data/`, no card: `load_dataset("json", ...)` on negative.json failed with a CastError)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import orjson
import pandas as pd
import pytest
import yaml

from hardneg.core.schema import to_record
from hardneg.exports.card import card
from hardneg.exports.dataset import NEGATIVE_COLUMNS, POSITIVE_COLUMNS, DatasetFiles
from hardneg.exports.published import PublishedImageNegative, PublishedPositive, PublishedTextNegative
from tests.runs import small_run

datasets = pytest.importorskip("datasets")


@pytest.fixture
def hf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`datasets.load_dataset` with a fresh cache, called from a working directory that is not the run's."""
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return datasets.load_dataset


def _vanilla(run: Path, split: str, kind: str) -> list[dict]:
    return orjson.loads((run / "splits" / split / f"{kind}.json").read_bytes())


def test_load_dataset_with_no_argument_gives_train_val_test_positives_with_images(hf):
    run = small_run()
    ds = hf(str(run))
    assert list(ds) == ["train", "val", "test"]
    for split in ds:
        rows = _vanilla(run, split, "positive")
        assert ds[split].num_rows == len(rows) > 0
        first = ds[split][0]
        assert first["id"] == rows[0]["id"] and first["expression"] == rows[0]["expression"]
        assert first["image"].size == (rows[0]["width"], rows[0]["height"])  # decoded from the run folder
        assert orjson.loads(first["path"]) == rows[0]["path"]
    assert isinstance(ds["train"].features["image"], datasets.Image)


def test_negatives_share_one_schema_whether_a_split_has_image_negatives_or_not(hf):
    run = small_run()
    ds = hf(str(run), "negatives")
    assert not any(r["negative_cate"] == "image" for r in _vanilla(run, "train", "negative"))
    assert ds["train"].features == ds["test"].features
    image_rows = [r for r in ds["test"] if r["negative_cate"] == "image"]
    text_rows = [r for r in ds["test"] if r["negative_cate"] == "text"]
    assert image_rows and text_rows
    for r in image_rows:
        assert r["image"].size == (r["width"], r["height"]) and r["source_image"] is not None
        assert orjson.loads(r["edit"])["op"] and r["candidate"] in r["candidates"]
    for r in text_rows:
        assert r["source_image"] is None and r["edit"] is None and orjson.loads(r["change"]) is not None


def test_parquet_tables_have_the_fixed_schema_and_no_unknown_fields():
    run = small_run()
    for config, columns in (("positives", POSITIVE_COLUMNS), ("negatives", NEGATIVE_COLUMNS)):
        for split in ("train", "val", "test"):
            df = pd.read_parquet(run / "data" / config / split / "metadata.parquet")
            assert list(df.columns) == [c for c, _, _ in columns]
            assert len(df) == len(_vanilla(run, split, config[:-1]))
            # a field the schema lacks lands in `extra`: a new record field must get its own column
            assert df["extra"].isna().all(), df["extra"].dropna().head().tolist()


def test_images_are_links_into_the_run_photo_store_and_coco_file_names_are_relative_to_the_run_folder():
    run = small_run()
    for split in ("train", "val", "test"):
        coco = orjson.loads((run / "splits" / split / "coco.json").read_bytes())
        assert coco["info"]["file_names"] == "relative to the run folder"
        assert all((run / i["file_name"]).is_file() for i in coco["images"])
        assert "image_root" not in coco["images"][0]
    linked = next((run / "data" / "positives" / "train" / "images").iterdir())
    kept = run / "work" / "ingest" / "photos" / linked.name  # the run's own copy of the input
    source = run / "inputs" / "demo" / "images" / linked.name
    assert linked.samefile(kept) and not linked.samefile(source)  # one file in the run, none shared with an input
    assert kept.read_bytes() == source.read_bytes()


def test_the_card_declares_configs_splits_features_and_the_source_license():
    run = small_run()
    text = (run / "README.md").read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    # the demo world is drawn by hardneg: neither Visual Genome's images nor its licence (the card said so)
    assert header["license"] == "apache-2.0" and "CC BY" not in text and "Visual Genome" not in text
    assert "Apache License 2.0" in text  # hardneg's own license (its LICENSE file): before, "own terms" and no file
    assert "drawn by hardneg" in text and str(run) not in text and "/tmp" not in text  # no absolute paths
    configs = {c["config_name"]: c for c in header["configs"]}
    assert configs["positives"]["default"] is True and "default" not in configs["negatives"]
    manifest = orjson.loads((run / "manifest.json").read_bytes())
    info = {i["config_name"]: i for i in header["dataset_info"]}
    assert {s["name"]: s["num_examples"] for s in info["positives"]["splits"]} == manifest["counts"]["positives"]
    assert {s["name"]: s["num_examples"] for s in info["negatives"]["splits"]} == manifest["counts"]["negatives"]
    assert {"name": "image", "dtype": "image"} in info["negatives"]["features"]
    assert "Positives per split and level" in text  # the stats tables


def test_a_card_of_gqa_data_carries_gqas_licence_and_names_its_inputs_without_their_folders(tmp_path: Path):
    root = tmp_path / "gqa-val"
    root.mkdir()
    summary = {"rows": {"positives": {"val": 2}, "negatives": {"val": 1}}, "has_images": True, "images": {},
               "bytes": {"positives": {"val": 10}, "negatives": {"val": 10}}}  # fmt: skip
    manifest = {"config": {"inputs": {"scene_graphs": "/data/gqa/val_sceneGraphs.json"}},
                "inputs": {"scene_graphs": "/data/gqa/val_sceneGraphs.json", "images": "/data/gqa/images"}}  # fmt: skip
    text = card(root, summary, manifest, "")
    assert yaml.safe_load(text.split("---\n")[1])["license"] == "cc-by-4.0" and "CC BY 4.0" in text
    assert "`val_sceneGraphs.json`" in text and "/data/gqa" not in text and str(tmp_path) not in text


def _fake_run(tmp_path: Path, with_images: bool) -> tuple[Path, Path | None]:
    """A run folder holding a few of the small run's records: train and test, no val."""
    src = small_run()
    root = tmp_path / "run"
    for split in ("train", "test"):
        d = root / "splits" / split
        d.mkdir(parents=True)
        for kind in ("positive", "negative"):
            rows = [r for r in _vanilla(src, split, kind) if r.get("negative_cate") != "image"][:3]
            (d / f"{kind}.json").write_bytes(orjson.dumps(rows))
    return root, (src / "inputs" / "demo" / "images" if with_images else None)


def write_dataset(root: Path, images: Path | None) -> dict:
    """`data/` of the run's split files, written as the write stage writes it: from the published samples."""
    files = DatasetFiles(root, images)
    for split in sorted(p.name for p in (root / "splits").iterdir()):
        for r in _vanilla(root, split, "positive"):
            files.add(to_record(r, PublishedPositive), split)
        for r in _vanilla(root, split, "negative"):
            kind = PublishedImageNegative if r["negative_cate"] == "image" else PublishedTextNegative
            files.add(to_record(r, kind), split)
    return files.close()


def test_images_on_another_file_system_are_copied_and_the_card_says_so(tmp_path: Path, monkeypatch, hf):
    root, images = _fake_run(tmp_path, with_images=True)

    real_link = os.link

    def link(src, dst, *a, **k):  # the input images are on another file system; the run's own files are not
        if str(images) in str(src):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    summary = write_dataset(root, images)
    (root / "README.md").write_text(card(root, summary, {}, ""))
    assert summary["images"]["copied"] > 0 and summary["rows"]["positives"] == {"train": 3, "test": 3}
    assert f"{summary['images']['copied']} copies" in (root / "README.md").read_text()
    ds = hf(str(root))
    assert list(ds) == ["train", "test"]  # an empty split is left out, not a load error
    assert ds["test"][0]["image"] is not None


def test_a_run_without_images_still_loads_with_null_file_names(tmp_path: Path, hf):
    root, _ = _fake_run(tmp_path, with_images=False)
    summary = write_dataset(root, None)
    (root / "README.md").write_text(card(root, summary, {}, ""))
    ds = hf(str(root), "negatives")
    assert ds["train"].num_rows == 3 and ds["train"][0]["file_name"] is None
    assert not (root / "data" / "positives" / "train" / "images").exists()


def test_rewriting_replaces_the_dataset_and_leaves_no_staging_folder(tmp_path: Path):
    root, images = _fake_run(tmp_path, with_images=True)
    write_dataset(root, images)
    (root / "splits" / "test" / "negative.json").write_bytes(b"[]")
    summary = write_dataset(root, images)
    assert "test" not in summary["rows"]["negatives"] and not (root / "data" / "negatives" / "test").exists()
    assert sorted(p.name for p in root.iterdir()) == ["data", "splits"]


def test_a_run_without_rows_still_declares_its_data_so_no_loader_reads_the_coco_files_instead():
    from hardneg.exports.card import card_header

    empty = {"rows": {"positives": {}, "negatives": {}}, "has_images": False, "bytes": {}}
    configs = card_header(empty, "empty")["configs"]
    assert configs and configs[0]["config_name"] == "positives"  # it was `configs: []`
    assert {f["path"] for f in configs[0]["data_files"]} == {f"data/positives/{s}/metadata.parquet" for s in
                                                              ("train", "val", "test")}  # fmt: skip
