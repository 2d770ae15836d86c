"""The maintainer's whole path on real photos, as a maintainer walks it: `hardneg run` on the eight real photos
(`tests/data/photos8`) with `--images`, through Prefect with process workers, offline backends; labels
through the review app's HTTP API; `hardneg split` twice; `datasets.load_dataset` on the folder; the report
in Chromium without a console error. (A scheduled run on the same photos through a real Prefect server is
in `tests/test_prefect_server.py`.) Before this path was tested, every split of a run made with `--images`
was refused, and the demo world hid it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from hardneg.review.server import ReviewServer
from tests.helpers import PHOTOS
from tests.test_review_browser import browser  # noqa: F401  (the fixture: Chromium, or a clean skip)

pytestmark = pytest.mark.slow
HARDNEG = Path(sys.executable).parent / "hardneg"
# what a Hub upload of the run folder takes: everything but the run's private parts
PRIVATE = {"work", "inputs"}


def _hardneg(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PREFECT_HOME": str(cwd / "prefect"), "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(cwd / "res")}
    env.pop("PREFECT_API_URL", None)  # Prefect's own temporary server, as a one-off run starts it
    return subprocess.run([str(HARDNEG), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _published(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] not in PRIVATE]


@pytest.fixture(scope="module")
def photo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    base = tmp_path_factory.mktemp("photos")
    (base / "process.yaml").write_text("task_runner: process\nworkers: 2\nshard_size: 4\nimages: {candidates: 2}\n")
    args = ["--scene-graphs", str(PHOTOS / "sceneGraphs.json"), "--images", str(PHOTOS / "images")]
    done = _hardneg("run", "--config", "process.yaml", "--output", "run", *args, cwd=base)
    assert done.returncode == 0, done.stderr[-3000:]
    return base / "run", done


def test_the_run_is_quiet_publishes_no_private_part_and_no_absolute_path(photo_run):
    """Failed before: with `task_runner: process`, every Prefect task's "Task run ... Finished" line
    reached the terminal; the lock file and the review store sat beside the published files; the manifest
    and the report named the inputs by absolute paths."""
    root, done = photo_run
    assert "Task run" not in done.stderr and " | INFO " not in done.stderr, done.stderr
    assert {line.split()[0] for line in done.stderr.splitlines() if line and line[0].isalpha()} >= {
        "ingest",
        "write",
        "report",
    }
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    assert manifest["counts"]["ingest"]["images_kept"] == 8
    assert manifest["inputs"]["scene_graphs"] == "sceneGraphs.json" and manifest["inputs"]["images"] == "images"
    files = _published(root)
    assert not [p for p in files if p.name in (".hardneg.lock", "review.sqlite")]
    for p in files:
        data = p.read_bytes()
        assert str(PHOTOS).encode() not in data and str(root).encode() not in data, p


def test_review_split_twice_load_and_report_on_real_photos(photo_run, browser, tmp_path: Path, monkeypatch):  # noqa: F811
    import shutil

    root = tmp_path / "run"
    shutil.copytree(photo_run[0], root)
    # a maintainer labels through the review app: its HTTP API, as the page does
    server = ReviewServer(root)
    server.start()
    try:
        with httpx.Client(base_url=server.url, headers={"X-Review-Token": server.token}) as c:
            ids = c.get("/api/queue", params={"annotator": "maria", "limit": "1000"}).json()["ids"]
            assert ids, "the real photos gave no level 2 or 3 item to review"
            for n, item_id in enumerate(ids[:6]):
                view = c.get(f"/api/items/{item_id}", params={"annotator": "maria"}).json()
                assert view["image"] and c.get(view["image"]).status_code == 200  # the run's own photo
                label = view["labels"][1 if n == 0 else 0]["label"]  # one sample dropped, the others kept
                body = {"item_id": item_id, "label": label, "annotator": "maria", "version": view["version"]}
                assert c.post("/api/decisions", json={**body, "view": view["view"]}).status_code == 200
    finally:
        server.stop()

    before = orjson.loads((root / "manifest.json").read_bytes())
    first = _hardneg("split", str(root), cwd=tmp_path)  # applies the labels
    assert first.returncode == 0, first.stderr
    after = orjson.loads((root / "manifest.json").read_bytes())
    assert after["review"]["items"] == 6 and after["review"]["dropping"] == 1
    assert sum(after["counts"]["positives"].values()) + sum(after["counts"]["negatives"].values()) < sum(
        before["counts"]["positives"].values()
    ) + sum(before["counts"]["negatives"].values())
    stricter = "negative_mix: {per_positive: 0.4, min_per_positive: 0.2}\nrisk: {max: 0.3}\n"
    (tmp_path / "stricter.yaml").write_text(stricter)
    second = _hardneg("split", str(root), "--config", "stricter.yaml", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "  negative_mix.per_positive: 1.0 -> 0.4" in second.stdout and "  risk.max: 0.6 -> 0.3" in second.stdout
    assert "tricd: positive pairs" in second.stdout  # the exports, beside the samples
    print(second.stdout)  # the before/after table, in the test log

    import datasets

    # a fresh cache: `datasets` keys its cache by the files' content, and an identical run folder loaded before
    # from elsewhere would hand back that folder's image paths
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    positives = datasets.load_dataset(str(root))
    negatives = datasets.load_dataset(str(root), "negatives")
    counts = orjson.loads((root / "manifest.json").read_bytes())["counts"]
    assert sum(positives[s].num_rows for s in positives) == sum(counts["positives"].values())
    assert sum(negatives[s].num_rows for s in negatives) == sum(counts["negatives"].values())
    some = next(iter(positives.values()))[0]
    assert some["image"].size == (some["width"], some["height"])

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    for f in [root / "report.html", *sorted((root / "report").glob("*.html"))]:
        page.goto(f.as_uri())
        page.wait_for_load_state("load")
    assert problems == []
    page.close()
