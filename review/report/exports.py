"""The report's sections for the other benchmark shapes: each registered export with a folder of its own
(`exports/base.py`), in the registry's order.

Each reads its export folder (`RUN/<shape>/`: `summary.json` and the per-split JSON records) and shows the
counts per split; the shapes this module knows (`GALLERIES`) add a seeded sample of cards in the style of
the gallery: TRICD positive pairs with their phrases' boxes beside their negative pairs; Probe-R
comparisons, Probe-C 2 x 2 groups and Probe-B's images per filler; ImageCoDe sets with the original
marked. A shape that was not exported says so.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.plugins import EXPORTS
from hardneg.core.splits import SPLITS
from hardneg.review.boxes import RELATED, TARGET, Box
from hardneg.review.report.assets import esc, img_tag
from hardneg.review.report.gallery import sample

PHRASE_COLORS = (TARGET, *RELATED)


def _scan(root: Path, rel: str, *fields: str) -> list[dict[str, Any]]:
    """Every record of an export's per-split JSON files (those with an int id), as its `fields` and where
    it lies (`_at`): the cards are drawn from these, and only the drawn ones are read whole (`_whole`), so
    the report never holds an export's every record (GQA train's probes are half a million)."""
    out: list[dict[str, Any]] = []
    for split in SPLITS:
        for k, r in enumerate(_each(root / f"{rel}/{split}.json")):
            if isinstance(r, dict) and isinstance(r.get("id"), int):
                out.append({**{f: r.get(f) for f in fields}, "id": r["id"], "_at": (f"{rel}/{split}.json", k)})
    return out


def _whole(root: Path, light: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The whole records of `light` (found by `_scan`, of any tables), by where they lie (`_at`)."""
    wanted: dict[str, set[int]] = defaultdict(set)
    for r in light:
        wanted[r["_at"][0]].add(r["_at"][1])
    got: dict[tuple[str, int], dict[str, Any]] = {}
    for file, ks in wanted.items():
        for k, line in enumerate(_each(root / file, parse=False)):
            if k in ks:
                got[(file, k)] = orjson.loads(line) if isinstance(line, bytes) else line
    return got


def _each(path: Path, parse: bool = True) -> Iterator[Any]:
    """The records of a JSON array file, one at a time: read a line at a time from the layout the exports
    write (`[`, then a record a line), told by its second line being a whole object; any other layout is
    parsed whole. `parse=False`: that layout's lines unparsed (any other's records come parsed)."""
    if not path.exists():
        return
    with path.open("rb") as f:
        head = [f.readline(), f.readline()]
        second = head[1].strip().removesuffix(b",")
        if head[0].strip() != b"[" or not second.startswith(b"{") or not _is_json(second):
            rows = orjson.loads(b"".join(head) + f.read())
            yield from rows if isinstance(rows, list) else ()
            return
        for line in itertools.chain(head[1:], f):
            line = line.strip().removesuffix(b",")
            if line and line != b"]":
                yield orjson.loads(line) if parse else line


def _is_json(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


def _counts(root: Path, shape: str) -> str:
    f = root / shape / "summary.json"
    if not f.exists():
        return f"<p class='na'>{esc(shape)}: not exported in this run (no {esc(shape)}/summary.json).</p>"
    s = orjson.loads(f.read_bytes())
    if not s.get("enabled", True):
        return f"<p class='na'>{esc(shape)}: disabled by the config (exports.{esc(shape)}.enabled).</p>"
    rows = "".join(
        f"<tr><th>{esc(k)}</th>" + "".join(f"<td>{esc(v.get(x, 0))}</td>" for x in SPLITS) + "</tr>"
        for k, v in (s.get("counts") or {}).items()
    )
    head = "<tr><th></th>" + "".join(f"<th>{x}</th>" for x in SPLITS) + "</tr>"
    return f"<table>{head}{rows}</table>"


def _thumb(r: Any, name: str, rel: Any, boxes: list[Box], side: int, alt: str) -> str:
    url = r.assets.thumb(name, r.run.run_file(rel), boxes, side) if rel else None
    return img_tag(url, alt, "small" if side < 200 else "thumb")


def tricd_html(r: Any) -> str:
    """Positive pairs per path type with their phrases' boxes, beside their negative pairs."""
    root = r.run.root
    parts = [_counts(root, "tricd")]
    negatives: dict[int, list[dict[str, Any]]] = defaultdict(list)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in _scan(root, "tricd", "subset", "positive_id"):
        if p.get("positive_id") is None:
            groups[str(p.get("subset"))].append(p)
        else:
            negatives[p["positive_id"]].append(p)
    k = max(1, r.per_group // 4)
    shown = {subset: sample(rows, k, r.seed, f"tricd:{subset}") for subset, rows in sorted(groups.items())}
    drawn = [p for rows in shown.values() for p in rows]
    got = _whole(root, drawn + [n for p in drawn for n in negatives.get(p["id"], [])])
    for subset, rows in shown.items():
        parts.append(f"<h3>{esc(subset)} <small>{len(rows)} of {len(groups[subset])} positive pairs</small></h3>")
        for p in rows:
            parts.append(_tricd_card(r, got[p["_at"]], [got[n["_at"]] for n in negatives.get(p["id"], [])]))
    return "\n".join(parts)


def _tricd_card(r: Any, p: dict[str, Any], negs: list[dict[str, Any]]) -> str:
    boxes, legend = [], []
    for i, (pid, text) in enumerate((p.get("phrase_text") or {}).items()):
        color = PHRASE_COLORS[min(i, len(PHRASE_COLORS) - 1)]
        for b in (p.get("phrases") or {}).get(pid, []):
            boxes.append(Box(*b, color=color, role="phrase", label=text))
        legend.append(f"<li><span style='color:{color}'>■</span> {esc(pid)}: {esc(text)}</li>")
    pic = _thumb(r, f"tricd_{p['id']}", p.get("image"), boxes, 300, "positive")
    figs = [f"<figure>{pic}<figcaption>positive: {esc(p.get('image_id'))}</figcaption></figure>"]
    for n in negs:
        what = f"{n.get('negative')} {n.get('image_id')}"
        pic = _thumb(r, f"tricd_{n['id']}", n.get("image"), [], 200, "negative")
        figs.append(f"<figure>{pic}<figcaption>{esc(what)}: no boxes</figcaption></figure>")
    return (
        f"<div class='imgneg'>{''.join(figs)}<div class='body'><p class='expr'>{esc(p.get('caption', ''))}</p>"
        f"<ul class='small'>{''.join(legend)}</ul><p class='meta'>{esc(p.get('split'))} · pair {esc(p['id'])} · "
        f"positive {esc(p.get('sample_id'))}</p></div></div>"
    )


def probes_html(r: Any) -> str:
    root = r.run.root
    parts = [_counts(root, "probes")]
    k = max(1, r.per_group // 4)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rel in ("probes/probe_r", "probes/probe_c"):
        for rec in _scan(root, rel, "kind"):
            by_kind[str(rec.get("kind"))].append(rec)
    shown = {kind: sample(rows, k, r.seed, kind) for kind, rows in sorted(by_kind.items())}
    groups = _scan(root, "probes/probe_b")
    shown_b = sample(groups, k, r.seed, "probe_b")
    got = _whole(root, [x for rows in shown.values() for x in rows] + shown_b)  # each table read once
    for kind, rows in shown.items():
        parts.append(f"<h3>{esc(kind)} <small>{len(rows)} of {len(by_kind[kind])}</small></h3><div class='cards'>")
        parts += [_probe_card(r, got[x["_at"]]) for x in rows]
        parts.append("</div>")
    if groups:
        parts.append(f"<h3>probe_b <small>{len(shown_b)} of {len(groups)} images</small></h3>")
        parts += [_probe_b_card(r, got[g["_at"]]) for g in shown_b]
    return "\n".join(parts)


def _probe_card(r: Any, rec: dict[str, Any]) -> str:
    if str(rec.get("kind")).startswith("probe_c/"):
        prompts = rec.get("prompts") or ["?", "?"]
        figs = ""
        for i, rel in enumerate(rec.get("images") or []):
            pic = _thumb(r, f"pc_{rec['id']}_{i}", rel, [], 160, f"image {i + 1}")
            prompt = prompts[i] if i < len(prompts) else "?"
            figs += f"<figure>{pic}<figcaption>{i + 1}: {esc(prompt)}</figcaption></figure>"
        text = f"<p class='small'>prompt i is true of image i, false of the other; swap: {esc(rec.get('swap'))}</p>"
        return f"<div class='card'><div class='cands'>{figs}</div>{text}</div>"
    pic = _thumb(r, f"pr_{rec['id']}", rec.get("image"), [], 200, "image")
    return (
        f"<div class='card small'>{pic}<p class='small'>✓ {esc(rec.get('correct'))}<br>✗ {esc(rec.get('swapped'))}"
        f"</p><p class='meta'>{esc(rec.get('split'))} · image {esc(rec.get('image_id'))}</p></div>"
    )


def _probe_b_card(r: Any, g: dict[str, Any]) -> str:
    t = g.get("target") or {}
    box = [Box(*t["box"], color=TARGET, role="target", label=str(t.get("name")))] if t.get("box") else []
    figs = []
    for variant, rel in (g.get("images") or {}).items():
        pic = _thumb(r, f"pb_{g['id']}_{variant}", rel, box, 150, variant)
        figs.append(f"<figure class='cand'>{pic}<figcaption>{esc(variant)}</figcaption></figure>")
    prompts = g.get("prompts") or {}
    return (
        f"<div class='imgneg'><div class='body'><p class='expr'>{esc(prompts.get('target'))}</p>"
        f"<p class='small'>absent: {esc(', '.join(prompts.get('absent') or []))}</p>"
        f"<p class='meta'>{esc(g.get('split'))} · image {esc(g.get('image_id'))} · background "
        f"{esc(g.get('background_fraction'))}</p><div class='cands'>{''.join(figs)}</div></div></div>"
    )


def imagecode_html(r: Any) -> str:
    root = r.run.root
    parts = [_counts(root, "imagecode")]
    sets = _scan(root, "imagecode")
    shown = sample(sets, max(1, r.per_group // 3), r.seed, "imagecode")
    if sets:
        parts.append(f"<p class='small'>{len(shown)} of {len(sets)} sets; the original has a red frame.</p>")
    got = _whole(root, shown)
    for s in (got[x["_at"]] for x in shown):
        figs = []
        for i, rel in enumerate(s.get("images") or []):
            mark = i == s.get("target")
            edit = next((e for e in s.get("edits") or [] if e.get("index") == i), None)
            other = next((d for d in s.get("distractors") or [] if d.get("index") == i), {})
            caption = f"edit: {edit.get('negative_type')}" if edit else f"image {other.get('image_id')}"
            caption = "original" if mark else caption
            style = f" style='outline:3px solid {TARGET}'" if mark else ""
            pic = _thumb(r, f"ic_{s['id']}_{i}", rel, [], 150, f"image {i}")
            figs.append(f"<figure class='cand'{style}>{pic}<figcaption>{i}: {esc(caption)}</figcaption></figure>")
        parts.append(
            f"<div class='imgneg'><div class='body'><p class='expr'>{esc(s.get('description'))}</p>"
            f"<p class='meta'>{esc(s.get('split'))} · set {esc(s['id'])} · target {esc(s.get('target'))}</p>"
            f"<div class='cands'>{''.join(figs)}</div></div></div>"
        )
    return "\n".join(parts)


# the shapes whose cards this module draws: folder -> (title, make); any other shows its counts
GALLERIES: dict[str, tuple[str, Callable[[Any], str]]] = {
    "tricd": ("TRICD pairs: phrases' boxes on the positive image, the negative images", tricd_html),
    "probes": ("Probes: Probe-R, Probe-C groups, Probe-B fillers", probes_html),
    "imagecode": ("ImageCoDe sets: the original among its edits and the corpus's most alike images", imagecode_html),
}


def export_sections() -> list[tuple[str, str, Callable[[Any], str]]]:
    """(anchor, title, make) for `review/report/page.py`'s SECTIONS: each registered export with a folder
    of its own (`ExportStage.title`), in the registry's order."""
    out = []
    for name, cls in EXPORTS.items():
        if cls.title:
            title, make = GALLERIES.get(name, (cls.title, lambda r, name=name: _counts(r.run.root, name)))
            out.append((name, title, make))
    return out
