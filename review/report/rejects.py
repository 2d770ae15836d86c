"""The rejects page: counts per stage and reason, then a seeded sample of each group as readable cards.

A group is the stage plus the reason with its particulars blanked (`gallery.reason_group`), but the page
never shows the blanked key: a group is headed by one of its reasons in full, and every card shows its
own. A card draws what its record names: the candidate beside its source with the edit boxes outlined
(an image candidate), else the source with the sample's path and the objects the record names.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import Any

import pandas as pd

from hardneg.core.ids import shown_id
from hardneg.review.boxes import Box, box_source, edit_boxes
from hardneg.review.report import plots
from hardneg.review.report.assets import esc, img_tag
from hardneg.review.report.gallery import Pictures, RejectScan, shown_groups
from hardneg.review.report.site import Item
from hardneg.review.report.text import clean_reason, fmt_value, is_score, legend_html, named_objects, scores_html

NAMED = "#e000e0"  # magenta: an object or box the reject names (the path keeps red, green, blue)
TABLE_ROWS = 60
SKIP_DETAIL = {"file_name", "raw"}  # shown as the picture, or internal


def _example(scan: RejectScan, key: tuple[str, str]) -> str:
    rows = scan.samples.get(key) or [{}]
    return clean_reason(key[0], rows[0].get("reason"))


def _label(stage: str, reason: str) -> str:
    """A plot's tick label: stage and reason, wrapped to two lines."""
    return textwrap.shorten(f"{stage}: {reason}", 110, placeholder=" …").replace(": ", ":\n", 1)


def rejects_intro(scan: RejectScan, assets: Any) -> str:
    """The counts: a plot per stage, the commonest reasons, and the table of every group (the largest)."""
    by_stage = Counter[str]()
    for (stage, _), n in scan.counts.items():
        by_stage[stage] += n
    top = scan.counts.most_common(TABLE_ROWS)
    table = pd.DataFrame(
        [{"stage": s, "reason (one of the group)": _example(scan, (s, r)), "count": n} for (s, r), n in top]
    )
    rest = sum(scan.counts.values()) - int(table["count"].sum())
    if rest:
        table.loc[len(table)] = {
            "stage": "(other)",
            "reason (one of the group)": f"{len(scan.counts) - len(top)} more groups",
            "count": rest,
        }
    stage_series = pd.Series(dict(by_stage.most_common())).rename("rejects")
    url = assets.plot(
        "plot_rejects_by_stage",
        lambda o: plots.horizontal_bars(stage_series, "rejects per stage", o, xlabel="rejects"),
    )
    reasons = pd.Series({_label(s, _example(scan, (s, r))): n for (s, r), n in scan.counts.most_common(12)})
    url2 = assets.plot(
        "plot_rejects_by_reason",
        lambda o: plots.horizontal_bars(reasons, "top reject reasons", o, xlabel="rejects"),
    )
    names = {k for k in {k for rows in scan.samples.values() for r in rows for k in _detail(r)} if is_score(k)}
    return (
        f"<p>{scan.total} rejects in {len(scan.counts)} groups. A group's reasons differ only in their numbers, "
        "quoted names and notes in parentheses; one of them heads the group, and each card shows its own.</p>"
        f"<div class='plots'>{img_tag(url, 'plot')}{img_tag(url2, 'plot')}</div>"
        "<div class='scroll'>"
        + table.to_html(border=0, index=False, escape=True, classes="left")
        + "</div>"
        + legend_html(names)
        + "<p class='legend small'><span><i style='border-color:#ff2020'></i>target</span>"
        "<span><i style='border-color:#20d020'></i>related</span>"
        f"<span><i style='border-color:{NAMED}'></i>object the reject names</span>"
        "<span><i style='border-color:#ff9900'></i>edited region</span></p>"
    )


def _detail(r: dict[str, Any]) -> dict[str, Any]:
    d = r.get("detail")
    return d if isinstance(d, dict) else {}


class RejectCards:
    """Draws reject samples with the run's pictures, graphs and kept records."""

    def __init__(self, pictures: Pictures, scan: RejectScan):
        self.pictures, self.scan = pictures, scan
        self.run, self.assets = pictures.run, pictures.assets

    def items(self) -> list[Item]:
        out = []
        for gi, (key, count) in enumerate(shown_groups(self.scan)):
            stage = key[0]
            rows = self.scan.samples[key]
            head = (
                f"<h3 id='r{gi}'><span class='tag'>{esc(stage)}</span> {esc(_example(self.scan, key))} "
                f"<small>{len(rows)} of {count}</small></h3>"
            )
            out += [Item(self.card(r, f"r_{gi}_{j}"), head) for j, r in enumerate(rows)]
        return out

    def named_boxes(self, r: dict[str, Any]) -> list[Box]:
        """Boxes of what the record names: `detail.object`, objects its reason names, `detail.bbox`."""
        d = _detail(r)
        graph = self.pictures.graphs.get(r["image_id"]) if isinstance(r.get("image_id"), str) else None
        ids = ([d["object"]] if isinstance(d.get("object"), str) else []) + named_objects(r.get("reason"))
        boxes = []
        for oid in dict.fromkeys(ids):
            o = graph.objects.get(oid) if graph is not None else None
            if o is not None:
                boxes.append(Box(o.x, o.y, o.w, o.h, color=NAMED, role="named", label=o.name))
        b = d.get("bbox")
        if isinstance(b, list) and len(b) == 4 and all(isinstance(x, int | float) for x in b):
            boxes.append(Box(*map(float, b), color=NAMED, role="named", label="bbox"))
        return boxes

    def pictures_html(self, r: dict[str, Any], name: str) -> str:
        d = _detail(r)
        rec = self.pictures.record(r.get("sample_id"))
        candidate = self.run.run_file(d.get("file_name"))
        if candidate is not None:  # an image candidate: beside its source, the edit outlined on both
            edits = edit_boxes(rec) if rec is not None else []
            image_id = box_source(rec, None)[0] if rec is not None else r.get("image_id")
            src = self.assets.thumb(f"{name}_src", self.run.source_image(image_id), edits, 200)
            cand = self.assets.thumb(f"{name}_cand", candidate, edits, 200)
            note = "edit outlined" if edits else "edit boxes not recorded"
            return (
                f"<div class='pair'><figure>{img_tag(src, 'source', 'small')}<figcaption>source</figcaption></figure>"
                f"<figure>{img_tag(cand, 'rejected candidate', 'small')}<figcaption>candidate ({note})</figcaption>"
                "</figure></div>"
            )
        image_id = r.get("image_id") if isinstance(r.get("image_id"), str | int) else None
        boxes: list[Box] = []
        if rec is not None:
            image_id, path_rec = box_source(rec, None)
            boxes = self.pictures.boxes(path_rec, image_id)
        boxes += self.named_boxes(r)
        if image_id is None:
            return ""  # a reject of no image (a quota, a mix share): its words say it all
        path = self.run.source_image(image_id)
        return img_tag(self.assets.thumb(name, path, boxes, 240), "reject", "small")

    def card(self, r: dict[str, Any], name: str) -> str:
        stage = str(r.get("stage", "?"))
        d = _detail(r)
        facts = [("stage", stage)]
        if r.get("image_id") is not None:  # a rejected id may hold a NUL or a line break: shown escaped
            facts.append(("image", shown_id(str(r["image_id"]))))
        if r.get("sample_id") is not None:
            facts.append(("sample", r["sample_id"]))
        facts += [(k, v) for k, v in d.items() if k not in SKIP_DETAIL and not is_score(k) and v is not None]
        rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(fmt_value(v))}</dd>" for k, v in facts)
        scores = {k: v for k, v in d.items() if is_score(k)}
        return (
            f"<div class='card'>{self.pictures_html(r, name)}<div class='body'>"
            f"<p class='reason'>{esc(clean_reason(stage, r.get('reason')))}</p>"
            f"<dl class='detail'>{rows}</dl>{scores_html(scores)}</div></div>"
        )
