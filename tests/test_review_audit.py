"""The audit (`hardneg review RUN --audit N`): a stratified random draw of the final dataset, kept in
review.sqlite, served blind to scores, and its estimates (Wilson intervals, weighted by stratum sizes)
in stats.md and the dataset card."""

from __future__ import annotations

import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hardneg.core.errors import HardnegError
from hardneg.filters.human.apply import Label, decide
from hardneg.filters.human.audit import allocate, draw, estimate, stratum_of, wilson
from hardneg.filters.human.store import AuditSample, ReviewStore
from hardneg.review.audit_draw import draw_audit
from hardneg.review.items import BLIND_KEYS
from hardneg.review.rundata import RunData
from hardneg.review.server import ReviewServer
from tests.runs import copy_of_small_run, small_run

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the shared small run for the tests here that only draw and read."""
    return copy_of_small_run(tmp_path_factory.mktemp("audit") / "run")


def _records(root: Path) -> list[dict[str, Any]]:
    run = RunData(root)
    return [*run.positives, *run.negatives]


def _keys(v: Any) -> set[str]:
    """Every key in a JSON value, however deep."""
    if isinstance(v, dict):
        return set(v) | {k for x in v.values() for k in _keys(x)}
    if isinstance(v, list):
        return {k for x in v for k in _keys(x)}
    return set()


# ---- the draw ---------------------------------------------------------------------------------------------


def test_allocation_is_proportional_with_a_floor_per_stratum_and_sums_to_n():
    assert allocate({"a": 100, "b": 10, "c": 1, "empty": 0}, 30) == {"a": 24, "b": 5, "c": 1}
    assert allocate({"a": 100, "b": 10}, 500) == {"a": 100, "b": 10}  # N above the dataset: all of it
    assert sum(allocate({"a": 5, "b": 5, "c": 5}, 2).values()) == 2  # fewer than the strata: largest first
    rng = random.Random(0)
    for _ in range(500):
        sizes = {f"s{k}": rng.randint(0, 40) for k in range(rng.randint(1, 15))}
        n = rng.randint(1, 400)
        got = allocate(sizes, n)
        full = [k for k, v in sizes.items() if v]
        assert sum(got.values()) == min(n, sum(sizes.values()))
        assert all(0 < got[k] <= sizes[k] for k in got)
        if n >= len(full):
            assert set(got) == set(full)  # every non-empty stratum is represented
        if n >= 3 * len(full):
            assert all(got[k] >= min(3, sizes[k]) for k in full)


def test_the_draw_covers_every_stratum_is_deterministic_and_idempotent(base_run: Path, tmp_path: Path):
    records = _records(base_run)
    strata = Counter(stratum_of(r) for r in records)
    assert {k.split("/")[0] for k in strata} == {"positive", "text_negative", "image_negative"}
    chosen, sizes = draw(records, 60, seed=1)
    assert sizes == dict(strata) and len(chosen) == 60
    assert set(chosen.values()) == set(strata)  # 60 items for fewer strata: each has at least one
    assert draw(records, 60, seed=1)[0] == chosen and draw(records, 60, seed=2)[0] != chosen

    root = shutil.copytree(base_run, tmp_path / "run", ignore=shutil.ignore_patterns("review.sqlite*"))
    first = draw_audit(root, 60, seed=1)
    assert first.added == 60 and first.sample.items == chosen and first.sample.population == dict(strata)
    again = draw_audit(root, 60, seed=1)
    assert again.added == 0 and again.sample == first.sample  # the same draw changes nothing
    bigger = draw_audit(root, 150, seed=1)
    assert bigger.added == 90 and set(chosen) <= set(bigger.sample.items)  # a larger N extends
    per_stratum = Counter(bigger.sample.items.values())
    assert all(per_stratum[k] >= min(3, n) for k, n in strata.items())  # 150 items: 3 per stratum first
    smaller = draw_audit(root, 10, seed=1)
    assert smaller.added == 0 and len(smaller.sample.items) == 150 and smaller.sample.asked == 150
    with pytest.raises(HardnegError, match="drawn with --seed 1"):
        draw_audit(root, 60, seed=2)


def test_fewer_items_than_strata_reach_every_kind_and_say_so(base_run: Path, tmp_path: Path, capsys):
    """Failed before: `--audit 30` on a run with 31 strata gave no item to 12 strata (51 of 52 image
    negatives never shown) and said nothing."""
    from hardneg.review.cli import draw_and_say

    strata = Counter(stratum_of(r) for r in _records(base_run))
    n = len(strata) - 1
    chosen, _ = draw(_records(base_run), n, seed=1)
    kinds = Counter(k.split("/")[0] for k in set(chosen.values()))
    assert len(chosen) == n and set(kinds) == {"positive", "text_negative", "image_negative"}
    sizes = {"positive/0_hop/L1": 500, "positive/1_hop/L1": 400, "text_negative/x/L1": 300, "image_negative/y/L1": 2}
    assert set(allocate(sizes, 3)) == {"positive/0_hop/L1", "text_negative/x/L1", "image_negative/y/L1"}
    root = shutil.copytree(base_run, tmp_path / "run")
    draw_and_say(root, n, seed=1)  # what `hardneg review RUN --audit N` says
    out = capsys.readouterr().out
    assert f"the dataset has {len(strata)} strata" in out and f"--audit {len(strata)} or more" in out


def test_an_extended_audit_holds_exactly_n_items(base_run: Path, tmp_path: Path):
    """Failed before: `--audit 40` after `--audit 30` held 45 items (the items of the first draw that the new
    allocation did not pick stayed, beside the ones it did)."""
    root = shutil.copytree(base_run, tmp_path / "run")
    strata = len({stratum_of(r) for r in _records(root)})
    for n in (strata - 5, strata + 1, strata + 30, 3 * strata + 5):
        done = draw_audit(root, n, seed=4)
        assert len(done.sample.items) == n, (n, len(done.sample.items))


# ---- the app, blind -----------------------------------------------------------------------------------------


def test_the_audit_app_serves_only_the_sample_and_no_scores(base_run: Path, tmp_path: Path):
    root = shutil.copytree(base_run, tmp_path / "run", ignore=shutil.ignore_patterns("review.sqlite*", "work"))
    with pytest.raises(HardnegError, match="no audit yet"):
        ReviewServer(root, audit=True)
    sample = draw_audit(root, 40, seed=3).sample
    outside = next(r["id"] for r in _records(root) if r["id"] not in sample.items)
    assert any(r.get("scores") for r in _records(root))  # the records do carry scores
    server = ReviewServer(root, audit=True)
    server.start()
    try:
        with httpx.Client(base_url=server.url, headers={"X-Review-Token": server.token}) as c:
            assert c.get("/api/meta").json()["audit"] == {"seed": 3, "items": 40}
            q = c.get("/api/queue", params={"annotator": "ann", "limit": "1000"}).json()
            assert q["total"] == 40 and {int(i) for i in q["ids"]} == set(sample.items)
            for item_id in q["ids"]:
                view = c.get(f"/api/items/{item_id}", params={"annotator": "ann"}).json()
                assert not _keys(view) & set(BLIND_KEYS), item_id
            assert c.get(f"/api/items/{outside}").status_code == 404  # only the sample is served
            assert c.get(f"/api/items/{outside}/image").status_code == 404
            first = q["ids"][0]
            view = c.get(f"/api/items/{first}", params={"annotator": "ann"}).json()
            label = view["labels"][0]["label"]
            body = {"item_id": first, "label": label, "annotator": "ann", "version": 0, "view": view["view"]}
            assert c.post("/api/decisions", json=body).status_code == 200
    finally:
        server.stop()
    assert ReviewStore(root).current() == {int(first): {"ann": label}}  # stored like any label


# ---- the estimates ------------------------------------------------------------------------------------------


def test_wilson_intervals_match_known_values():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=5e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=5e-4)
    assert wilson(1, 100) == pytest.approx((0.0018, 0.0545), abs=5e-4)
    with pytest.raises(ValueError):
        wilson(0, 0)


def _labels(votes: dict[int, dict[str, str]]) -> dict[int, Label]:
    return {i: decide(i, v) for i, v in votes.items()}


def test_estimates_weight_strata_by_size_and_never_invent_a_zero():
    items = {i: "text_negative/swap_object/L1" for i in range(10)}
    items |= {10 + i: "text_negative/swap_object/L2" for i in range(10)}
    items |= {20 + i: "positive/0_hop/L1" for i in range(3)}
    population = {"text_negative/swap_object/L1": 90, "text_negative/swap_object/L2": 10, "positive/0_hop/L1": 50}
    sample = AuditSample(0, 23, items, population, "2025-01-01T00:00:00+00:00")
    votes = {i: {"a": "negative"} for i in range(10)} | {10 + i: {"a": "negative"} for i in range(5)}
    votes |= {15 + i: {"a": "still_true"} for i in range(5)}
    votes[20] = {"a": "correct", "b": "wrong"}  # a tie: not counted as labelled
    est = estimate(sample, _labels(votes))
    assert est["labelled"] == 20 and est["tied"] == 1 and est["drawn"] == 23
    l2 = est["strata"]["text_negative/swap_object/L2"]
    assert (l2["labelled"], l2["errors"], l2["share"]) == (10, 5, 0.5)
    assert (l2["low"], l2["high"]) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    pooled = est["by_negative_type"]["text_negative/swap_object"]
    assert pooled["share"] == pytest.approx(0.9 * 0 + 0.1 * 0.5) and pooled["coverage"] == 1.0
    n_eff = 1 / (0.9**2 / 10 + 0.1**2 / 10)
    assert (pooled["low"], pooled["high"]) == pytest.approx(wilson(0.05 * n_eff, n_eff), abs=1e-4)
    assert est["overall"]["negatives still true"]["share"] == pooled["share"]
    positives = est["overall"]["positives unusable"]
    assert positives["labelled"] == 0 and positives["share"] is None  # nothing labelled: no estimate
    assert "image negatives still true" not in est["overall"]  # no such stratum in this dataset


def test_the_audit_reaches_stats_md_and_the_dataset_card(tmp_path: Path):
    from hardneg.flows.pipeline import resplit

    root = copy_of_small_run(tmp_path / "run")
    sample = draw_audit(root, 60, seed=5).sample
    resplit(root, {})  # drawn, nothing labelled yet: the table says so
    md = (root / "stats.md").read_text()
    assert "### Audit: estimated error rates (n labelled, 95% interval)" in md
    assert "nothing labelled yet" in md and "0 of 60 items labelled" in md
    by_id = {r["id"]: r for r in _records(root)}
    store = ReviewStore(root)
    still_true = []
    for item_id, key in sample.items.items():
        if key.startswith("positive/"):
            store.record(item_id, "ann", "correct")
        elif key.startswith("text_negative/") and not still_true:
            still_true.append(item_id)
            store.record(item_id, "ann", "still_true")
        else:
            store.record(item_id, "ann", "negative")
    resplit(root, {})
    audit = orjson.loads((root / "stats.json").read_bytes())["audit"]
    assert audit["labelled"] == 60
    key = sample.items[still_true[0]]
    cell = audit["strata"][key]
    assert cell["errors"] == 1 and cell["share"] == round(1 / cell["labelled"], 4) and cell["low"] < cell["share"]
    assert audit["overall"]["positives unusable"]["share"] == 0.0  # labelled, none unusable: a real zero
    assert audit["overall"]["positives unusable"]["high"] > 0  # with an upper bound
    md = (root / "stats.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| {key} |"))
    assert f"| {cell['labelled']} | {cell['share']:.1%} | {cell['low']:.1%} to {cell['high']:.1%} |" in row
    assert "### Audit: estimated error rates" in (root / "README.md").read_text()  # the card embeds stats.md
    # the report too, with the interval (failed before: the estimate was in stats.md and the card only)
    overview = (root / "report.html").read_text()
    assert "Audit of 60 items drawn at random (60 labelled): positives unusable: 0.0% (95% interval 0.0-" in overview
    assert "Audit: estimated error rates" in (root / "report" / "review.html").read_text()
    # the audit's labels vote like any other: the Still true negative left the dataset, and still counts
    assert still_true[0] in by_id and still_true[0] not in {r["id"] for r in _records(root)}


# ---- in a browser ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium via Playwright, as in test_review_browser.py (skipped without it, unless
    HARDNEG_REQUIRE_BROWSER=1)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if not CHROMIUM.exists() or sync_playwright is None:
        if os.environ.get("HARDNEG_REQUIRE_BROWSER") == "1":
            pytest.fail("HARDNEG_REQUIRE_BROWSER=1 but chromium or playwright is missing")
        pytest.skip("chromium or playwright is missing")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def test_the_audit_page_shows_no_scores(browser, tmp_path: Path):
    root = shutil.copytree(small_run(), tmp_path / "run", ignore=shutil.ignore_patterns("review.sqlite*", "work"))
    draw_audit(root, 12, seed=0)
    server = ReviewServer(root, audit=True)
    server.start()
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(server.page_url)
        page.fill("#name-input", "ann")
        page.press("#name-input", "Enter")
        page.wait_for_function("document.getElementById('expression').textContent.length > 0")
        assert "audit: 12 items drawn at random" in page.text_content("#run")
        assert not page.is_visible("#f-scope") and "12 to go" in page.text_content("#progress")
        text = page.text_content("#panel").lower()  # the item, its buttons, the guidelines
        assert "score" not in text and "risk" not in text and not re.search(r"\b[01]\.[0-9]{2}", text)
        item = httpx.get(f"{server.url}api/items/{page.evaluate('location.hash').removeprefix('#item=')}").json()
        assert not _keys(item) & set(BLIND_KEYS)
        assert not errors, errors
    finally:
        server.stop()


def test_published_files_count_labels_without_annotator_names_unless_configured(tmp_path: Path):
    """Failed before: the dataset card (and stats.md, the manifest, rejects.jsonl) named every annotator."""
    from hardneg.flows.pipeline import resplit

    root = copy_of_small_run(tmp_path / "run")
    store = ReviewStore(root)
    positives = [r for r in _records(root) if stratum_of(r).startswith("positive/")][:4]
    for i, p in enumerate(positives):
        store.record(p["id"], "alice.smith", "wrong" if i == 0 else "correct")
        store.record(p["id"], "bob.jones", "wrong" if i < 2 else "correct")
    resplit(root, {})
    published = ["README.md", "stats.md", "stats.json", "manifest.json", "rejects.jsonl", "report.html"]
    published += [str(p.relative_to(root)) for p in (root / "report").glob("*.html")]
    for name in published:
        text = (root / name).read_text()
        assert "alice" not in text and "bob" not in text, name
    card = (root / "README.md").read_text()
    assert "annotator 1" in card and "annotator 2" in card  # how many, and how they agreed, still shows
    assert '"review: wrong (by annotator 1, annotator 2)' in (root / "rejects.jsonl").read_text()
    resplit(root, {"review": {"publish_annotators": True}})
    assert "alice.smith" in (root / "README.md").read_text()


def test_the_app_ends_by_naming_the_command_that_applies_its_labels(tmp_path: Path):
    """Failed before: stopping the app said nothing of what to run next."""
    from hardneg.review.cli import closing_words

    root = copy_of_small_run(tmp_path / "run")
    ReviewStore(root).record(_records(root)[0]["id"], "ann", "correct")
    said = closing_words(root, audit=True)
    assert "1 labels on 1 items by 1 annotator kept" in said and f"`hardneg split {root}` applies them" in said
    assert "the audit's estimates" in said
