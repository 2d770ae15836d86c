"""`hardneg report RUN`: RUN/report.html plus RUN/report_assets/ (JPEG thumbnails, PNG plots).

Opens from disk with no server: relative links only, no script. Each section is built on its own; one
whose inputs are missing says "not available", and one that fails says so and logs why, so the report
of a partial, older or newer run folder is still written.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from hardneg.core.io import atomic_write_bytes
from hardneg.review import plots
from hardneg.review.apply import apply_labels, load_labels, summary
from hardneg.review.assets import MAX_BYTES, Assets, esc, img_tag
from hardneg.review.export_gallery import export_sections
from hardneg.review.gallery import Pictures, RejectScan, _numeric, reason_group, scan_rejects
from hardneg.review.labels import kind_of
from hardneg.review.rundata import RunData

log = logging.getLogger(__name__)

# score name -> where its threshold may be, first found wins, and which side passes. Paths are into the
# manifest: `thresholds.<filter>.<key>` (resolved thresholds, if the run records them), then the config's
# `filters.thresholds.<filter>.<key>`, then the older flat keys. A score with none found gets no line.
THRESHOLDS: dict[str, tuple[tuple[str, ...], str]] = {
    "clip_margin": (
        ("thresholds.clip.min_margin", "config.filters.thresholds.clip.min_margin", "config.filters.min_clip_margin"),
        "above",
    ),
    "realism": (
        (
            "thresholds.seam.max",
            "thresholds.dire.max",
            "config.filters.thresholds.seam.max",
            "config.filters.thresholds.dire.max",
            "config.filters.max_realism",
        ),
        "below",
    ),
    "sharpness_ratio": (("thresholds.sharpness.min_ratio", "config.filters.thresholds.sharpness.min_ratio"), "above"),
    "detector_twin": (
        (
            "thresholds.detector.max_twin",
            "config.filters.thresholds.detector.max_twin",
            "config.filters.max_detector_twin",
        ),
        "below",
    ),
}


def find_threshold(manifest: dict[str, Any], score: str) -> tuple[str, float, str] | None:
    """(manifest path, value, side that passes) of a score's threshold, or None."""
    paths, side = THRESHOLDS.get(score, ((), ""))
    for path in paths:
        cur: Any = manifest
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if isinstance(cur, int | float) and not isinstance(cur, bool):
            return path, float(cur), side
    return None


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 2em 3em;color:#222;background:#fafaf8}
h1{margin-top:.6em}h2{border-bottom:2px solid #ccc;padding-top:.6em}h3 small,h2 small{color:#888;font-weight:normal}
nav a{margin-right:1em}table{border-collapse:collapse;margin:.4em 0 1em}td,th{border:1px solid #ccc;padding:2px 8px;
text-align:right}th{background:#eee}table.left td{text-align:left}.na,.noimg{color:#a60;font-style:italic}
.plots img{margin:4px;border:1px solid #ddd}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{width:330px;background:#fff;border:1px solid #ddd;padding:6px}
.card.small{width:220px}.expr{font-weight:600;font-size:15px;margin:.3em 0}.small,.meta,.scores{font-size:12px}
.meta{color:#777}.scores{color:#36c}ul{margin:.2em 0;padding-left:1.2em}.negs li{font-size:12px;margin:.15em 0}
.tag{background:#f3d9b5;border-radius:3px;padding:0 4px;font-size:11px}.imgneg{display:flex;gap:10px;background:#fff;
border:1px solid #ddd;padding:6px;margin:8px 0;align-items:flex-start}.imgneg figure{margin:0}.cands{display:flex;
flex-wrap:wrap;gap:6px}.cand{width:160px;font-size:11px}figcaption{font-size:12px;max-width:300px}
code.detail{font-size:11px;word-break:break-all;color:#555}.noimg{display:inline-block;width:150px;padding:1em;
border:1px dashed #ccc;font-size:12px}.legend span{margin-right:1em}.legend i{display:inline-block;width:14px;
height:9px;border:3px solid;vertical-align:middle;margin-right:3px}
"""


def _table(df: pd.DataFrame, *, left: bool = False) -> str:
    return df.to_html(border=0, na_rep="", escape=True, classes="left" if left else None)


def _crosstab(
    df: pd.DataFrame, rows: str, cols: str, order: list[str] | None = None, total: bool = True
) -> pd.DataFrame:
    """Counts of `rows` x `cols` (rows in `order` when given) with one header row, "rows / cols"."""
    t = pd.crosstab(df[rows], df[cols], margins=total, margins_name="total")
    if order is not None:
        t = t.reindex([r for r in order if r in t.index] + [r for r in t.index if r not in order])
    t.index.name = None
    t.columns.name = f"{rows} / {cols}"
    return t


def _na(what: str) -> str:
    return f"<p class='na'>{esc(what)}: not available.</p>"


class _Report:
    def __init__(self, run: RunData, assets: Assets, per_group: int, seed: int):
        self.run, self.assets, self.per_group, self.seed = run, assets, per_group, seed
        self.pictures = Pictures(run, assets, per_group, seed)
        names = {k for r in (*run.positives, *run.negatives) if isinstance(r.get("scores"), dict) for k in r["scores"]}
        self.scan: RejectScan = scan_rejects(run, self.pictures.sampled_image_negative_ids(), names, seed)
        self.pictures.load_graphs(self.scan)

    # ---- counts ---------------------------------------------------------------------------------

    def counts(self) -> str:
        parts = []
        pos = pd.DataFrame(
            [
                {"split": r.get("split"), "type": r.get("tuple_type"), "level": f"L{r.get('level')}"}
                for r in self.run.positives
            ]
        )
        if pos.empty:
            parts.append(_na("positives"))
        else:
            splits = [*self.run.splits, "total"]
            by_split = _crosstab(pos, "split", "level", splits)
            by_type = _crosstab(pos, "type", "level")
            parts.append("<h3>Positives per split and level</h3>" + _table(by_split))
            parts.append("<h3>Positives per path type and level</h3>" + _table(by_type))
            plot_a = self.assets.plot(
                "plot_positives_type_level",
                lambda o: plots.grouped_bars(
                    pd.crosstab(pos["type"], pos["level"]), "positives per path type and level", o
                ),
            )
            plot_b = self.assets.plot(
                "plot_positives_split_level",
                lambda o: plots.grouped_bars(
                    pd.crosstab(pos["split"], pos["level"]), "positives per split and level", o
                ),
            )
            parts.append(f"<div class='plots'>{img_tag(plot_a, 'plot')}{img_tag(plot_b, 'plot')}</div>")
        neg = pd.DataFrame(
            [
                {
                    "cate": "image" if r.get("negative_cate") == "image" else "text",
                    "type/level": f"{r.get('negative_type')}/L{r.get('negative_level')}",
                    "type": r.get("negative_type"),
                    "level": f"L{r.get('negative_level')}",
                    "split": r.get("split"),
                }
                for r in self.run.negatives
            ]
        )
        if neg.empty:
            parts.append(_na("negatives"))
            return "\n".join(parts)
        for cate in ("text", "image"):
            sub = neg[neg["cate"] == cate]
            title = f"{cate.capitalize()} negatives per type, level and split"
            if sub.empty:
                parts.append(f"<h3>{title}</h3>" + _na(f"{cate} negatives"))
                continue
            parts.append(
                f"<h3>{title}</h3>"
                + _table(
                    _crosstab(sub, "type/level", "split").reindex(
                        columns=[*[c for c in self.run.splits if c in set(sub["split"])], "total"]
                    )
                )
            )
        neg["series"] = neg["cate"] + " " + neg["level"]
        plot_c = self.assets.plot(
            "plot_negatives_type_level",
            lambda o: plots.grouped_bars(
                _crosstab(neg, "type", "series", total=False), "negatives per type and level", o
            ),
        )
        plot_d = self.assets.plot(
            "plot_negatives_split",
            lambda o: plots.grouped_bars(
                _crosstab(neg, "split", "cate", self.run.splits, total=False), "negatives per split", o
            ),
        )
        parts.append(f"<div class='plots'>{img_tag(plot_c, 'plot')}{img_tag(plot_d, 'plot')}</div>")
        return "\n".join(parts)

    # ---- filters and scores ------------------------------------------------------------------------

    def filters(self) -> str:
        counts = self.run.manifest.get("counts")
        rates = counts.get("filters") if isinstance(counts, dict) else None
        if not isinstance(rates, dict):
            rates = self.run.stats.get("filters")
        rows = []
        for name, v in (rates or {}).items():
            if isinstance(v, dict) and isinstance(v.get("seen"), int) and isinstance(v.get("passed"), int):
                rows.append({"filter": name, "passed": v["passed"], "seen": v["seen"]})
        if not rows:
            return _na("filter pass rates")
        df = pd.DataFrame(rows).set_index("filter")
        df["rate"] = (df["passed"] / df["seen"].where(df["seen"] > 0)).round(4)
        url = self.assets.plot(
            "plot_filter_pass_rates",
            lambda o: plots.horizontal_bars(
                df["rate"].fillna(0), "filter pass rates", o, xlabel="passed / seen", xlim=(0, 1)
            ),
        )
        shown = df.assign(rate=df["rate"].map(lambda r: "" if pd.isna(r) else f"{100 * r:.1f}%"))
        return _table(shown) + f"<div class='plots'>{img_tag(url, 'plot')}</div>"

    def scores(self) -> str:
        kept: dict[tuple[str, str], list[float]] = {}
        for r in (*self.run.positives, *self.run.negatives):
            if not isinstance(r.get("scores"), dict):
                continue
            kind = kind_of(r)
            for name, v in r["scores"].items():
                if (x := _numeric(v)) is not None:
                    kept.setdefault((kind, name), []).append(x)
        keys = sorted(set(kept) | set(self.scan.scores))
        if not keys:
            return _na("scores")
        parts = []
        notes = []
        for kind, name in keys:
            found = find_threshold(self.run.manifest, name)
            series = {"kept": kept.get((kind, name), []), "rejected": self.scan.scores.get((kind, name), [])}
            if not any(series.values()):
                continue
            label = name + (" gap (positive - negative)" if name.startswith("refine_") else "")
            line = f"{found[0].removeprefix('config.')} = {found[1]:g} ({found[2]} passes)" if found else ""
            url = self.assets.plot(
                f"plot_score_{kind}_{name}",
                lambda o, s=series, lab=f"{kind}: {label}", f=found, t=line: plots.score_histogram(
                    lab, s, o, threshold=f[1] if f else None, threshold_label=t
                ),
            )
            parts.append(img_tag(url, f"{kind} {name}"))
            notes.append(f"{kind} {name}: " + (f"threshold {line} drawn" if found else "no threshold recorded"))
        return (
            "<p class='small'>Kept: scores on the written samples. Rejected: scores of dropped candidates "
            "in rejects.jsonl. Red line: the threshold the manifest records, where it has one.</p>"
            f"<div class='plots'>{''.join(parts)}</div><p class='small'>{esc('; '.join(notes))}</p>"
        )

    # ---- rejects -------------------------------------------------------------------------------

    def rejects(self) -> str:
        if not self.scan.counts:
            return _na("rejects")
        by_stage = Counter[str]()
        for (stage, _), n in self.scan.counts.items():
            by_stage[stage] += n
        top = self.scan.counts.most_common(60)
        table = pd.DataFrame([{"stage": s, "reason": r, "count": n} for (s, r), n in top])
        rest = sum(self.scan.counts.values()) - int(table["count"].sum())
        if rest:
            table.loc[len(table)] = {
                "stage": "(other)",
                "reason": f"{len(self.scan.counts) - len(top)} more groups",
                "count": rest,
            }
        stage_series = pd.Series(dict(by_stage.most_common())).rename("rejects")
        url = self.assets.plot(
            "plot_rejects_by_stage",
            lambda o: plots.horizontal_bars(stage_series, "rejects per stage", o, xlabel="rejects"),
        )
        reason_series = pd.Series({f"{s}: {r[:50]}": n for (s, r), n in self.scan.counts.most_common(20)})
        url2 = self.assets.plot(
            "plot_rejects_by_reason",
            lambda o: plots.horizontal_bars(reason_series, "top reject reasons", o, xlabel="rejects"),
        )
        return (
            f"<p>{self.scan.total} rejects in {len(self.scan.counts)} groups (reasons with numbers and quoted "
            "words blanked).</p>"
            f"<div class='plots'>{img_tag(url, 'plot')}{img_tag(url2, 'plot')}</div>"
            + table.to_html(border=0, index=False, escape=True, classes="left")
        )

    # ---- human review ----------------------------------------------------------------------------

    def review(self) -> str:
        labels = load_labels(self.run.root)
        if not labels:
            return "<p class='na'>No human review yet (run <code>hardneg review RUN</code>): not available.</p>"
        s = summary(labels)
        # What the last split dropped is in its rejects; the splits hold only what it kept, so labels applied
        # to them find what labels given since would drop.
        applied = Counter({reason: n for (stage, reason), n in self.scan.counts.items() if stage == "review"})
        _, _, pending = apply_labels(self.run.positives, self.run.negatives, labels)
        line = f"{s['items']} items reviewed ({s['tied']} tied: kept until an adjudicator decides); the last "
        line += f"split dropped {applied.total()} samples for them"
        if pending:
            line += f", and {len(pending)} more go with labels given since (<code>hardneg split RUN</code> applies"
            line += " them)"
        parts = [f"<p>{line}.</p>"]
        parts.append("<h3>Decisions in force</h3>" + _table(pd.DataFrame([s["by_label"]], index=["items"])))
        if s["by_annotator"]:
            parts.append(
                "<h3>Labels by annotator</h3>" + _table(pd.DataFrame(s["by_annotator"]).T.fillna(0).astype(int))
            )
        if s["agreement"]:
            df = pd.DataFrame(s["agreement"])
            df["kappa"] = df["kappa"].map(lambda k: "n/a (one label only)" if k is None or pd.isna(k) else f"{k:.3f}")
            parts.append("<h3>Agreement (Cohen's kappa on common items)</h3>" + df.to_html(border=0, index=False))
        else:
            parts.append("<p class='small'>Agreement: no two annotators labelled the same items yet.</p>")
        for title, reasons in (
            ("Dropped by the review", applied),
            ("Not applied yet", Counter(reason_group(d["reason"]) for d in pending)),
        ):
            if reasons:
                parts.append(f"<h3>{title}</h3>" + _table(pd.Series(reasons, name="samples").to_frame()))
        return "\n".join(parts)


def _manifest_html(run: RunData) -> str:
    m = run.manifest
    rows = {
        "run folder": str(run.root),
        "hardneg version": m.get("hardneg_version", "?"),
        "seed": m.get("seed", "?"),
        "config fingerprint": m.get("config_fingerprint", "?"),
        "scene graphs": str(run.scene_graphs_path or "not available"),
        "images": str(run.images_dir or "not available"),
        "positives": len(run.positives),
        "negatives": len(run.negatives),
    }
    return (
        "<table>"
        + "".join(f"<tr><th>{esc(k)}</th><td style='text-align:left'>{esc(v)}</td></tr>" for k, v in rows.items())
        + "</table>"
    )


SECTIONS: list[tuple[str, str, Callable[[_Report], str]]] = [
    ("counts", "Counts", _Report.counts),
    ("filters", "Filter pass rates", _Report.filters),
    ("scores", "Score histograms", _Report.scores),
    ("review", "Human review", _Report.review),
    ("gallery", "Gallery: positives per path type and level", lambda r: r.pictures.gallery_html()),
    (
        "image-negatives",
        "Image negatives: source, chosen candidate, the others",
        lambda r: r.pictures.image_negatives_html(r.scan),
    ),
    *export_sections(),  # the other benchmark shapes: TRICD, probes, ImageCoDe
    ("rejects", "Rejects per stage and reason", _Report.rejects),
    ("reject-samples", "Reject samples", lambda r: r.pictures.reject_samples_html(r.scan)),
]


def build_report(run_dir: str | Path, *, per_group: int = 12, seed: int = 0, max_bytes: int = MAX_BYTES) -> Path:
    """Write RUN/report.html and RUN/report_assets/; returns the HTML's path.

    `per_group` positives per (path type, level) and half as many image negatives per (type, level)
    are drawn with `seed`; the assets stop growing at `max_bytes` (pictures beyond say so).
    """
    t0 = time.perf_counter()
    run = RunData(run_dir)
    assets = Assets(run.root, max_bytes)
    rep = _Report(run, assets, per_group, seed)
    body = []
    for anchor, title, make in SECTIONS:
        try:
            content = make(rep)
        except Exception as e:  # one broken section must not cost the others; the page says what failed
            log.warning("report section %r failed", title, exc_info=True)
            content = f"<p class='na'>This section failed: {esc(type(e).__name__)}: {esc(e)}</p>"
        body.append(f"<h2 id='{anchor}'>{esc(title)}</h2>\n{content}")
    notes = sorted(set(run.notes))
    if assets.refused:
        notes.append(f"{assets.refused} pictures left out: the assets reached their {max_bytes // 1_000_000} MB budget")
    nav = " ".join(f"<a href='#{a}'>{esc(t.split(':')[0])}</a>" for a, t, _ in SECTIONS)
    legend = (
        "<p class='legend small'><span><i style='border-color:#ff2020'></i>target</span>"
        "<span><i style='border-color:#20d020'></i>related 1</span><span><i style='border-color:#2f6bff'></i>related 2"
        "</span><span><i style='border-color:#ff9900'></i>edited region</span></p>"
    )
    page = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>hardneg report: {esc(run.root.name)}</title><style>{CSS}</style></head><body>"
        f"<h1>hardneg report: {esc(run.root.name)}</h1>"
        f"<p class='meta'>written {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} · seed {seed} · "
        f"{per_group} samples per group</p>{_manifest_html(run)}"
        + (f"<ul class='na'>{''.join(f'<li>{esc(n)}</li>' for n in notes)}</ul>" if notes else "")
        + f"<nav>{nav}</nav>{legend}"
        + "\n".join(body)
        + "</body></html>"
    )
    out = run.root / "report.html"
    atomic_write_bytes(out, page.encode())
    log.info("report: %s (%d KB of assets) in %.1fs", out, assets.used // 1024, time.perf_counter() - t0)
    return out
