"""Bad input never escapes the run folder and never sinks the run: unusable image ids are
rejected at ingest with their reason, usable but odd ids name their files through `safe_name`, a
truncated JPEG is rejected, and no reject line is written twice."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from PIL import Image

from hardneg.backends.language import Answer, ReplaceRequest
from hardneg.core.config import load_config
from hardneg.core.demo.world import build_demo_world
from hardneg.core.gqa.ingest import check_image
from hardneg.core.ids import safe_name
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.splits import SPLITS
from hardneg.exports.stats import rejects_summary
from hardneg.flows.pipeline import run_local
from hardneg.generators.text.sites import SearchState, Site, SiteSearch
from tests.helpers import positive_row

# A tiny world; every image in the test split, so every kept image may get image negatives.
TINY = {"demo": {"n_scenes": 6}, "images": {"candidates": 1}, "splits": {"train": 0.0, "val": 0.0, "test": 1.0}}
ODD_IDS = ["Weird Id ü", "x" * 150, "UPPER.case"]  # usable: GQA would name their files so
BAD_IDS = ["../../escape2", "/tmp/hardneg-abs-escape", "a/b", "x\ny", "7" * 300, "", "..", "lone\ud800"]


def snapshot(folder: Path, skip: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` but those under `skip`: name -> (size, mtime)."""
    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and skip not in p.parents:
            st = p.stat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def write_graphs(path: Path, graphs: list[tuple[str, Any]]) -> None:
    """A scene-graph file with exactly these members (keys JSON-escaped by Python, so a lone surrogate
    is written as the escape `\\ud800`, which a real file may hold)."""
    members = [json.dumps(k).encode() + b": " + orjson.dumps(g) for k, g in graphs]
    path.write_bytes(b"{" + b",\n".join(members) + b"}")


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """A run over the demo world with three images renamed to odd ids and copies under unusable ids."""
    base = tmp_path_factory.mktemp("odd")
    world = build_demo_world(base / "world", n_scenes=6, seed=0)
    graphs = orjson.loads(world.scene_graphs.read_bytes())
    ids = sorted(graphs)
    renamed = dict(zip(ODD_IDS, ids[: len(ODD_IDS)], strict=True))  # new id -> demo id
    images = base / "in" / "images"  # so that "../../escape2" would read base/escape2.jpg
    images.mkdir(parents=True)
    members: list[tuple[str, Any]] = []
    for old in ids[len(ODD_IDS) :]:
        (images / f"{old}.jpg").write_bytes((world.images / f"{old}.jpg").read_bytes())
        members.append((old, graphs[old]))
    for new, old in renamed.items():
        (images / f"{new}.jpg").write_bytes((world.images / f"{old}.jpg").read_bytes())
        members.append((new, graphs[old]))
    for bad in BAD_IDS:
        members.append((bad, graphs[ids[-1]]))
    # An attacker's files where the traversal ids would read from: they must never be read or touched.
    (base / "escape2.jpg").write_bytes((world.images / f"{ids[-1]}.jpg").read_bytes())
    write_graphs(base / "sceneGraphs.json", members)
    run = base / "out" / "run"
    before = snapshot(base, run)
    cfg = load_config(None, {**TINY, "inputs": {"scene_graphs": str(base / "sceneGraphs.json"), "images": str(images)}})
    run_local(cfg, run)
    assert snapshot(base, run) == before, "the run wrote or changed files outside its folder"
    assert not list(Path("/tmp").glob("hardneg-abs-escape*"))
    return run, images, renamed


def _rejects(root: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (root / "rejects.jsonl").read_bytes().splitlines()]


def test_unusable_ids_are_rejected_at_ingest_with_their_reason(odd_run):
    run, _, _ = odd_run
    ingest = {r["image_id"]: r["reason"] for r in _rejects(run) if r["stage"] == "ingest"}
    assert set(ingest) == {b if b != "lone\ud800" else "lone\\ud800" for b in BAD_IDS}
    assert all("image id" in why for why in ingest.values()), ingest


def test_odd_but_usable_ids_are_kept_and_their_files_named_safely(odd_run):
    run, _, renamed = odd_run
    positives = [r for s in SPLITS for r in orjson.loads((run / "splits" / s / "positive.json").read_bytes())]
    assert set(renamed) <= {r["image_id"] for r in positives}  # the real ids, kept in the records
    negatives = [r for s in SPLITS for r in orjson.loads((run / "splits" / s / "negative.json").read_bytes())]
    image_negs = [r for r in negatives if r["negative_cate"] == "image"]
    odd = [r for r in image_negs if r["source_image_id"] in renamed]
    assert odd, "no image negative of an odd id to check"
    for r in image_negs:
        name = Path(r["file_name"])
        assert name.parent == Path("images") and name.name.startswith(safe_name(r["source_image_id"]) + "_")
        assert (run / r["file_name"]).is_file()
    for f in (run / "images").iterdir():
        assert len(f.name.encode()) <= 100 and f.name.isascii(), f.name
    coco = orjson.loads((run / "splits" / "test" / "coco.json").read_bytes())
    originals = {e["original_id"] for e in coco["images"]}
    assert set(renamed) <= originals


def test_a_truncated_jpeg_is_rejected(tmp_path: Path):
    rng = __import__("numpy").random.default_rng(0)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (96, 128, 3), dtype="uint8")).save(buf, "JPEG", quality=90)
    data = buf.getvalue()
    (tmp_path / "1.jpg").write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "2.jpg").write_bytes(data)
    assert "truncated" in (check_image(tmp_path, SceneGraph("1", 128, 96, {})) or "")
    assert check_image(tmp_path, SceneGraph("2", 128, 96, {})) is None
    assert "missing" in (check_image(tmp_path, SceneGraph("3", 128, 96, {})) or "")
    os.mkdir(tmp_path / "4.jpg")
    assert "missing" in (check_image(tmp_path, SceneGraph("4", 128, 96, {})) or "")


class _Unanswerable(SiteSearch[SearchState]):
    """Every replace request fails: each site tried leaves one reject."""

    def request(self, st: SearchState, site: Site) -> ReplaceRequest:
        return ReplaceRequest(f"{site.nodes}:{site.edge}", "e", "relation", site.word or "", "spatial", ("x",), 5)

    def check(self, st, site, values):
        return "never"

    def accept(self, st, site, values):
        return False


class _NoAnswers:
    def replace(self, requests, validate):
        return [Answer(r.key, None, "semantic: every replacement still matches an object") for r in requests]


def test_two_sites_that_differ_only_in_where_leave_two_distinct_rejects():
    """The demo run's duplicate reject lines: two relations of one node with the same word
    failed alike, and their rejects did not say which relation they were about."""
    sites = [Site("replace_relation", 1, (0,), word="to the left of", edge=e, category="spatial") for e in (0, 1)]
    search = _Unanswerable(_NoAnswers(), per_positive=1, max_rounds=2)  # type: ignore[arg-type]
    st = SearchState(positive_row(PathNode("cup"), id=7, image_id="1"), PathNode("cup"), iter(sites))
    search.run([st])
    lines = [orjson.dumps(r.to_json()) for r in search.rejects]
    assert len(lines) == 2 and len(set(lines)) == 2


# -- input that gives nothing to build on: a user error, exit 2, no folder -------------------------------

_ONE_TREE = {"width": 200, "height": 100, "objects": {"1": {"name": "tree", "x": 1, "y": 1, "w": 5, "h": 5}}}


@pytest.mark.parametrize(
    ("content", "says", "prefect"),
    [
        (b"{}", "hold no image", False),
        (b"", "empty file", False),
        (b'{"1": {"width": 200, "height": 100, "objects": {"1": {"name": "cup", ', "truncated", False),
        (b'{"1": {"width": -5, "height": 100, "objects": {}}}', "none of the 1 images", False),
        (orjson.dumps({"1": _ONE_TREE, "2": _ONE_TREE}), "no positive could be made from the 2 images", False),
        (b"{}", "hold no image", True),  # the Prefect flow runs the same stages: one case shows it
    ],
    ids=["no-images", "empty", "truncated", "all-rejected", "no-positive", "prefect-no-images"],
)
def test_input_with_nothing_to_build_on_is_one_line_exit_2_and_leaves_no_folder(
    tmp_path: Path, capsys, content: bytes, says: str, prefect: bool
):
    """Failed before: `{}` exited 0 with a dataset `load_dataset` cannot open; an empty or truncated file
    exited 2 but left a run folder (the lock and `work/`) behind."""
    from hardneg.cli import main

    graphs = tmp_path / "sceneGraphs.json"
    graphs.write_bytes(content)
    out = tmp_path / "outputs" / "run"
    args = ["run", "--scene-graphs", str(graphs), "--output", str(out), *([] if prefect else ["--no-prefect"])]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("hardneg: error: ") and says in err[-1], err
    assert not out.exists() and not any((tmp_path / "outputs").iterdir())


def test_an_unusable_rerun_into_an_earlier_run_leaves_that_run_whole(tmp_path: Path):
    """A folder that holds a finished run is not removed for a later bad input: its outputs stand."""
    from hardneg.cli import main

    run = tmp_path / "run"
    assert main(["run", "--no-prefect", "--config", str(_tiny_config(tmp_path)), "--output", str(run)]) == 0
    before = (run / "manifest.json").read_bytes()
    graphs = tmp_path / "sceneGraphs.json"
    graphs.write_bytes(b"{}")
    assert main(["run", "--no-prefect", "--scene-graphs", str(graphs), "--output", str(run)]) == 2
    assert (run / "manifest.json").read_bytes() == before


def _tiny_config(tmp_path: Path) -> Path:
    p = tmp_path / "tiny.yaml"
    p.write_text("demo: {n_scenes: 4}\nimages: {enabled: false}\n")
    return p


def test_the_rejects_counted_as_units_finish_are_what_rejects_jsonl_holds(odd_run):
    """The write stage sums the counts each unit's marker kept (`core/runner/reasons.py`) instead of parsing every
    reject again: the same counts, the same commonest reasons, ties in the same order."""
    run, _, _ = odd_run
    stats = orjson.loads((run / "stats.json").read_bytes())["rejects"]
    parsed = rejects_summary(run / "rejects.jsonl")
    assert stats == parsed and list(stats) == list(parsed)
    assert [list(v["reasons"]) for v in stats.values()] == [list(v["reasons"]) for v in parsed.values()]
    assert len(stats) >= 3  # ingest, and the generation stages after it
