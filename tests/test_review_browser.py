"""The review app and the report in a real browser: Debian's chromium driven by Playwright.

Skipped when /usr/bin/chromium (or the playwright package) is absent, unless HARDNEG_REQUIRE_BROWSER=1
(as in CI), where that is a failure. Screenshots go to $HARDNEG_SCREENSHOTS when set (to regenerate
docs/screenshots/), else to the test's tmp folder.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from hardneg.filters.human.apply import apply_labels, load_labels, reviewable
from hardneg.filters.human.store import ReviewStore
from hardneg.review.report.page import build_report
from hardneg.review.rundata import RunData
from hardneg.review.server import ReviewServer
from tests.test_review import build_demo_run, copy_run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# the app's letter keys; a digit is one verdict for every kind (filters/human/labels.py)
LETTERS = {"correct": "c", "ambiguous": "a", "wrong": "w", "negative": "n", "still_true": "t", "unreadable": "u"}


def _unavailable(why: str) -> None:
    if os.environ.get("HARDNEG_REQUIRE_BROWSER") == "1":
        pytest.fail(f"HARDNEG_REQUIRE_BROWSER=1 but {why}")
    pytest.skip(f"{why}; set HARDNEG_REQUIRE_BROWSER=1 to make this a failure")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable("/usr/bin/chromium is missing (apt-get update && apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is missing (pip install playwright)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def demo_run() -> Path:
    return build_demo_run()


def save_screenshot(png: bytes, name: str, tmp_path: Path) -> Path:
    """A palette PNG (small enough for the README), under $HARDNEG_SCREENSHOTS or tmp_path."""
    out = Path(os.environ.get("HARDNEG_SCREENSHOTS") or tmp_path) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    img = Image.open(io.BytesIO(png)).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, optimize=True)  # keeps the box colours
    assert out.stat().st_size < 300_000, out.stat().st_size
    return out


def _open_app(browser, url: str, who: str | None):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    if who is not None:  # a new origin (port) asks for the name once
        page.fill("#name-input", who)
        page.press("#name-input", "Enter")
    page.wait_for_function("location.hash.startsWith('#item=')")
    return page, errors


def _settled(page) -> None:
    """The app has loaded its queue and shown an item (it rewrites location.hash until then)."""
    page.wait_for_function(
        "document.getElementById('progress').textContent.length > 0"
        " && document.getElementById('expression').textContent.length > 0"
    )


def _current(page) -> str:
    return page.evaluate("location.hash").removeprefix("#item=")


@contextlib.contextmanager
def _app_page(browser, demo_run: Path, tmp_path: Path) -> Iterator[tuple[Path, ReviewServer, Any, list[str]]]:
    """A copy of the demo run served, and a page on it that alice has opened and that shows an item:
    (run folder, server, page, the page's errors)."""
    run_dir = copy_run(demo_run, tmp_path / "run")
    server = ReviewServer(run_dir)
    server.start()
    try:
        page, errors = _open_app(browser, server.page_url, "alice")
        _settled(page)
        yield run_dir, server, page, errors
        page.close()
    finally:
        server.stop()


def _press_and_wait(page, key: str) -> None:
    before = _current(page)
    page.keyboard.press(key)
    page.wait_for_function("h => location.hash !== h", arg=f"#item={before}")


def test_review_by_keyboard_kept_across_reload_and_restart(browser, demo_run: Path, tmp_path: Path):
    run_dir = copy_run(demo_run, tmp_path / "run")
    server = ReviewServer(run_dir)
    server.start()
    try:
        page, errors = _open_app(browser, server.page_url, "alice")
        expected: dict[int, str] = {}
        for n, key in enumerate(["2", "1", "last", "letter", "2", "1"]):
            item = httpx.get(f"{server.url}api/items/{_current(page)}").json()
            if key == "last":  # a positive's Wrong expression is 3, a negative's Unreadable 4
                key = item["labels"][-1]["key"]
            elif key == "letter":  # one label by its letter key
                key = LETTERS[item["labels"][1]["label"]]
            chosen = next(lab for lab in item["labels"] if key in (lab["key"], LETTERS[lab["label"]]))
            expected[int(item["id"])] = chosen["label"]
            _press_and_wait(page, key)
            assert page.text_content("#status").startswith("saved"), n
        # undo the last label by keyboard: the app goes back to that item, and it is pending again
        last = list(expected)[-1]
        _press_and_wait(page, "z")
        assert _current(page) == str(last) and "undone" in page.text_content("#status")
        del expected[last]
        assert page.text_content("#progress").startswith(f"{len(expected)} of ")
        assert ReviewStore(run_dir).current("alice") == {i: {"alice": lab} for i, lab in expected.items()}

        page.reload()  # the name is remembered; the decisions are the server's
        _settled(page)
        assert not page.is_visible("#name-dialog")
        assert page.text_content("#progress").startswith(f"{len(expected)} of ")
        first = next(iter(expected))
        page.goto(f"{server.url}#item={first}")
        page.reload()
        page.wait_for_function("document.getElementById('mine').textContent.startsWith('your label')")
        assert page.locator("#buttons button.chosen").get_attribute("data-label") == expected[first]

        page.select_option("#f-kind", "positive")  # the paper's view: a positive, target red, related green/blue
        page.wait_for_function("document.querySelector('.badge.positive') !== null")
        page.wait_for_timeout(300)  # the canvas draws once the image has loaded
        save_screenshot(page.screenshot(), "review.png", tmp_path)
        assert errors == []
        page.close()
    finally:
        server.stop()

    again = ReviewServer(run_dir)  # a restart, on another port: a new origin asks the name again
    again.start()
    try:
        page, errors = _open_app(browser, again.page_url, "alice")
        _settled(page)
        assert page.text_content("#progress").startswith(f"{len(expected)} of ")
        assert errors == []
        page.close()
    finally:
        again.stop()

    run = RunData(run_dir)
    labels = load_labels(run_dir)
    assert {i: lab.label for i, lab in labels.items()} == expected
    kept_p, kept_n, dropped = apply_labels(reviewable(run.positives), reviewable(run.negatives), labels)
    dropping = {i for i, lab in labels.items() if lab.drops}
    assert dropping and dropping <= {d.sample_id for d in dropped}
    assert not dropping & {r.id for r in (*kept_p, *kept_n)}
    assert all(d.reason.startswith("review: ") and "(by alice)" in d.reason for d in dropped)


def test_report_opens_from_disk_and_every_image_loads(browser, demo_run: Path, tmp_path: Path):
    run_dir = copy_run(demo_run, tmp_path / "run")
    out = build_report(run_dir)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    seen = 0
    for f in [out, *sorted((run_dir / "report").glob("*.html"))]:
        page.goto(f.as_uri())
        page.wait_for_load_state("load")
        images = page.evaluate("[...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        seen += len(images)
        broken = [src for src, complete, width in images if not (complete and width > 0)]
        assert broken == [], f
        assert "This section failed" not in page.content()
    assert seen > 30
    page.goto((run_dir / "report" / "positives.html").as_uri())
    page.wait_for_load_state("load")
    save_screenshot(page.screenshot(), "report.png", tmp_path)
    page.close()


def test_a_stale_tab_is_refused_with_a_message_and_a_page_without_the_token_cannot_write(
    browser, demo_run: Path, tmp_path: Path
):
    run_dir = copy_run(demo_run, tmp_path / "run")
    server = ReviewServer(run_dir)
    server.start()
    try:
        fresh, errors = _open_app(browser, server.page_url, "alice")
        stale, stale_errors = _open_app(browser, server.page_url, "alice")  # a second tab on the same item
        _settled(fresh)
        _settled(stale)
        first = _current(fresh)
        assert _current(stale) == first
        _press_and_wait(fresh, "1")
        assert fresh.text_content("#status").startswith("saved")
        stale.keyboard.press("2")  # its view of the item is older than the label just saved
        stale.wait_for_function("document.getElementById('status').textContent.startsWith('not saved')")
        assert "someone labelled this since you opened it; reload" in stale.text_content("#status")
        assert _current(stale) == first  # it stays on the item, for a reload
        saved = ReviewStore(run_dir).current("alice")
        assert len(saved) == 1 and saved[int(first)]["alice"] in ("correct", "negative")
        assert errors == [] and stale_errors == []
        fresh.close()
        stale.close()

        bare, _ = _open_app(browser, server.url, "mallory")  # no ?token= (a new origin context): read only
        _settled(bare)
        assert "read only" in bare.text_content("#status")
        bare.keyboard.press("1")
        bare.wait_for_function("document.getElementById('status').textContent.startsWith('not saved')")
        assert "token" in bare.text_content("#status")
        bare.close()
        assert set(ReviewStore(run_dir).current()) == {int(first)}
    finally:
        server.stop()


def test_a_pasted_item_link_loads_its_item_before_a_key_labels_it(browser, demo_run: Path, tmp_path: Path):
    """Failed before: pasting `#item=X` into an open tab changed the URL but not the item, and the next key
    labelled the item still on screen under X's link."""
    with _app_page(browser, demo_run, tmp_path) as (run_dir, server, page, errors):
        shown = _current(page)
        other = next(i for i in httpx.get(f"{server.url}api/queue", params={"annotator": "x"}).json()["ids"][1:])
        assert other != shown
        expression = httpx.get(f"{server.url}api/items/{other}").json()["expression"]
        page.evaluate("id => { location.hash = '#item=' + id; }", other)  # as a paste into the address bar does
        page.wait_for_function("e => document.getElementById('expression').textContent === e", arg=expression)
        page.keyboard.press("1")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('saved')")
        assert set(ReviewStore(run_dir).current("alice")) == {int(other)}
        assert errors == []


def test_the_next_expression_appears_with_its_own_picture(browser, demo_run: Path, tmp_path: Path):
    """Failed before: after a label the next item's expression was drawn at once, over the previous item's
    picture, until the next picture had loaded (here its image is held back for a second)."""
    import time

    with _app_page(browser, demo_run, tmp_path) as (_, server, page, errors):
        # Start on an item whose picture differs from the one shown after it (the queue's first item): two
        # items of one image and one box look the same, rightly, and would prove nothing.
        def picture(i: str) -> tuple[bytes, str]:
            item = httpx.get(f"{server.url}api/items/{i}").json()
            return httpx.get(f"{server.url}{item['image']}").content, repr(item["boxes"])

        ids = httpx.get(f"{server.url}api/queue", params={"annotator": "alice"}).json()["ids"]
        start = next(i for i in ids[1:] if picture(i) != picture(ids[0]))
        expression = httpx.get(f"{server.url}api/items/{start}").json()["expression"]
        page.evaluate("id => { location.hash = '#item=' + id; }", start)
        page.wait_for_function("e => document.getElementById('expression').textContent === e", arg=expression)
        page.wait_for_timeout(300)
        page.route("**/api/items/*/image", lambda route: (time.sleep(1.0), route.continue_()))
        # the picture on the canvas at the moment the expression changes
        page.evaluate(
            """() => {
                window.seen = [];
                const expression = document.getElementById('expression');
                new MutationObserver(() => window.seen.push([
                    expression.textContent, document.getElementById('canvas').toDataURL(),
                ])).observe(expression, {childList: true, characterData: true, subtree: true});
            }"""
        )
        before = page.evaluate("document.getElementById('canvas').toDataURL()")
        _press_and_wait(page, "1")
        page.wait_for_function("window.seen.length > 0")
        page.wait_for_timeout(300)
        text, picture = page.evaluate("window.seen[0]")
        assert text == page.text_content("#expression")
        assert picture != before, "the new expression was shown over the previous item's picture"
        assert picture == page.evaluate("document.getElementById('canvas').toDataURL()")
        assert errors == []
