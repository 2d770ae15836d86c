"""The report as a small static site: `RUN/report.html` (the overview) and `RUN/report/<section>.html`.

A section is an introduction plus a list of items (cards); its items are cut into pages of a fixed
size (`<section>.html`, `<section>-2.html`, ...), so no page grows with the run. Every page carries the
same nav and a prev/next pager; links are relative and the stylesheet is a file beside the pages, so
the folder opens from disk with no server and no script.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from hardneg.core.io import atomic_write_bytes
from hardneg.review.report.assets import esc

FOLDER = "report"  # RUN/report/: the section pages, report.css and assets/
ENTRY = "report.html"  # RUN/report.html: the overview, the file every caller names
CSS_SOURCE = Path(__file__).parents[1] / "static" / "report.css"
LEGACY = ("report_assets",)  # folders an older report wrote into the run folder; removed on rebuild


@dataclass
class Item:
    """One card of a section; `group` is the heading it sits under (repeated when a page starts mid-group)."""

    html: str
    group: str = ""
    anchor: str | None = None


PER_PAGE = 24  # cards per page of a section


@dataclass
class Section:
    key: str  # the file name stem: report/<key>.html
    title: str
    nav: str
    intro: str = ""  # on the first page only
    items: list[Item] = field(default_factory=list)
    per_page: int = PER_PAGE  # image negatives, a wide row each: 8
    grid: str = "cards"  # the CSS class of a group's grid; "" for full-width rows (image negatives)

    def pages(self) -> int:
        return max(1, -(-len(self.items) // self.per_page))


def page_file(key: str, n: int) -> str:
    """File name of page `n` (from 1) of a section, inside RUN/report/."""
    return f"{key}.html" if n == 1 else f"{key}-{n}.html"


def anchor_pages(section: Section) -> dict[str, str]:
    """anchor -> the page file that holds it, to link a card from another section."""
    return {
        it.anchor: page_file(section.key, i // section.per_page + 1)
        for i, it in enumerate(section.items)
        if it.anchor is not None
    }


def reset(root: Path) -> Path:
    """An empty RUN/report/ (ours alone: rebuilt from scratch each time), older layouts removed."""
    folder = root / FOLDER
    for name in (FOLDER, *LEGACY):
        if (root / name).is_dir():
            shutil.rmtree(root / name)
    folder.mkdir(parents=True)
    shutil.copyfile(CSS_SOURCE, folder / "report.css")
    return folder


def nav_html(sections: list[Section], here: str, *, top: bool) -> str:
    """The shared nav; `top` for the overview (links go into report/), else for a page inside report/."""
    base, home = (f"{FOLDER}/", ENTRY) if top else ("", f"../{ENTRY}")
    links = [f"<a href='{home}'{' class=here' if here == 'overview' else ''}>Overview</a>"]
    for s in sections:
        cls = " class=here" if s.key == here else ""
        links.append(f"<a href='{base}{page_file(s.key, 1)}'{cls}>{esc(s.nav)}</a>")
    return f"<nav class='site'>{''.join(links)}</nav>"


def pager_html(section: Section, n: int) -> str:
    """prev / page numbers / next; empty for a one-page section."""
    total = section.pages()
    if total == 1:
        return ""
    parts = []
    if n > 1:
        parts.append(f"<a rel='prev' href='{page_file(section.key, n - 1)}'>‹ prev</a>")
    for i in range(1, total + 1):
        if i == n:
            parts.append(f"<span class='here'>{i}</span>")
        elif total <= 12 or abs(i - n) <= 2 or i in (1, total):
            parts.append(f"<a href='{page_file(section.key, i)}'>{i}</a>")
        elif abs(i - n) == 3:
            parts.append("<span>…</span>")
    if n < total:
        parts.append(f"<a rel='next' href='{page_file(section.key, n + 1)}'>next ›</a>")
    return f"<nav class='pager' aria-label='pages'>page {n} of {total}: {' '.join(parts)}</nav>"


def items_html(section: Section, items: list[Item]) -> str:
    """Items under their group headings; a group's cards share one grid."""
    out: list[str] = []
    group: str | None = None
    open_grid = False
    for it in items:
        if it.group != group:
            if open_grid:
                out.append("</div>")
            out.append(it.group)
            group = it.group
            open_grid = bool(section.grid)
            if open_grid:
                out.append(f"<div class='{section.grid}'>")
        out.append(it.html)
    if open_grid:
        out.append("</div>")
    return "\n".join(out)


def document(title: str, css: str, body: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><link rel='stylesheet' href='{css}'></head><body>{body}</body></html>"
    )


def write_section(folder: Path, sections: list[Section], section: Section, run_name: str) -> list[Path]:
    """Every page of one section; returns their paths."""
    out = []
    nav = nav_html(sections, section.key, top=False)
    for n in range(1, section.pages() + 1):
        chunk = section.items[(n - 1) * section.per_page : n * section.per_page]
        shown = f" <small>page {n} of {section.pages()}</small>" if section.pages() > 1 else ""
        pager = pager_html(section, n)
        body = (
            f"{nav}<h1>{esc(section.title)}{shown}</h1><p class='meta'>hardneg report: {esc(run_name)}</p>"
            + (section.intro if n == 1 else "")
            + pager
            + items_html(section, chunk)
            + pager
        )
        path = folder / page_file(section.key, n)
        atomic_write_bytes(path, document(f"{section.title}: {run_name}", "report.css", body).encode())
        out.append(path)
    return out


def write_overview(root: Path, sections: list[Section], title: str, body: str) -> Path:
    """RUN/report.html; its pictures are under report/assets/."""
    html = nav_html(sections, "overview", top=True) + body.replace('src="assets/', f'src="{FOLDER}/assets/')
    path = root / ENTRY
    atomic_write_bytes(path, document(title, f"{FOLDER}/report.css", html).encode())
    return path
