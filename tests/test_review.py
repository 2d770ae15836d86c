"""The review package: the decision store, applying decisions, kappa, the queue order, the report, and
the review app over real HTTP (including hostile requests). The run folder is made once per session by
`hardneg run` on a small demo world (shared with test_review_browser.py)."""

from __future__ import annotations

import http.client
import json
import random
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import httpx
import orjson
import pytest
import yaml

from hardneg.cli import main
from hardneg.core.config import DEFAULT_CONFIG
from hardneg.core.errors import HardnegError
from hardneg.filters.human.agreement import cohen_kappa, pairwise
from hardneg.filters.human.apply import Label, Reviewable, apply_labels, decide, load_labels, summary
from hardneg.filters.human.labels import NEGATIVE_LABELS, POSITIVE_LABELS
from hardneg.filters.human.store import FILENAME, STORE, ReviewStore
from hardneg.review.priority import in_default_queue, priority_key, risk
from hardneg.review.report.gallery import reason_group
from hardneg.review.report.page import build_report
from hardneg.review.rundata import RunData
from hardneg.review.server import ReviewServer
from tests.runs import shared_folder

SMALL_DEMO = {"demo": {"n_scenes": 6}, "images": {"candidates": 2}}


def build_demo_run() -> Path:
    """`hardneg run` on a 6-scene demo world, once per test session (both review test files use it)."""
    return shared_folder("review-demo", _cli_run)


def _cli_run(run: Path) -> None:
    cfg = yaml.safe_load(Path(DEFAULT_CONFIG).read_text())
    for section, values in SMALL_DEMO.items():
        cfg.setdefault(section, {}).update(values)
    config = run.parent / "review_demo.yaml"
    config.write_text(yaml.safe_dump(cfg))
    assert main(["run", "--no-prefect", "--config", str(config), "--output", str(run)]) == 0


def copy_run(src: Path, dst: Path) -> Path:
    """A writable copy without the stage shards the app and the report never read (they read the stored
    graphs and the run's photos, `work/ingest/`)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("work", FILENAME + "*", "report*"))
    shutil.copytree(src / "work" / "ingest", dst / "work" / "ingest")
    return dst


@pytest.fixture(scope="session")
def demo_run() -> Path:
    return build_demo_run()


@pytest.fixture
def run_copy(demo_run: Path, tmp_path: Path) -> Path:
    return copy_run(demo_run, tmp_path / "run")


# ---- store ----------------------------------------------------------------------------------------


def test_store_keeps_history_and_undo_falls_back(tmp_path: Path):
    s = ReviewStore(tmp_path)
    s.record(1, "alice", "correct")
    s.record(1, "alice", "wrong")
    s.record(2, "alice", "ambiguous")
    s.record(1, "bob", "correct")
    assert s.current() == {1: {"alice": "wrong", "bob": "correct"}, 2: {"alice": "ambiguous"}}
    assert s.undo("alice").item_id == 2  # the latest of alice's labels
    assert s.undo("alice").label == "wrong"
    assert s.current("alice") == {1: {"alice": "correct"}}  # back to her earlier label
    assert s.undo("alice").label == "correct"
    assert s.undo("alice") is None
    assert s.current() == {1: {"bob": "correct"}}
    events = s.history()
    assert [e["label"] for e in events] == ["correct", "wrong", "ambiguous", "correct", None, None, None]
    assert [e["undoes"] for e in events[4:]] == [3, 2, 1]
    again = ReviewStore(tmp_path)  # reopened: all of it was committed
    assert again.current() == {1: {"bob": "correct"}}
    assert again.undo("bob", item_id=1).label == "correct"


def test_store_uses_wal_and_rejects_unknown_labels(tmp_path: Path):
    import sqlite3

    s = ReviewStore(tmp_path)
    con = sqlite3.connect(tmp_path / STORE)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    with pytest.raises(ValueError, match="unknown label"):
        s.record(1, "alice", "maybe")


def test_store_two_writers_at_once_lose_nothing(tmp_path: Path):
    """Two tabs (or two processes) writing at once: every click is its own transaction."""
    stores = [ReviewStore(tmp_path), ReviewStore(tmp_path)]

    def clicks(k: int) -> None:
        for i in range(40):
            stores[k].record(i, f"annotator{k}", "correct" if i % 2 else "wrong")
            if i % 10 == 9:
                stores[k].undo(f"annotator{k}")

    threads = [threading.Thread(target=clicks, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cur = ReviewStore(tmp_path).current()
    assert sum(len(v) for v in cur.values()) == 2 * 36
    assert len(stores[0].history()) == 2 * 44


# ---- apply ----------------------------------------------------------------------------------------


def _records() -> tuple[list[Reviewable], list[Reviewable]]:
    pos = [Reviewable(i, f"img{i}") for i in (1, 2, 3)]
    neg = [Reviewable(i, f"img{i // 10}", i // 10) for i in (11, 12, 21, 31, 32)]
    return pos, neg


def test_apply_drops_bad_positives_with_their_negatives_and_false_negatives():
    pos, neg = _records()
    labels = {
        1: decide(1, {"alice": "ambiguous"}),
        2: decide(2, {"alice": "correct"}),
        21: decide(21, {"bob": "still_true"}),
        31: decide(31, {"bob": "unreadable"}),
        32: decide(32, {"bob": "negative"}),
    }
    kept_p, kept_n, dropped = apply_labels(pos, neg, labels)
    assert [p.id for p in kept_p] == [2, 3]
    assert [n.id for n in kept_n] == [32]
    by_id = {d.sample_id: d for d in dropped}
    assert set(by_id) == {1, 11, 12, 21, 31}
    assert by_id[1].reason == "review: ambiguous (by alice)"
    assert by_id[11].reason == "review: its positive is ambiguous (by alice)"
    assert by_id[21].reason == "review: still_true (by bob)"
    assert by_id[11].detail == {
        "label": "ambiguous",
        "by": ["alice"],
        "rule": "majority",
        "votes": {"alice": "ambiguous"},
    }
    assert all(d.image_id == f"img{str(d.sample_id)[0]}" for d in dropped)
    assert len(pos) == 3 and len(neg) == 5  # inputs untouched


def test_disagreement_the_side_with_a_majority_names_its_commonest_label():
    lab = decide(7, {"alice": "correct", "bob": "wrong", "carol": "ambiguous", "dan": "wrong"})
    assert (lab.label, lab.annotators, lab.rule) == ("wrong", ("bob", "carol", "dan"), "majority")
    assert lab.drops and lab.by == "bob, carol, dan"
    assert decide(8, {"a": "negative", "b": "unreadable"}).tied  # one against one: no majority
    assert decide(9, {"a": "still_true", "b": "unreadable"}).label == "still_true"  # drop reasons split: the worse
    assert not decide(10, {"a": "correct", "b": "correct"}).drops
    assert decide(11, {"a": "wrong"}).drops  # one annotator is a majority of one
    two = decide(12, {"a": "wrong", "b": "correct", "x": "correct", "y": "wrong"}, adjudicators={"x", "y"})
    assert two.tied and two.annotators == ("x", "y")  # adjudicators who disagree tie among themselves


def test_a_label_of_the_other_kind_is_ignored():
    pos, neg = _records()
    labels = {1: Label(1, "still_true", ("x",), {"x": "still_true"}), 11: Label(11, "wrong", ("x",), {"x": "wrong"})}
    kept_p, kept_n, dropped = apply_labels(pos, neg, labels)
    assert len(kept_p) == 3 and len(kept_n) == 5 and dropped == []


def test_load_labels_and_summary(tmp_path: Path):
    assert load_labels(tmp_path) == {}
    assert not (tmp_path / FILENAME).exists()  # reading never creates the store
    s = ReviewStore(tmp_path)
    for i, (a, b) in enumerate([("correct", "correct"), ("wrong", "correct"), ("ambiguous", "ambiguous")]):
        s.record(i, "alice", a)
        s.record(i, "bob", b)
    s.record(10, "alice", "negative")
    labels = load_labels(tmp_path)
    assert {i: lab.label for i, lab in labels.items()} == {0: "correct", 1: "tied", 2: "ambiguous", 10: "negative"}
    out = summary(labels)
    assert out["items"] == 4 and out["dropping"] == 1 and out["tied"] == 1 and out["tied_items"] == [1]
    assert out["by_label"] == {"ambiguous": 1, "correct": 1, "negative": 1, "tied": 1}
    assert out["by_annotator"]["alice"] == {"ambiguous": 1, "correct": 1, "negative": 1, "wrong": 1}
    assert out["by_annotator"]["bob"] == {"ambiguous": 1, "correct": 2}
    (pair,) = out["agreement"]
    assert (pair["a"], pair["b"], pair["items"]) == ("alice", "bob", 3)
    assert pair["kappa"] == pytest.approx(
        cohen_kappa(["correct", "wrong", "ambiguous"], ["correct", "correct", "ambiguous"]), abs=1e-4
    )


# ---- kappa ------------------------------------------------------------------------------------------


def test_cohen_kappa_known_values():
    # p_o = 0.75; p_e = 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = 0.5
    assert cohen_kappa(["c", "c", "w", "w"], ["c", "w", "w", "w"]) == pytest.approx(0.5)
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == pytest.approx(1.0)
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # one label throughout: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


def test_pairwise_kappa_over_common_items_only():
    votes = {1: {"a": "x", "b": "x", "c": "y"}, 2: {"a": "y", "b": "y"}, 3: {"a": "x", "c": "x"}}
    pairs = {(p["a"], p["b"]): p for p in pairwise(votes)}
    assert pairs[("a", "b")]["items"] == 2 and pairs[("a", "b")]["kappa"] == pytest.approx(1.0)
    assert pairs[("a", "c")]["items"] == 2 and pairs[("a", "c")]["agreement"] == 0.5
    assert pairs[("b", "c")]["items"] == 1


# ---- queue order ------------------------------------------------------------------------------------


def test_priority_puts_doubtful_scores_first_then_harder_levels():
    recs = [
        {"id": 1, "level": 3},
        {"id": 2, "level": 2, "scores": {"detector_twin": 0.9}},
        {"id": 3, "level": 2, "scores": {"detector_twin": 0.05}},
        {"id": 4, "level": 2},
        {"id": 5, "level": 3, "positive_id": 9, "negative_level": 2, "scores": {"clip_margin": -0.01}},
        {"id": 6, "level": 3, "positive_id": 9, "negative_level": 2, "scores": {"clip_margin": 0.3, "new_score": 5}},
    ]
    order = [r["id"] for r in sorted(recs, key=priority_key)]
    assert order == [2, 5, 1, 4, 3, 6]
    assert risk({"scores": {"unknown": 1.0, "refine_s1": [0.1, 0.2]}}) is None
    assert risk({"scores": {"realism": float("nan")}}) is None
    assert priority_key({"id": 5})[3] == 10039658952310757792  # blake2b, the same in every process


def test_default_queue_is_what_the_paper_sent_to_humans():
    assert not in_default_queue({"id": 1, "level": 1})
    assert in_default_queue({"id": 1, "level": 2}) and in_default_queue({"id": 1, "level": 3})
    assert in_default_queue({"id": 2, "level": 1, "positive_id": 1, "negative_type": "flip"})


# ---- report -----------------------------------------------------------------------------------------


def _img_srcs(html: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', html)


def site_pages(root: Path) -> list[Path]:
    """The report's pages: the overview, then every section page."""
    return [root / "report.html", *sorted((root / "report").glob("*.html"))]


def site_html(root: Path) -> str:
    return "\n".join(p.read_text() for p in site_pages(root))


def test_report_on_the_demo_run(run_copy: Path):
    run = RunData(run_copy)
    s = ReviewStore(run_copy)  # two annotators on six positives: the review section shows kappa
    for i, p in enumerate(run.positives[:6]):
        s.record(p["id"], "alice", "correct" if i % 3 else "wrong")
        s.record(p["id"], "bob", "correct" if i % 2 else "ambiguous")
    out = build_report(run_copy)
    assert out == run_copy / "report.html"
    for section in ("positives", "text-negatives", "image-negatives", "rejects", "filters", "exports", "review"):
        assert (run_copy / "report" / f"{section}.html").is_file(), section
    html = site_html(run_copy)
    for anchor in ("counts", "edits", "filters", "scores", "tricd", "probes", "imagecode"):
        assert f"id='{anchor}'" in html
    assert "This section failed" not in html
    srcs = []
    for page in site_pages(run_copy):
        for src in _img_srcs(page.read_text()):
            assert not src.startswith(("/", "http")) and (page.parent / src).is_file(), (page, src)
            srcs.append(src)
    assert len(srcs) > 30
    for ttype, level in {(p["tuple_type"], p["level"]) for p in run.positives}:
        assert f"id='g-{ttype}-L{level}'" in html
    assert "chosen: images/" in html and "best of" in html  # image negatives with their losing candidates
    assert any("plot_score_image_negative_realism" in s for s in srcs)
    assert "image_negative similarity: no threshold recorded" in html
    assert "kappa" in html and "Not applied yet" in html and "wrong (by annotator 1" in html
    assert "alice" not in html and "bob" not in html  # published with the run: no annotator names
    assert "the last split dropped 0 samples for them, and " in html
    assert sum(f.stat().st_size for f in (run_copy / "report" / "assets").iterdir()) < 30_000_000


def test_the_report_counts_what_the_review_dropped_after_the_split_applied_it(demo_run: Path, tmp_path: Path):
    """`hardneg split` applies the labels: the dropped samples leave the splits for rejects.jsonl, and the
    report counts them from there (applied to the splits, they would find nothing left to drop)."""
    from hardneg.flows.pipeline import resplit

    root = tmp_path / "run"
    shutil.copytree(demo_run, root)
    run = RunData(root)
    wrong = run.positives[0]["id"]
    lost = 1 + len(run.negatives_of.get(wrong, []))
    ReviewStore(root).record(wrong, "alice", "wrong")
    resplit(root, {})
    assert wrong not in {p["id"] for p in RunData(root).positives}
    build_report(root)
    html = site_html(root)
    assert f"the last split dropped {lost} samples for them." in html, re.findall(r"items reviewed[^<]*", html)
    assert "Dropped by the review" in html and "Not applied yet" not in html


def test_report_of_a_partial_or_older_run_still_renders(run_copy: Path):
    for name in ("rejects.jsonl", "manifest.json", "stats.json"):
        (run_copy / name).unlink()
    shutil.rmtree(run_copy / "inputs")
    shutil.rmtree(run_copy / "work" / "ingest" / "photos")
    shutil.rmtree(run_copy / "images")
    (run_copy / "splits" / "val" / "negative.json").unlink()
    build_report(run_copy)
    html = site_html(run_copy)
    assert "This section failed" not in html
    assert "not available" in html
    assert "rejects.jsonl not available" in html and "source images not available" in html
    assert "splits/val/negative not available" in html


def test_report_reads_newer_fields_and_draws_new_thresholds(run_copy: Path):
    """A newer run: unknown keys, a new score with a threshold in the config, an extra split."""
    m = orjson.loads((run_copy / "manifest.json").read_bytes())
    m["config"]["filters"]["thresholds"] = {"detector": {"max_twin": 0.4}}
    m["thresholds"] = {"seam": {"max": 0.2}}  # resolved thresholds, if a run records them
    m["something_new"] = {"x": 1}
    (run_copy / "manifest.json").write_bytes(orjson.dumps(m))
    path = run_copy / "splits" / "test" / "positive.json"
    rows = orjson.loads(path.read_bytes())
    rng = random.Random(0)
    for r in rows:
        r.setdefault("scores", {})["detector_twin"] = rng.random()
        r["new_field"] = [1, 2]
    path.write_bytes(orjson.dumps(rows))
    (run_copy / "splits" / "extra").mkdir()
    (run_copy / "splits" / "extra" / "positive.json").write_bytes(orjson.dumps([{"id": 5, "level": "x"}, "junk"]))
    (run_copy / "splits" / "extra" / "negative.json").write_bytes(
        orjson.dumps(
            [{"id": 6, "positive_id": [5], "negative_cate": "image", "candidates": [1], "file_name": "/etc/passwd"}]
        )
    )
    with (run_copy / "rejects.jsonl").open("ab") as f:
        f.write(b'{"stage": "filter", "sample_id": [1], "reason": 5, "detail": "x"}\nnot json\n[1]\n')
    build_report(run_copy)
    html = site_html(run_copy)
    assert "This section failed" not in html
    assert "plot_score_positive_detector_twin" in html
    assert "positive detector_twin: threshold filters.thresholds.detector.max_twin = 0.4 (below passes) drawn" in html
    assert "plot_score_image_negative_realism" in html
    assert "image_negative realism: threshold thresholds.seam.max = 0.2 (below passes) drawn" in html


def test_report_stays_small_on_a_big_run(run_copy: Path):
    """GQA-scale in miniature: 50x the positives; samples per group stay fixed, the budget holds."""
    path = run_copy / "splits" / "train" / "positive.json"
    rows = orjson.loads(path.read_bytes())
    big = [{**r, "id": (r["id"] + k * 10**15) % 2**52} for k in range(50) for r in rows]
    path.write_bytes(orjson.dumps(big))
    html = build_report(run_copy, per_group=3, max_bytes=150_000).read_text()
    cards = sum(p.read_text().count("class='card' id='s") for p in (run_copy / "report").glob("positives*.html"))
    groups = len({(p["tuple_type"], p["level"]) for p in RunData(run_copy).positives})
    assert cards <= 3 * groups
    assert sum(f.stat().st_size for f in (run_copy / "report" / "assets").iterdir()) <= 150_000
    assert "budget" in html


def test_reason_groups_blank_particulars_only():
    assert reason_group("balance: per_type_level cap 40 for 0_hop L2") == "balance: per_type_level cap # for 0_hop L2"
    assert reason_group("poor referent name 'floor' (stuff: amorphous)") == "poor referent name '…' (…)"
    assert reason_group("filter: CLIP margin -0.0123 <= 0.0") == "filter: CLIP margin # <= #"


# ---- the app over HTTP ----------------------------------------------------------------------------


@pytest.fixture
def app(run_copy: Path):
    server = ReviewServer(run_copy, port=0)
    server.start()
    yield server, run_copy
    server.stop()


def _writer(server: ReviewServer) -> httpx.Client:
    """A client that sends the server's token, as the page opened from the printed URL does."""
    return httpx.Client(base_url=server.url, headers={"X-Review-Token": server.token})


def _label(c: httpx.Client, item_id: str, label: str, who: str) -> httpx.Response:
    """Post a label on the item's current version (a fresh view, as a page that just opened it)."""
    view = c.get(f"/api/items/{item_id}", params={"annotator": who}).json()
    body = {"item_id": item_id, "label": label, "annotator": who, "version": view["version"], "view": view["view"]}
    return c.post("/api/decisions", json=body)


def _item_ids(client: httpx.Client, who: str = "alice", **params: str) -> list[str]:
    r = client.get("/api/queue", params={"annotator": who, "limit": "1000", **params})
    assert r.status_code == 200, r.text
    return r.json()["ids"]


def test_app_label_undo_and_progress(app):
    server, run_dir = app
    with _writer(server) as c:
        assert c.get("/").status_code == 200 and "hardneg review" in c.get("/").text
        assert c.get("/static/app.js").headers["content-type"].startswith("text/javascript")
        q = c.get("/api/queue", params={"annotator": "alice"}).json()
        assert q["done"] == 0 and q["pending"] == q["total"] > 0
        first = q["ids"][0]
        item = c.get(f"/api/items/{first}", params={"annotator": "alice"}).json()
        assert item["mine"] is None and item["boxes"][0]["color"] == "#ff2020"
        label = item["labels"][1]["label"]
        body = {"item_id": first, "label": label, "annotator": "alice", "version": 0, "view": item["view"]}
        r = c.post("/api/decisions", json=body)
        assert r.status_code == 200 and r.json()["label"] == label and r.json()["version"] == 1
        q2 = c.get("/api/queue", params={"annotator": "alice"}).json()
        assert (q2["done"], q2["pending"]) == (1, q["pending"] - 1) and first not in q2["ids"]
        assert c.get(f"/api/items/{first}", params={"annotator": "alice"}).json()["mine"] == label
        assert c.get("/api/queue", params={"annotator": "bob"}).json()["done"] == 0  # per annotator
        u = c.post("/api/undo", json={"annotator": "alice"}).json()
        assert u["undone"]["item_id"] == first and u["now"] is None
        assert c.post("/api/undo", json={"annotator": "alice"}).json() == {"undone": None}
    assert [e["label"] for e in ReviewStore(run_dir).history()] == [label, None]


def test_app_queue_is_the_default_scope_in_priority_order(app):
    server, run_dir = app
    run = RunData(run_dir)
    expected = [str(r["id"]) for r in sorted((*run.positives, *run.negatives), key=priority_key) if in_default_queue(r)]
    with httpx.Client(base_url=server.url) as c:
        assert _item_ids(c) == expected[:1000]
        every = c.get("/api/queue", params={"annotator": "a", "scope": "all"}).json()["total"]
        assert every == len(run.positives) + len(run.negatives)
        some = next(p for p in run.positives if p["level"] >= 2)
        chosen = _item_ids(c, kind="positive", level=str(some["level"]), split=some["split"], type=some["tuple_type"])
        assert str(some["id"]) in chosen
        for i in chosen:
            r = run.by_id[int(i)]
            assert (r["level"], r["split"], r["tuple_type"]) == (some["level"], some["split"], some["tuple_type"])
        kind = next(n["negative_type"] for n in run.negatives if n.get("negative_cate") == "image")
        picked = _item_ids(c, negative_type=kind)
        assert picked and all(run.by_id[int(i)]["negative_type"] == kind for i in picked)


def test_app_serves_the_run_images_by_id(app):
    server, run_dir = app
    run = RunData(run_dir)
    pos = run.positives[0]
    img_neg = next(n for n in run.negatives if n.get("negative_cate") == "image")
    with httpx.Client(base_url=server.url) as c:
        r = c.get(f"/api/items/{pos['id']}/image")
        assert (
            r.status_code == 200
            and r.content == (run_dir / "work/ingest/photos" / f"{pos['image_id']}.jpg").read_bytes()
        )
        r = c.get(f"/api/items/{img_neg['id']}/image")
        assert r.content == (run_dir / img_neg["file_name"]).read_bytes()
        r = c.get(f"/api/items/{img_neg['id']}/source")
        assert r.content == (run_dir / "work/ingest/photos" / f"{img_neg['source_image_id']}.jpg").read_bytes()
        view = c.get(f"/api/items/{img_neg['id']}").json()
        assert view["kind"] == "image_negative" and view["source"]
        flip = next((n for n in run.negatives if n.get("negative_cate") == "image" and n["edit"]["op"] == "flip"), None)
        if flip is None:  # offline, flips are off by default: stats.md says so, and there is nothing to mirror
            edits = json.loads((run_dir / "stats.json").read_text())["image_edits"]
            assert edits["flip"]["note"].startswith("off by default offline")
            return
        view = c.get(f"/api/items/{flip['id']}").json()
        assert view["boxes"][0]["x"] == flip["bbox"][0]  # boxes mirrored into the flipped image


JSON = {"Content-Type": "application/json"}
HOSTILE = [
    ("GET", "/api/items/../../etc/passwd", None, {}, 404),
    ("GET", "/api/items/..%2F..%2Fetc%2Fpasswd/image", None, {}, 404),
    ("GET", "/api/items/%2e%2e%2f%2e%2e%2fetc%2fpasswd/image", None, {}, 404),
    ("GET", "/static/..%2Fserver.py", None, {}, 404),
    ("GET", "/static/app.js%00.png", None, {}, 404),
    ("GET", "/api/items/99999999999999999999999999999999/image", None, {}, 404),
    ("GET", "/api/items/9223372036854775807", None, {}, 404),
    ("GET", "/api/items/-1/image", None, {}, 404),
    ("GET", "/api/items/1e9", None, {}, 404),
    ("GET", "/api/items/" + "9" * 5000, None, {}, 404),
    ("GET", "/api/queue", None, {}, 400),
    ("GET", "/api/queue?annotator=a&level=abc", None, {}, 400),
    ("GET", "/api/queue?annotator=a&kind=%3Cscript%3E", None, {}, 400),
    ("GET", "/api/queue?annotator=a&scope=everything", None, {}, 400),
    ("GET", "/api/queue?annotator=a&limit=-5", None, {}, 400),
    ("GET", "/api/queue?annotator=" + "x" * 200, None, {}, 400),
    ("POST", "/api/decisions", b"{not json", {"Content-Type": "application/json"}, 400),
    ("POST", "/api/decisions", b"[1, 2]", {"Content-Type": "application/json"}, 400),
    ("POST", "/api/decisions", b"", {"Content-Type": "application/json"}, 400),
    ("POST", "/api/decisions", b'{"item_id": 1}', {"Content-Type": "text/plain"}, 415),
    ("POST", "/api/decisions", b"{}", {}, 415),
    ("POST", "/api/decisions", b'{"pad": "' + b"x" * 20000 + b'"}', {"Content-Type": "application/json"}, 413),
    (
        "POST",
        "/api/decisions",
        b'{"item_id": 5, "label": "correct", "annotator": "a"}',
        {"Content-Type": "application/json"},
        404,
    ),
    ("POST", "/api/decisions", b'{"item_id": 1' + b"0" * 40 + b', "label": "correct", "annotator": "a"}', JSON, 404),
    ("POST", "/api/decisions", b'{"item_id": true, "label": "correct", "annotator": "a"}', JSON, 404),
    ("POST", "/api/decisions", b'{"item_id": 1.5, "label": "correct", "annotator": "a"}', JSON, 404),
    ("POST", "/api/undo", b'{"annotator": ""}', {"Content-Type": "application/json"}, 400),
    ("POST", "/api/undo", b'{"annotator": "a\\u0000b"}', {"Content-Type": "application/json"}, 400),
    ("POST", "/api/undo", b'{"annotator": "a", "item_id": "../x"}', {"Content-Type": "application/json"}, 404),
    ("POST", "/api/decisions", b'{"item_id": 1, "label": "correct", "annotator": "a", "version": "1"}', JSON, 404),
    ("DELETE", "/api/decisions", None, {}, 405),
    ("GET", "/api/decisions", None, {}, 405),
    ("POST", "/api/meta", b"{}", {"Content-Type": "application/json"}, 405),
    ("PUT", "/api/items/1/image", b"x", {}, 405),
    ("GET", "/api/meta", None, {"Host": "evil.example:80"}, 400),
    ("GET", "/nothing/here", None, {}, 404),
]


def _raw(url: str, method: str, path: str, body: bytes | None, headers: dict) -> tuple[int, bytes]:
    """http.client sends the path as is (no dot-segment normalisation, unlike browsers and httpx)."""
    host, port = url.split("//")[1].strip("/").rsplit(":", 1)
    con = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        con.putrequest(method, path, skip_host="Host" in headers)
        for k, v in headers.items():
            con.putheader(k, v)
        con.putheader("Content-Length", str(len(body or b"")))
        con.endheaders(body)
        res = con.getresponse()
        return res.status, res.read()
    finally:
        con.close()


def test_app_answers_hostile_requests_with_4xx_json(app):
    server, _ = app
    for method, path, body, headers, status in HOSTILE:
        if method == "POST":  # with the token: what comes after it is checked too (without it: 403, below)
            headers = {**headers, "X-Review-Token": server.token}
        got, data = _raw(server.url, method, path, body, headers)
        assert got == status, (method, path, got, data[:200])
        msg = json.loads(data)
        assert isinstance(msg["error"], str) and msg["error"], (path, msg)
        assert b"Traceback" not in data and b"/work/" not in data and b"/tmp/" not in data


def test_app_refuses_wrong_labels_with_a_message(app):
    server, run_dir = app
    run = RunData(run_dir)
    pos, neg = run.positives[0], run.negatives[0]
    with _writer(server) as c:
        for item, label, hint in [
            (pos, "still_true", "not a label for this item"),
            (neg, "correct", "not a label for this item"),
            (pos, "maybe", "unknown label"),
            (pos, None, "unknown label"),
            (pos, ["correct"], "unknown label"),
        ]:
            r = c.post("/api/decisions", json={"item_id": str(item["id"]), "label": label, "annotator": "a"})
            assert r.status_code == 400 and hint in r.json()["error"]
        r = c.post("/api/decisions", json={"item_id": pos["id"], "label": "correct", "annotator": 5})
        assert r.status_code == 400
        for version in (None, "0", -1, True, 1.5):
            body = {"item_id": pos["id"], "label": "correct", "annotator": "a", "version": version}
            r = c.post("/api/decisions", json=body)
            assert r.status_code == 400 and "version" in r.json()["error"]
    assert ReviewStore(run_dir).history() == []


def test_app_agreement_and_two_tabs_at_once(app):
    server, run_dir = app
    with httpx.Client(base_url=server.url) as c:
        ids = _item_ids(c)[:20]
        items = {i: c.get(f"/api/items/{i}").json() for i in ids}
    statuses: dict[str, Counter[int]] = {"alice": Counter(), "bob": Counter()}

    def tab(who: str, pick: int) -> None:
        with _writer(server) as c:
            for n, i in enumerate(ids):
                r = _label(c, i, items[i]["labels"][(n * pick) % 3]["label"], who)
                statuses[who][r.status_code] += 1

    threads = [threading.Thread(target=tab, args=(w, k)) for w, k in (("alice", 1), ("bob", 2), ("alice", 1))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses["bob"] == Counter({200: 20})
    # alice's two tabs: the first to post on a version wins, the other is refused (never overwrites)
    assert set(statuses["alice"]) <= {200, 409} and statuses["alice"].total() == 40 and statuses["alice"][200] >= 20
    with httpx.Client(base_url=server.url) as c:
        a = c.get("/api/agreement").json()
    (pair,) = a["pairs"]
    votes = ReviewStore(run_dir).current()
    common = [(v["alice"], v["bob"]) for v in votes.values()]
    assert pair["items"] == len(common) == 20
    k = cohen_kappa([x for x, _ in common], [y for _, y in common])
    assert pair["kappa"] == (None if k is None else pytest.approx(k, abs=1e-4))


# ---- CLI --------------------------------------------------------------------------------------------


def test_cli_report_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    run_copy = tmp_path / "tiny"  # a run folder of one positive and nothing else: a report all the same
    (run_copy / "splits" / "test").mkdir(parents=True)
    one = {"id": 1, "image_id": "1", "tuple_type": "0_hop", "level": 2, "expression": "the cup", "bbox": [1, 2, 3, 4]}
    (run_copy / "splits" / "test" / "positive.json").write_bytes(orjson.dumps([one]))
    assert main(["report", str(run_copy), "--per-group", "2"]) == 0
    assert "the cup" in (run_copy / "report" / "positives.html").read_text()
    assert "report.html" in capsys.readouterr().out
    assert main(["report", str(run_copy / "nope")]) == 2
    assert "hardneg: error: run folder not found" in capsys.readouterr().err
    assert main(["review", str(run_copy / "nope"), "--no-browser"]) == 2
    assert main(["review", str(run_copy), "--no-browser", "--port", "70000"]) == 2
    empty = run_copy.parent / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_cli_review_prints_a_loopback_url_and_serves(run_copy: Path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "hardneg", "review", str(run_copy), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("review: http://127.0.0.1:"), line + proc.stderr.read()  # type: ignore[union-attr]
        url, token = line.split()[1].split("?token=")  # a token per start, for the page's writes
        assert httpx.get(url + "api/meta", timeout=10).json()["items"] > 0
        body = {"annotator": "a"}
        assert httpx.post(url + "api/undo", json=body, timeout=10).status_code == 403
        assert httpx.post(url + "api/undo", json=body, headers={"X-Review-Token": token}, timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_corrupt_review_store_is_a_clear_error(tmp_path: Path):
    (tmp_path / "work").mkdir()
    (tmp_path / STORE).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(HardnegError, match="not a readable review store"):
        load_labels(tmp_path)


def test_app_never_serves_a_path_named_in_a_record(run_copy: Path):
    """A tampered run folder: records that name files outside it get 404, not the file."""
    path = run_copy / "splits" / "test" / "negative.json"
    rows = orjson.loads(path.read_bytes())
    evil = {"id": 77, "positive_id": 78, "negative_cate": "image", "negative_type": "flip", "negative_level": 1}
    rows.append({**evil, "file_name": "../../../../etc/passwd", "source_image_id": "../../../../etc/passwd"})
    rows.append({**evil, "id": 79, "file_name": "/etc/passwd", "source_image_id": "/etc/hostname"})
    path.write_bytes(orjson.dumps(rows))
    server = ReviewServer(run_copy)
    server.start()
    try:
        for item in (77, 79):
            for what in ("image", "source"):
                r = httpx.get(f"{server.url}api/items/{item}/{what}")
                assert r.status_code == 404 and "has no image" in r.json()["error"]
    finally:
        server.stop()


# ---- the decision rule: majority, adjudicator, ties -------------------------------------------------


def test_a_majority_decides_one_dissent_does_not_drop():
    pos, neg = _records()
    votes = {"alice": "correct", "bob": "correct", "carol": "correct", "dan": "wrong"}
    lab = decide(1, votes)
    assert (lab.label, lab.annotators, lab.drops) == ("correct", ("alice", "bob", "carol"), False)
    kept_p, kept_n, dropped = apply_labels(pos, neg, {1: lab})
    assert [p.id for p in kept_p] == [1, 2, 3] and len(kept_n) == 5 and dropped == []


def test_an_adjudicators_label_is_the_final_word(tmp_path: Path):
    votes = {"alice": "correct", "bob": "correct", "carol": "wrong"}
    lab = decide(1, votes, adjudicators=frozenset({"carol"}))
    assert (lab.label, lab.annotators, lab.drops) == ("wrong", ("carol",), True)
    assert lab.by == "carol as adjudicator"
    s = ReviewStore(tmp_path)  # the adjudicators are kept in the store, so `hardneg split` decides alike
    for who, label in votes.items():
        s.record(1, who, label)
    assert load_labels(tmp_path)[1].label == "correct"
    s.add_adjudicators(["carol"])
    assert load_labels(tmp_path)[1].label == "wrong"
    _, _, dropped = apply_labels(*_records(), load_labels(tmp_path))
    assert {d.sample_id for d in dropped} == {1, 11, 12}  # with its negatives
    assert summary(load_labels(tmp_path))["adjudicated"] == 1


def test_a_tie_is_queued_kept_and_counted(tmp_path: Path):
    pos, neg = _records()
    s = ReviewStore(tmp_path)
    s.record(1, "alice", "correct")
    s.record(1, "bob", "wrong")
    s.record(31, "alice", "negative")
    s.record(31, "bob", "unreadable")  # a vote to drop like any other: one against one is a tie
    labels = load_labels(tmp_path)
    assert all(lab.tied and not lab.drops for lab in labels.values())
    kept_p, kept_n, dropped = apply_labels(pos, neg, labels)
    assert len(kept_p) == 3 and len(kept_n) == 5 and dropped == []  # kept, not silently dropped
    out = summary(labels)
    assert (out["items"], out["tied"], out["dropping"], out["tied_items"]) == (2, 2, 0, [1, 31])
    assert decide(5, {"a": "unreadable", "b": "unreadable", "c": "negative"}).drops  # unreadable by majority


def test_app_refuses_a_write_without_the_token(app):
    server, run_dir = app
    with httpx.Client(base_url=server.url) as c:
        first = _item_ids(c)[0]
        version = c.get(f"/api/items/{first}", params={"annotator": "mallory"}).json()["version"]
        body = {"item_id": first, "label": "correct", "annotator": "mallory", "version": version}
        for headers in ({}, {"X-Review-Token": "guess"}):
            r = c.post("/api/decisions", json=body, headers=headers)
            assert r.status_code == 403 and "token" in r.json()["error"]
        assert c.post("/api/undo", json={"annotator": "mallory"}).status_code == 403
        assert c.get("/api/meta").status_code == 200  # reads stay open
    assert ReviewStore(run_dir).history() == []
    assert server.page_url == f"{server.url}?token={server.token}"


def test_app_refuses_a_stale_tab_with_409(app):
    server, run_dir = app
    with httpx.Client(base_url=server.url, headers={"X-Review-Token": server.token}) as c:
        first = _item_ids(c)[0]
        view = c.get(f"/api/items/{first}", params={"annotator": "alice"}).json()  # two tabs open the item
        labels = [lab["label"] for lab in view["labels"]]
        one = {"item_id": first, "annotator": "alice", "version": view["version"], "view": view["view"]}
        assert c.post("/api/decisions", json={**one, "label": labels[0]}).status_code == 200
        r = c.post("/api/decisions", json={**one, "label": labels[2]})  # the other tab, still on the old version
        assert r.status_code == 409 and "someone labelled this since you opened it; reload" in r.json()["error"]
        fresh = c.get(f"/api/items/{first}", params={"annotator": "alice"}).json()
        assert fresh["mine"] == labels[0] and fresh["version"] != view["version"]
        again = {**one, "label": labels[2], "version": fresh["version"]}  # reloaded: now it saves
        assert c.post("/api/decisions", json=again).status_code == 200
    assert ReviewStore(run_dir).current() == {int(first): {"alice": labels[2]}}


def test_app_shows_tied_items_first(app):
    server, run_dir = app
    with httpx.Client(base_url=server.url) as c:
        ids = _item_ids(c, "carol")
    store = ReviewStore(run_dir)
    last = int(ids[-1])
    kind = RunData(run_dir).by_id[last]
    keep, drop = ("correct", "wrong") if "positive_id" not in kind else ("negative", "still_true")
    store.record(last, "alice", keep)
    store.record(last, "bob", drop)
    with httpx.Client(base_url=server.url) as c:
        q = c.get("/api/queue", params={"annotator": "carol", "limit": "1000"}).json()
        assert q["ids"][0] == str(last) and q["tied"] == 1
        assert c.get(f"/api/items/{last}", params={"annotator": "carol"}).json()["tied"] is True


def test_stats_md_counts_labels_per_annotator_and_shows_tied_items(tmp_path: Path):
    from hardneg.exports.stats import build_stats, markdown

    s = ReviewStore(tmp_path)
    for item, votes in {1: ("correct", "wrong"), 2: ("correct", "correct"), 3: ("wrong", "wrong")}.items():
        s.record(item, "alice", votes[0])
        s.record(item, "bob", votes[1])
    md = markdown(build_stats(Counter(), Counter(), Counter(), {}, summary(load_labels(tmp_path))))
    assert "Human review: 3 items, 1 dropped, 1 tied" in md
    assert "| alice | correct 2, wrong 1 |" in md and "| bob | correct 1, wrong 2 |" in md
    assert "| tied (kept, to adjudicate) | 1 |" in md


def test_the_store_lives_in_the_run_private_part_and_an_old_one_moves_there(tmp_path: Path):
    """Failed before: `review.sqlite` (annotator names, every click) sat beside the published files, where a
    dataset upload of the run folder took it along."""
    (tmp_path / "work").mkdir()
    ReviewStore(tmp_path).record(1, "alice", "correct")
    assert (tmp_path / "work" / "review.sqlite").is_file() and not (tmp_path / FILENAME).exists()
    old = tmp_path / "older"
    (old / "work").mkdir(parents=True)
    (tmp_path / "work" / "review.sqlite").rename(old / FILENAME)  # where an older version kept it
    assert ReviewStore(old).current() == {1: {"alice": "correct"}}
    assert (old / STORE).is_file() and not (old / FILENAME).exists()


def test_a_label_lands_only_on_the_item_whose_view_it_names(app):
    """The POST names the item and the view the page was given for it: a label sent with another item's
    view (a page that showed one item and sent another's id) is refused, and nothing is stored."""
    server, run_dir = app
    with _writer(server) as c:
        first, second = _item_ids(c)[:2]
        one = c.get(f"/api/items/{first}", params={"annotator": "alice"}).json()
        two = c.get(f"/api/items/{second}", params={"annotator": "alice"}).json()
        body = {"item_id": second, "label": two["labels"][0]["label"], "annotator": "alice", "version": two["version"]}
        r = c.post("/api/decisions", json={**body, "view": one["view"]})
        assert r.status_code == 409 and f"names item {second}, but the page showed another item" in r.json()["error"]
        r = c.post("/api/decisions", json=body)
        assert r.status_code == 400 and "view" in r.json()["error"]
        assert ReviewStore(run_dir).history() == []
        assert c.post("/api/decisions", json={**body, "view": two["view"]}).status_code == 200


def test_a_key_means_one_verdict_for_every_kind():
    """Failed before: key 3 was Wrong expression for a positive and Unreadable for a negative."""
    verdicts = {"1": {"correct", "negative"}, "2": {"ambiguous", "still_true"}, "3": {"wrong"}, "4": {"unreadable"}}
    for labels in (POSITIVE_LABELS, NEGATIVE_LABELS):
        for label, (_, key) in labels.items():
            assert label in verdicts[key], (label, key)
    assert {k for _, k in POSITIVE_LABELS.values()} & {k for _, k in NEGATIVE_LABELS.values()} == {"1", "2"}


@pytest.mark.parametrize(
    ("name", "why"),
    [("bob\u200b", "U+200B"), ("\u202ebob", "U+202E"), ("a\nb", "U+000A"), ("x" * 65, "not 65"), ("  ", "required")],
)
def test_an_annotator_name_is_printable_and_one_spelling_is_one_voter(tmp_path: Path, name: str, why: str):
    """Failed before: names with a right-to-left override or a zero-width space were accepted, and `bob`
    with a zero-width space counted as a second voter."""
    with pytest.raises(ValueError, match=re.escape(why)):
        ReviewStore(tmp_path).record(1, name, "correct")
    s = ReviewStore(tmp_path)
    s.record(1, "bob", "wrong")
    s.record(1, "ｂｏｂ ", "correct")  # full-width letters and a trailing space: the same name, normalised
    assert s.current() == {1: {"bob": "correct"}}
