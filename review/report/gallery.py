"""The report's pictures: seeded samples per group, the rejects scan, and the cards' HTML.

Every group (path type x level, negative type x level, reject stage x reason) shows a seeded sample
of at most `per_group` items and counts the rest, so the report of a GQA-scale run is as small as the
demo's.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from hardneg.review.boxes import Box, box_source, edit_boxes, path_boxes, wanted_objects
from hardneg.review.report.assets import Assets, esc, img_tag
from hardneg.review.report.site import Item
from hardneg.review.report.text import clean_reason, fmt_value, named_objects, scores_html
from hardneg.review.rundata import ImageGraph, RunData

REJECT_SAMPLES = 3  # shown per (stage, reason) group
REJECT_GROUPS_SHOWN = 40  # groups with pictures; the table counts every group
SCORE_RESERVOIR = 50_000  # rejected scores kept per histogram
INPUT_STAGES = frozenset({"ingest"})  # rejects the inputs themselves: unusable ids, malformed graphs
UNREADABLE = ("photo unreadable", "source image unreadable")  # a photo file that cannot be decoded


def sample(items: list[dict[str, Any]], k: int, seed: int, group: str) -> list[dict[str, Any]]:
    """A seeded sample, independent of input order (sorted by id first)."""
    ordered = sorted(items, key=lambda r: r.get("id", 0))
    if len(ordered) <= k:
        return ordered
    return sorted(random.Random(f"{seed}:{group}").sample(ordered, k), key=lambda r: r.get("id", 0))


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_PAREN = re.compile(r"\([^()]*\)")
_NUMBER = re.compile(r"(?<![A-Za-z_\d])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![A-Za-z_\d])")  # not in "0_hop", "L2"


@lru_cache(maxsize=1 << 16)  # reasons repeat: a GQA run has millions of rejects and few distinct reasons
def reason_group(reason: str) -> str:
    """A reject reason with its particulars blanked, so that reasons group: numbers, quotes, parentheses.

    A grouping key only: pages show a group by one of its reasons in full (`report_text.clean_reason`)."""
    s = _QUOTED.sub("'…'", reason)
    s = _PAREN.sub("(…)", s)
    s = _NUMBER.sub("#", s)
    return " ".join(s.split())[:160]


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _numeric(v: Any) -> float | None:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, list) and len(v) == 2 and all(isinstance(x, int | float) for x in v):
        return float(v[0]) - float(v[1])  # a (positive, negative) pair of text scores: the gap
    return None


@dataclass
class RejectScan:
    """One pass over rejects.jsonl: counts, a seeded reservoir per group, losers of sampled image negatives."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    samples: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    losers: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    scores: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    total: int = 0


def scan_rejects(run: RunData, want_losers: set[int], score_names: set[str], seed: int) -> RejectScan:
    scan = RejectScan()
    rng = random.Random(f"{seed}:rejects")
    seen_scores: Counter[tuple[str, str]] = Counter()
    for r in run.iter_rejects():
        scan.total += 1
        stage, reason = str(r.get("stage", "?")), str(r.get("reason", ""))
        key = (stage, reason_group(reason))
        scan.counts[key] += 1
        n = scan.counts[key]
        if (bucket := scan.samples.get(key)) is None:
            bucket = scan.samples[key] = []
        if len(bucket) < REJECT_SAMPLES:
            bucket.append(r)
        elif (j := rng.randrange(n)) < REJECT_SAMPLES:
            bucket[j] = r
        if stage == "filter" or stage == "refine":
            detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
            if stage == "filter" and isinstance(r.get("sample_id"), int) and r["sample_id"] in want_losers:
                scan.losers[r["sample_id"]].append(r)
            kind = "image_negative" if "file_name" in detail else "text_negative"
            for name in score_names & detail.keys():
                if (v := _numeric(detail[name])) is not None:
                    skey = (kind, name)
                    seen_scores[skey] += 1
                    vals = scan.scores[skey]
                    if len(vals) < SCORE_RESERVOIR:
                        vals.append(v)
                    elif (j := rng.randrange(seen_scores[skey])) < SCORE_RESERVOIR:
                        vals[j] = v
    return scan


def shown_groups(scan: RejectScan) -> list[tuple[tuple[str, str], int]]:
    """The groups drawn as cards: the largest `REJECT_GROUPS_SHOWN`, then every other group of bad input
    (`bad_input`): an unusable id, a malformed graph or a corrupt photo is what a maintainer must fix, however
    rare, and a run whose other stages reject in many ways would push it out of the largest."""
    top = scan.counts.most_common(REJECT_GROUPS_SHOWN)
    shown = {key for key, _ in top}
    return top + [(key, n) for key, n in scan.counts.most_common() if bad_input(*key) and key not in shown]


def bad_input(stage: str, reason: str) -> bool:
    """Whether a reject group is about the inputs themselves: an id, a graph or a photo file."""
    return stage in INPUT_STAGES or reason.startswith(UNREADABLE)


class Pictures:
    """Samples positives, text and image negatives per group, loads the graphs they need in one pass, and
    renders their cards as `Item`s for the section pages."""

    def __init__(self, run: RunData, assets: Assets, per_group: int, seed: int):
        self.run, self.assets, self.per_group, self.seed = run, assets, per_group, seed
        groups: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        for p in run.positives:
            groups[(str(p.get("tuple_type", "?")), _int(p.get("level")))].append(p)
        self.gallery = {g: (len(rs), sample(rs, per_group, seed, f"pos:{g}")) for g, rs in sorted(groups.items())}
        ig: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        tg: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        for n in run.negatives:
            key = (str(n.get("negative_type", "?")), _int(n.get("negative_level")))
            (ig if n.get("negative_cate") == "image" else tg)[key].append(n)
        k = max(1, per_group // 2)
        self.image_negatives = {g: (len(rs), sample(rs, k, seed, f"img:{g}")) for g, rs in sorted(ig.items())}
        self.text_negatives = {g: (len(rs), sample(rs, per_group, seed, f"txt:{g}")) for g, rs in sorted(tg.items())}
        self.graphs: dict[str, ImageGraph] = {}
        self.positive_pages: dict[str, str] = {}  # "s<id>" -> the positives page file, set once paginated

    def sampled_image_negative_ids(self) -> set[int]:
        return {n["id"] for _, rs in self.image_negatives.values() for n in rs}

    def load_graphs(self, scan: RejectScan) -> None:
        pairs = [box_source(p, None) for _, rs in self.gallery.values() for p in rs]
        pairs += [box_source(n, None) for _, rs in self.image_negatives.values() for n in rs]
        pairs += [
            box_source(n, self.record(n.get("positive_id"))) for _, rs in self.text_negatives.values() for n in rs
        ]
        drawn = [scan.samples[key] for key, _ in shown_groups(scan)]  # only the groups the page draws
        for rows in drawn:  # a reject's sample, when the splits hold it, is drawn with its path
            pairs += [box_source(rec, None) for r in rows if (rec := self.record(r.get("sample_id")))]
        wanted = wanted_objects(pairs)
        for rows in drawn:
            for r in rows:
                d = r.get("detail") if isinstance(r.get("detail"), dict) else {}
                named = [d["object"]] if isinstance(d.get("object"), str) else []
                if isinstance(r.get("image_id"), str) and (named := named + named_objects(r.get("reason"))):
                    ids = wanted.setdefault(r["image_id"], set())
                    if ids is not None:
                        ids.update(named)
        self.graphs = self.run.graphs(wanted)

    def record(self, sample_id: Any) -> dict[str, Any] | None:
        """The kept record with this id, if the splits hold it (an id of any other type finds none)."""
        return self.run.by_id.get(sample_id) if isinstance(sample_id, int) else None

    def boxes(self, rec: dict[str, Any], image_id: str | None) -> list[Box]:
        return path_boxes(rec, self.graphs.get(image_id) if image_id else None)

    # ---- positives --------------------------------------------------------------------------------

    def positive_items(self) -> list[Item]:
        """The sampled positives as cards under a heading per (path type, level)."""
        items = []
        for (ttype, level), (total, rows) in self.gallery.items():
            head = f"<h3 id='g-{esc(ttype)}-L{level}'>{esc(ttype)} L{level} <small>{len(rows)} of {total}</small></h3>"
            items += [Item(self._positive_card(p), head, f"s{p['id']}") for p in rows]
        return items

    def _positive_card(self, p: dict[str, Any]) -> str:
        image_id, rec = box_source(p, None)
        url = self.assets.thumb(f"p_{p['id']}", self.run.source_image(image_id), self.boxes(rec, image_id), 320)
        rewrites = [r for r in p.get("rewrites") or [] if isinstance(r, str)]
        lines = [f"<p class='expr'>{esc(p.get('expression', ''))}</p>"]
        if p.get("template_expression") and p.get("template_expression") != p.get("expression"):
            lines.append(f"<p class='small'>template: {esc(p['template_expression'])}</p>")
        if rewrites:
            lines.append("<p class='small'>rewrites:</p><ul class='small'>")
            lines += [f"<li>{esc(r)}</li>" for r in rewrites]
            lines.append("</ul>")
        negs = self.run.negatives_of.get(p["id"], [])
        text = [n for n in negs if n.get("negative_cate") != "image"]
        if text:
            lines.append("<p class='small'>text negatives (changed words marked):</p><ul class='negs'>")
            for n in text[:6]:
                tag = f"{n.get('negative_type', '?')} L{n.get('negative_level', '?')}"
                words = marked(n.get("expression", ""), p.get("expression", ""))
                lines.append(f"<li><span class='tag'>{esc(tag)}</span> {words}{scores_html(n.get('scores'))}</li>")
            if len(text) > 6:
                lines.append(f"<li>{len(text) - 6} more on the text negatives pages</li>")
            lines.append("</ul>")
        n_img = len(negs) - len(text)
        meta = f"{esc(p.get('split', ''))} · id {esc(p['id'])} · image {esc(p.get('image_id', ''))}"
        if n_img:
            meta += f" · {n_img} image negative{'s' if n_img > 1 else ''}"
        return (
            f"<div class='card' id='s{esc(p['id'])}'>{img_tag(url, 'positive', 'thumb')}"
            f"<div class='body'>{''.join(lines)}<p class='meta'>{meta}</p></div></div>"
        )

    # ---- text negatives ---------------------------------------------------------------------------

    def text_negative_items(self) -> list[Item]:
        """Sampled text negatives beside their positive, per (negative type, level)."""
        items = []
        for (ntype, level), (total, rows) in self.text_negatives.items():
            head = f"<h3 id='t-{esc(ntype)}-L{level}'>{esc(ntype)} L{level} <small>{len(rows)} of {total}</small></h3>"
            items += [Item(self._text_negative_card(n), head, f"s{n['id']}") for n in rows]
        return items

    def _text_negative_card(self, n: dict[str, Any]) -> str:
        pos = self.record(n.get("positive_id"))
        image_id, rec = box_source(n, pos)
        name = f"p_{pos['id']}" if pos is not None else f"t_{n['id']}"
        url = self.assets.thumb(name, self.run.source_image(image_id), self.boxes(rec, image_id), 320)
        positive = pos.get("expression", "") if pos is not None else ""
        return (
            f"<div class='card' id='s{esc(n['id'])}'>{img_tag(url, 'positive image', 'thumb')}<div class='body'>"
            f"<p class='small'>positive: {esc(positive) or '(not in the splits)'}</p>"
            f"<p class='expr'>{marked(n.get('expression', ''), positive)}</p>{scores_html(n.get('scores'))}"
            f"<p class='meta'>{esc(n.get('split', ''))} · id {esc(n['id'])} · positive "
            f"{self.positive_link(n.get('positive_id'))}</p></div></div>"
        )

    # ---- image negatives -----------------------------------------------------------------------

    def image_negative_items(self, scan: RejectScan) -> list[Item]:
        items = []
        for (ntype, level), (total, rows) in self.image_negatives.items():
            head = f"<h3 id='i-{esc(ntype)}-L{level}'>{esc(ntype)} L{level} <small>{len(rows)} of {total}</small></h3>"
            items += [
                Item(self._image_negative_card(n, scan.losers.get(n["id"], [])), head, f"s{n['id']}") for n in rows
            ]
        return items

    def _image_negative_card(self, n: dict[str, Any], losers: list[dict[str, Any]]) -> str:
        image_id, rec = box_source(n, None)
        src = self.assets.thumb(f"i_{n['id']}_src", self.run.source_image(image_id), self.boxes(rec, image_id), 300)
        chosen = self.assets.thumb(f"i_{n['id']}_chosen", self.run.run_file(n.get("file_name")), edit_boxes(n), 300)
        why = {(r.get("detail") or {}).get("file_name"): r for r in losers if isinstance(r.get("detail"), dict)}
        others = []
        for i, c in enumerate(n.get("candidates") or []):
            if c == n.get("file_name") or not isinstance(c, str):
                continue
            url = self.assets.thumb(f"i_{n['id']}_c{i}", self.run.run_file(c), edit_boxes(n), 150)
            r = why.get(c)
            caption = esc(clean_reason(str(r.get("stage", "")), r.get("reason"))) if r else "no reject recorded"
            d = r.get("detail") if r and isinstance(r.get("detail"), dict) else {}
            others.append(
                f"<figure class='cand'>{img_tag(url, f'candidate {i}', 'small')}"
                f"<figcaption>{caption}{scores_html(d, skip={'negative_type', 'file_name'})}</figcaption></figure>"
            )
        edit = fmt_value(n.get("edit")) if n.get("edit") is not None else "?"
        return (
            f"<div class='imgneg' id='s{esc(n['id'])}'>"
            f"<figure>{img_tag(src, 'source', 'thumb')}<figcaption>source {esc(image_id)}</figcaption></figure>"
            f"<figure>{img_tag(chosen, 'chosen candidate', 'thumb')}<figcaption>chosen: {esc(n.get('file_name', '?'))}"
            f"{scores_html(n.get('scores'))}</figcaption></figure>"
            f"<div class='body'><p class='expr'>{esc(n.get('expression', ''))}</p>"
            f"<p class='small'>edit: {esc(edit)}</p>"
            f"<p class='meta'>id {esc(n['id'])} · positive {self.positive_link(n.get('positive_id'))}</p>"
            f"<div class='cands'>{''.join(others) or '<p class=small>no other candidates</p>'}</div></div></div>"
        )

    def positive_link(self, pid: object) -> str:
        """A link to the positive's card on its page when it was sampled, else its id."""
        page = self.positive_pages.get(f"s{pid}") if isinstance(pid, int) else None
        return f"<a href='{esc(page)}#s{esc(pid)}'>{esc(pid)}</a>" if page else esc(pid)


def marked(text: Any, against: Any) -> str:
    """`text` escaped, with the words that differ from `against` in <mark>: where a negative changed."""
    a, b = str(against or "").split(), str(text or "").split()
    if not a:
        return esc(" ".join(b))
    out = []
    for op, _, _, j1, j2 in SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        seg = esc(" ".join(b[j1:j2]))
        if seg:
            out.append(seg if op == "equal" else f"<mark>{seg}</mark>")
    return " ".join(out)
