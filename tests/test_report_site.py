"""The report as a small site: an overview, a page per section cut into pages, readable rejects, and no
page wider than the window. Helpers are tested directly; the pages on the demo run, and in Chromium
(skipped without it, unless HARDNEG_REQUIRE_BROWSER=1, as in tests/test_review_browser.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hardneg.review.report.page import build_report
from hardneg.review.report.site import PER_PAGE, Item, Section, anchor_pages, page_file, pager_html
from hardneg.review.report.text import clean_reason, fmt_num, fmt_value, legend_html, legend_line, named_objects
from tests.test_review import build_demo_run, copy_run
from tests.test_review_browser import browser  # noqa: F401  (the fixture: Chromium, or a clean skip)

SECTIONS = ("positives", "text-negatives", "image-negatives", "rejects", "filters", "exports", "review")
MAX_HEIGHT = 12_000  # px at 1280 wide
NARROW = 800

# ---- helpers ------------------------------------------------------------------------------------------


def test_reasons_lose_the_doubled_stage_and_keep_every_word():
    assert clean_reason("refine", "refine: refine: larger side of swap_object/L1") == "larger side of swap_object/L1"
    assert clean_reason("filter", "filter: CLIP margin -0.0123 <= 0.0") == "CLIP margin -0.0123 <= 0.0"
    reason = "poor referent name 'floor' (stuff: amorphous region)"
    assert clean_reason("targets", reason) == reason  # quotes and notes stay: nothing blanked
    assert clean_reason("filter", "similarity 0.9993333851380277 here") == "similarity 0.999 here"
    assert clean_reason("mix", "  mix:   a   b ") == "a b"
    assert clean_reason("x", None) == "no reason recorded"
    assert named_objects("object 3000018 ('box') may match; object 3000018 too; object 42") == ["3000018"]


def test_numbers_round_to_three_significant_digits():
    assert fmt_num(-2.391046095148916) == "-2.39"
    assert fmt_num(0.9993333851380277) == "0.999"
    assert fmt_num(0.000030459524211323696) == "3.05e-05"
    assert fmt_num(0.5) == "0.5" and fmt_num(0.0) == "0" and fmt_num(7) == "7" and fmt_num(1234.5) == "1234"
    assert fmt_value([-2.391046095148916, -2.192084402545722]) == "-2.39 / -2.19"
    assert (
        fmt_value({"op": "set_attribute", "from": "orange", "to": "white"}) == "op set_attribute, from orange, to white"
    )


def test_every_score_family_has_a_legend_line():
    for name in ("refine_s1", "refine_s2", "clip_margin", "similarity", "realism", "recolor_hit", "smear",
                 "paste_edge", "trace", "recolor_new_check"):  # fmt: skip
        assert legend_line(name), name
    assert "positive / negative" in legend_line("refine_s1")
    assert legend_line("expression") is None
    table = legend_html({"refine_s1", "similarity", "word"})
    assert "<th>refine_s1</th>" in table and "<th>similarity</th>" in table and "word" not in table


def test_pages_cut_at_a_fixed_size_with_prev_and_next():
    s = Section("rejects", "Rejects", "Rejects", items=[Item(f"<p>{i}</p>", anchor=f"s{i}") for i in range(50)])
    assert s.pages() == 3 and page_file("rejects", 1) == "rejects.html" and page_file("rejects", 3) == "rejects-3.html"
    assert anchor_pages(s)["s0"] == "rejects.html" and anchor_pages(s)["s49"] == "rejects-3.html"
    middle = pager_html(s, 2)
    assert "rel='prev' href='rejects.html'" in middle and "rel='next' href='rejects-3.html'" in middle
    assert "rel='prev'" not in pager_html(s, 1) and "rel='next'" not in pager_html(s, 3)
    assert pager_html(Section("x", "X", "X", items=[Item("a")]), 1) == ""


# ---- the pages on the demo run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = copy_run(build_demo_run(), tmp_path_factory.mktemp("site") / "run")
    build_report(run)
    return run


def _pages(root: Path, section: str) -> list[Path]:
    return sorted((root / "report").glob(f"{section}*.html"), key=lambda p: (len(p.name), p.name))


def test_a_page_per_section_and_no_page_holds_more_than_its_share(site: Path):
    overview = (site / "report.html").read_text()
    for section in SECTIONS:
        assert f"href='report/{section}.html'" in overview, section
        for page in _pages(site, section):
            html = page.read_text()
            assert "href='../report.html'" in html and "href='report.css'" in html
            assert html.count("<div class='card'") + html.count("<div class='imgneg'") <= PER_PAGE, page
    assert not (site / "report_assets").exists()  # everything under report/ now
    assert any(len(_pages(site, s)) > 1 for s in SECTIONS)  # the demo fills more than one page somewhere


def test_rejects_read_in_words_with_rounded_scores_and_a_legend(site: Path):
    html = "\n".join(p.read_text() for p in _pages(site, "rejects"))
    for stage in ("refine", "filter", "mix", "balance"):
        assert f"{stage}: {stage}:" not in html
    assert "'…'" not in html and "(…)" not in html and not re.search(r"[a-z] # ", html)
    digits = [len(n.replace(".", "").lstrip("0")) for n in re.findall(r"\d+\.\d+", html)]
    assert max(digits) <= 4  # no float with noise digits, in the words or the scores
    assert "What the scores mean" in html and "<th>refine_s1</th>" in html
    assert re.search(r"refine_s1 -?\d+(\.\d{1,2})? / -?\d+(\.\d{1,2})?", html)
    assert "<code class='detail'>" not in html  # no raw JSON


def test_a_reject_that_names_an_object_draws_it(site: Path):
    html = _pages(site, "rejects")[0].read_text()
    assert "object the reject names" in html
    assets = site / "report" / "assets"
    assert any(f.name.startswith("r_") and f.name.endswith("_cand.jpg") for f in assets.iterdir())  # a candidate
    assert any(f.name.startswith("r_") and f.name.endswith("_src.jpg") for f in assets.iterdir())  # beside its source


# ---- in Chromium ---------------------------------------------------------------------------------------


def _first_pages(site: Path) -> list[Path]:
    return [site / "report.html", *[site / "report" / f"{s}.html" for s in SECTIONS]]


def test_no_page_is_too_tall_or_wider_than_the_window(browser, site: Path):  # noqa: F811
    wide = browser.new_page(viewport={"width": 1280, "height": 900})
    narrow = browser.new_page(viewport={"width": NARROW, "height": 900})
    for f in [*_first_pages(site), *(site / "report").glob("*-2.html")]:
        wide.goto(f.as_uri())
        wide.wait_for_load_state("load")
        assert wide.evaluate("document.documentElement.scrollHeight") < MAX_HEIGHT, f
        narrow.goto(f.as_uri())
        narrow.wait_for_load_state("load")
        assert narrow.evaluate("document.documentElement.scrollWidth") <= NARROW, f
    wide.close()
    narrow.close()


def test_pagination_and_nav_links_work_from_disk(browser, site: Path):  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    section = next(s for s in SECTIONS if len(_pages(site, s)) > 1)
    page.goto((site / "report.html").as_uri())
    page.click(f"nav.site a[href='report/{section}.html']")
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/report/{section}.html")
    page.click("nav.pager a[rel='next'] >> nth=0")
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/report/{section}-2.html") and "page 2 of" in page.inner_text("h1")
    page.click("nav.pager a[rel='prev'] >> nth=0")
    page.wait_for_load_state("load")
    assert page.url.endswith(f"/report/{section}.html")
    page.click("nav.site a[href='../report.html']")
    page.wait_for_load_state("load")
    assert page.url.endswith("/report.html")
    page.close()


def test_a_reject_card_shows_its_reason_rounded_scores_and_the_legend(browser, site: Path):  # noqa: F811
    page = browser.new_page(viewport={"width": NARROW, "height": 900})
    texts: list[str] = []
    for f in _pages(site, "rejects"):
        page.goto(f.as_uri())
        page.wait_for_load_state("load")
        texts += page.locator(".card").all_inner_texts()
        if f.name == "rejects.html":
            assert page.locator("details.legend-scores table").is_visible()
    refine = [t for t in texts if "refine_s1" in t]
    assert refine, "no refine reject on the demo"
    assert not any(re.search(r"(\w+): \1:", t) for t in texts)
    assert all(re.search(r"refine_s1 -?[\d.]+ / -?[\d.]+", t) and not re.search(r"\d\.\d{4,}", t) for t in refine)
    page.close()


def test_every_group_of_bad_input_is_drawn_however_rare():
    """The cards show the largest reject groups; an unusable id or a corrupt photo, rejected once in a run
    that rejects in fifty other ways, is what a maintainer must fix, and is drawn too."""
    from collections import Counter

    from hardneg.review.report.gallery import REJECT_GROUPS_SHOWN, RejectScan, shown_groups

    counts = Counter({("negatives", f"reason {i}"): 100 + i for i in range(50)})
    counts[("ingest", "unusable image id: image id contains the control or invisible character U+#")] = 1
    counts[("pixels", "photo unreadable: cannot identify image file '…'")] = 1
    shown = [key for key, _ in shown_groups(RejectScan(counts=counts))]
    assert len(shown) == REJECT_GROUPS_SHOWN + 2
    assert shown[-2:] == [
        ("ingest", "unusable image id: image id contains the control or invisible character U+#"),
        ("pixels", "photo unreadable: cannot identify image file '…'"),
    ]
    assert ("negatives", "reason 0") not in shown  # the smallest of the others still give way


def test_graphs_are_read_for_the_wanted_images_only_whatever_their_ids(tmp_path):
    """The report reads the graphs of the images it draws from the run's stored graphs, passing over every
    other row without parsing its graph; an id with quotes, backslashes or a NUL is still found, and a row
    whose head is not the usual one is parsed as before."""
    import orjson

    from hardneg.review.rundata import RunData

    (tmp_path / "splits").mkdir()
    (tmp_path / "work" / "ingest").mkdir(parents=True)
    graph = {"width": 10, "height": 10, "objects": {"1": {"name": "cup", "x": 1, "y": 1, "w": 2, "h": 2}}}
    odd = 'a"b\\c\x00d'
    rows = [orjson.dumps({"image_id": i, "graph": graph}) for i in ("x", odd, "y")]
    rows.append(orjson.dumps({"graph": graph, "image_id": "z"}))  # another key order: parsed in full
    rows.append(b'{"image_id":"broken","graph":{')  # unreadable, and not wanted: passed over
    (tmp_path / "work" / "ingest" / "graphs-00000.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    run = RunData(tmp_path)
    got = run.graphs({odd: None, "z": {"1"}})
    assert set(got) == {odd, "z"} and got["z"].objects.keys() == {"1"}
    assert run.graphs({"y": None}).keys() == {"y"}
