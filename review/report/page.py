"""`hardneg report RUN`: RUN/report.html, the overview, plus RUN/report/: a page per section (positives,
text negatives, image negatives, rejects, filters and scores, exports, human review), cut into pages of a
fixed number of cards, with the JPEG thumbnails and PNG plots under RUN/report/assets/.

Opens from disk with no server: relative links only, no script. Each section is built on its own; one
whose inputs are missing says "not available", and one that fails says so and logs why, so the report
of a partial, older or newer run folder is still written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hardneg.core.plugins import IMAGE_NEGATIVES, TEXT_NEGATIVES
from hardneg.filters.human.audit import audit_summary
from hardneg.review.report.assets import MAX_BYTES, Assets, esc
from hardneg.review.report.exports import export_sections
from hardneg.review.report.rejects import RejectCards, rejects_intro
from hardneg.review.report.site import Item, Section, anchor_pages, reset, write_overview, write_section
from hardneg.review.report.stats import ReportData, audit_line, edits_html, manifest_html, na
from hardneg.review.report.text import kinds_html, legend_html
from hardneg.review.rundata import RunData

log = logging.getLogger(__name__)


def _guarded(title: str, make: Callable[[], Any], default: Any) -> Any:
    """`make()`, or `default` when it fails: one broken section must not cost the others."""
    try:
        return make()
    except Exception as e:
        log.warning("report section %r failed", title, exc_info=True)
        return default(f"<p class='na'>This section failed: {esc(type(e).__name__)}: {esc(e)}</p>")


BOX_LEGEND = (
    "<p class='legend small'><span><i style='border-color:#ff2020'></i>target</span>"
    "<span><i style='border-color:#20d020'></i>related 1</span><span><i style='border-color:#2f6bff'></i>related 2"
    "</span><span><i style='border-color:#ff9900'></i>edited region</span></p>"
)
TITLES = {
    "positives": ("Positives per path type and level", "Positives"),
    "text-negatives": ("Text negatives beside their positive", "Text negatives"),
    "image-negatives": ("Image negatives: source, chosen candidate, the others", "Image negatives"),
    "rejects": ("Rejects per stage and reason", "Rejects"),
    "filters": ("Filters and scores", "Filters"),
    "exports": ("Other benchmark shapes: TRICD, probes, ImageCoDe", "Exports"),
    "review": ("Human review", "Review"),
}


def _section(key: str, rep: ReportData, make: Callable[[], Section]) -> Section:
    title, nav = TITLES[key]
    return _guarded(title, make, lambda msg: Section(key, title, nav, intro=msg))


def _score_names(records: list[dict[str, Any]]) -> set[str]:
    return {k for r in records if isinstance(r.get("scores"), dict) for k in r["scores"]}


def _sections(rep: ReportData) -> list[Section]:
    pics = rep.pictures

    def sec(key: str, **kw: Any) -> Section:
        return Section(key, *TITLES[key], **kw)

    positives = _section("positives", rep, lambda: sec("positives", intro=BOX_LEGEND, items=pics.positive_items()))
    pics.positive_pages = anchor_pages(positives)
    texts = [n for n in rep.run.negatives if n.get("negative_cate") != "image"]
    images = [n for n in rep.run.negatives if n.get("negative_cate") == "image"]
    exports = [
        Item(f"<h2 id='{a}'>{esc(t)}</h2>{_guarded(t, lambda m=m: m(rep), str)}") for a, t, m in export_sections()
    ]
    return [
        positives,
        _section(
            "text-negatives",
            rep,
            lambda: sec(
                "text-negatives",
                intro=BOX_LEGEND + kinds_html(TEXT_NEGATIVES, texts) + legend_html(_score_names(texts)),
                items=pics.text_negative_items(),
            ),
        ),
        _section(
            "image-negatives",
            rep,
            lambda: sec(
                "image-negatives",
                intro=BOX_LEGEND + kinds_html(IMAGE_NEGATIVES, images) + legend_html(_score_names(images)),
                items=pics.image_negative_items(rep.scan),
                per_page=8,
                grid="",
            ),
        ),
        _section(
            "rejects",
            rep,
            lambda: sec(
                "rejects",
                intro=rejects_intro(rep.scan, rep.assets) if rep.scan.counts else na("rejects"),
                items=RejectCards(pics, rep.scan).items(),
            ),
        ),
        _section(
            "filters",
            rep,
            lambda: sec(
                "filters",
                intro=f"<h2 id='filters'>Filter pass rates</h2>{_guarded('filters', rep.filters, str)}"
                f"<h2 id='scores'>Score histograms</h2>{_guarded('scores', rep.scores, str)}"
                + legend_html(_score_names([*rep.run.positives, *rep.run.negatives])),
            ),
        ),
        _section("exports", rep, lambda: sec("exports", items=exports, per_page=1, grid="")),  # a shape a page
        _section("review", rep, lambda: sec("review", intro=_guarded("review", rep.review, str))),
    ]


def _overview(rep: ReportData, sections: list[Section], notes: list[str], seed: int, per_group: int) -> str:
    links = "".join(
        f"<li><a href='report/{s.key}.html'>{esc(s.nav)}</a>: {esc(s.title)}"
        + (
            f" <small>({len(s.items)} cards on {s.pages()} page{'s' if s.pages() > 1 else ''})</small>"
            if s.items
            else ""
        )
        + "</li>"
        for s in sections
    )
    shapes = [a for a, _, _ in export_sections() if (rep.run.root / a / "summary.json").is_file()]
    return (
        f"<h1>hardneg report: {esc(rep.run.root.name)}</h1>"
        f"<p class='meta'>written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} · seed {seed} · "
        f"{per_group} samples per group</p>"
        + (
            f"<h2 id='warnings'>Warnings</h2><ul class='na'>{''.join(f'<li>{esc(n)}</li>' for n in notes)}</ul>"
            if notes
            else ""
        )
        + (f"<p class='audit'>{esc(line)}</p>" if (line := audit_line(audit_summary(rep.run.root))) else "")
        + f"<h2 id='sections'>Sections</h2><ul class='sections'>{links}</ul>"
        + f"<p class='small'>Other benchmark shapes exported: {esc(', '.join(shapes) or 'none')}.</p>"
        + f"<h2 id='run'>Run</h2>{manifest_html(rep.run)}"
        + f"<h2 id='counts'>The benchmark's shape</h2>{_guarded('counts', rep.counts, str)}"
        + f"<h2 id='edits'>Image edits</h2>{_guarded('image edits', lambda: edits_html(rep.run), str)}"
    )


def build_report(run_dir: str | Path, *, per_group: int = 12, seed: int = 0, max_bytes: int = MAX_BYTES) -> Path:
    """Write RUN/report.html (the overview) and RUN/report/ (section pages, assets); returns the overview.

    `per_group` positives and text negatives per (type, level) and half as many image negatives are drawn
    with `seed`; the assets stop growing at `max_bytes` (pictures beyond say so).
    """
    t0 = time.perf_counter()
    run = RunData(run_dir)
    folder = reset(run.root)
    assets = Assets(run.root, max_bytes)
    rep = ReportData(run, assets, per_group, seed)
    sections = _sections(rep)
    for s in sections:
        write_section(folder, sections, s, run.root.name)
    warned = run.manifest.get("counts", {}).get("warnings") if isinstance(run.manifest.get("counts"), dict) else None
    notes = [*(warned or []), *sorted(set(run.notes))]
    if assets.refused:
        notes.append(f"{assets.refused} pictures left out: the assets reached their {max_bytes // 1_000_000} MB budget")
    body = _overview(rep, sections, notes, seed, per_group)
    out = write_overview(run.root, sections, f"hardneg report: {run.root.name}", body)
    log.info("report: %s (%d KB of assets) in %.1fs", out, assets.used // 1024, time.perf_counter() - t0)
    return out
