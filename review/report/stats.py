"""The report's tables and plots of counts, filters, scores and the human review (`ReportData`).

The overview and the filters and review pages are made of these; each method returns HTML, or says
"not available" when its inputs are missing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from hardneg.core.plugins import FILTERS
from hardneg.filters.human.apply import apply_labels, load_labels, pseudonymous, reviewable, summary
from hardneg.filters.human.audit import audit_summary
from hardneg.filters.human.labels import kind_of
from hardneg.review.report import plots
from hardneg.review.report.assets import Assets, esc, img_tag
from hardneg.review.report.gallery import Pictures, RejectScan, _numeric, scan_rejects
from hardneg.review.report.text import clean_reason
from hardneg.review.rundata import RunData

# runs made before thresholds were kept per filter: score -> its flat config key
OLD_KEYS = {
    "clip_margin": "config.filters.min_clip_margin",
    "realism": "config.filters.max_realism",
    "detector_twin": "config.filters.max_detector_twin",
}


def threshold_paths() -> dict[str, tuple[tuple[str, ...], str]]:
    """Score name -> where its threshold may be in the manifest, first found wins, and which side passes,
    from what each registered filter declares (`Filter.legend`): the resolved thresholds the run recorded
    (`thresholds.<filter>.<key>`), then the config's (`config.filters.thresholds.<filter>.<key>`), then a
    flat key of an older run. A score no filter declares gets no line."""
    where: dict[str, tuple[list[str], list[str], str]] = {}
    for name, cls in FILTERS.items():
        for line in cls.legend:
            if line.threshold is not None:
                resolved, configured, _ = where.setdefault(line.name, ([], [], line.passes))
                resolved.append(f"thresholds.{name}.{line.threshold}")
                configured.append(f"config.filters.thresholds.{name}.{line.threshold}")
    return {
        score: ((*resolved, *configured, *([OLD_KEYS[score]] if score in OLD_KEYS else [])), side)
        for score, (resolved, configured, side) in where.items()
    }


def find_threshold(manifest: dict[str, Any], score: str) -> tuple[str, float, str] | None:
    """(manifest path, value, side that passes) of a score's threshold, or None."""
    paths, side = threshold_paths().get(score, ((), ""))
    for path in paths:
        cur: Any = manifest
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if isinstance(cur, int | float) and not isinstance(cur, bool):
            return path, float(cur), side
    return None


def table(df: pd.DataFrame, *, left: bool = False) -> str:
    """A table in a box that scrolls on its own, so a wide one never widens the page."""
    html = df.to_html(border=0, na_rep="", escape=True, classes="left" if left else None)
    return f"<div class='scroll'>{html}</div>"


def crosstab(
    df: pd.DataFrame, rows: str, cols: str, order: list[str] | None = None, total: bool = True
) -> pd.DataFrame:
    """Counts of `rows` x `cols` (rows in `order` when given) with one header row, "rows / cols"."""
    t = pd.crosstab(df[rows], df[cols], margins=total, margins_name="total")
    if order is not None:
        t = t.reindex([r for r in order if r in t.index] + [r for r in t.index if r not in order])
    t.index.name = None
    t.columns.name = f"{rows} / {cols}"
    return t


def na(what: str) -> str:
    return f"<p class='na'>{esc(what)}: not available.</p>"


class ReportData:
    """The run, its assets, the sampled pictures and one scan of the rejects, shared by every page."""

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
            parts.append(na("positives"))
        else:
            splits = [*self.run.splits, "total"]
            by_split = crosstab(pos, "split", "level", splits)
            by_type = crosstab(pos, "type", "level")
            parts.append("<h3>Positives per split and level</h3>" + table(by_split))
            parts.append("<h3>Positives per path type and level</h3>" + table(by_type))
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
            parts.append(na("negatives"))
            return "\n".join(parts)
        for cate in ("text", "image"):
            sub = neg[neg["cate"] == cate]
            title = f"{cate.capitalize()} negatives per type, level and split"
            if sub.empty:
                parts.append(f"<h3>{title}</h3>" + na(f"{cate} negatives"))
                continue
            parts.append(
                f"<h3>{title}</h3>"
                + table(
                    crosstab(sub, "type/level", "split").reindex(
                        columns=[*[c for c in self.run.splits if c in set(sub["split"])], "total"]
                    )
                )
            )
        neg["series"] = neg["cate"] + " " + neg["level"]
        plot_c = self.assets.plot(
            "plot_negatives_type_level",
            lambda o: plots.grouped_bars(
                crosstab(neg, "type", "series", total=False), "negatives per type and level", o
            ),
        )
        plot_d = self.assets.plot(
            "plot_negatives_split",
            lambda o: plots.grouped_bars(
                crosstab(neg, "split", "cate", self.run.splits, total=False), "negatives per split", o
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
            return na("filter pass rates")
        df = pd.DataFrame(rows).set_index("filter")
        df["rate"] = (df["passed"] / df["seen"].where(df["seen"] > 0)).round(4)
        url = self.assets.plot(
            "plot_filter_pass_rates",
            lambda o: plots.horizontal_bars(
                df["rate"].fillna(0), "filter pass rates", o, xlabel="passed / seen", xlim=(0, 1)
            ),
        )
        shown = df.assign(rate=df["rate"].map(lambda r: "" if pd.isna(r) else f"{100 * r:.1f}%"))
        return table(shown) + f"<div class='plots'>{img_tag(url, 'plot')}</div>"

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
            return na("scores")
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

    # ---- human review ----------------------------------------------------------------------------

    def review(self) -> str:
        labels = load_labels(self.run.root)
        if not labels:
            return "<p class='na'>No human review yet (run <code>hardneg review RUN</code>): not available.</p>"
        audit = audit_html(audit_summary(self.run.root, labels))
        if not self.run.manifest.get("config", {}).get("review", {}).get("publish_annotators"):
            labels = pseudonymous(labels)  # the report is published with the run: no names in it
        s = summary(labels)
        # What the last split dropped is in its rejects; the splits hold only what it kept, so labels applied
        # to them find what labels given since would drop.
        # grouped by the label: a review reason is "review: <label> (by <annotator>)"
        applied = Counter[str]()
        for (stage, reason), n in self.scan.counts.items():
            if stage == "review":
                applied[clean_reason(stage, reason.replace("(…)", "")) + " (by annotators)"] += n
        _, _, pending = apply_labels(reviewable(self.run.positives), reviewable(self.run.negatives), labels)
        line = f"{s['items']} items reviewed ({s['tied']} tied: kept until an adjudicator decides); the last "
        line += f"split dropped {applied.total()} samples for them"
        if pending:
            line += f", and {len(pending)} more go with labels given since (<code>hardneg split RUN</code> applies"
            line += " them)"
        parts = [f"<p>{line}.</p>"]
        parts.append("<h3>Decisions in force</h3>" + table(pd.DataFrame([s["by_label"]], index=["items"])))
        if s["by_annotator"]:
            parts.append(
                "<h3>Labels by annotator</h3>" + table(pd.DataFrame(s["by_annotator"]).T.fillna(0).astype(int))
            )
        if s["agreement"]:
            df = pd.DataFrame(s["agreement"])
            df["kappa"] = df["kappa"].map(lambda k: "n/a (one label only)" if k is None or pd.isna(k) else f"{k:.3f}")
            parts.append("<h3>Agreement (Cohen's kappa on common items)</h3>" + df.to_html(border=0, index=False))
        else:
            parts.append("<p class='small'>Agreement: no two annotators labelled the same items yet.</p>")
        for title, reasons in (
            ("Dropped by the review", applied),
            ("Not applied yet", Counter(clean_reason("review", d.reason) for d in pending)),
        ):
            if reasons:
                parts.append(f"<h3>{title}</h3>" + table(pd.Series(reasons, name="samples").to_frame()))
        return audit + "\n".join(parts)


def _interval(c: dict[str, Any]) -> str:
    if c.get("share") is None:
        return "no label yet"
    return f"{100 * c['share']:.1f}% (95% interval {100 * c['low']:.1f}-{100 * c['high']:.1f}%, n = {c['labelled']})"


def audit_line(audit: dict[str, Any]) -> str:
    """The audit's headline: each overall estimate with its interval, one sentence (the overview's)."""
    if not audit:
        return ""
    said = "; ".join(f"{name}: {_interval(c)}" for name, c in audit["overall"].items())
    return f"Audit of {audit['drawn']} items drawn at random ({audit['labelled']} labelled): {said}."


def audit_html(audit: dict[str, Any]) -> str:
    """The audit's estimates: overall, per negative type and per stratum, with their 95% intervals."""
    if not audit:
        return ""
    rows = [
        (name, c["population"], c["labelled"], _interval(c), f"{100 * c.get('coverage', 1):.0f}%")
        for name, c in audit["overall"].items()
    ]
    rows += [(t, c["population"], c["labelled"], _interval(c), "") for t, c in audit["by_negative_type"].items()]
    rows += [(k, c["population"], c["labelled"], _interval(c), "") for k, c in audit["strata"].items()]
    df = pd.DataFrame(rows, columns=["estimate of", "in the dataset", "labelled", "error rate", "strata covered"])
    return (
        f"<h3 id='audit'>Audit: estimated error rates</h3><p>{esc(audit_line(audit))} Unusable positives: "
        "Ambiguous or Wrong expression; negatives still true: Still true. The overall rows weight the strata "
        "by their sizes. <code>hardneg split RUN</code> puts these in stats.md and the card.</p>"
        + df.to_html(border=0, index=False)
    )


def manifest_html(run: RunData) -> str:
    m = run.manifest
    inputs = m.get("inputs") if isinstance(m.get("inputs"), dict) else {}
    rows = {
        "run folder": run.root.name,
        "hardneg version": m.get("hardneg_version", "?"),
        "seed": m.get("seed", "?"),
        "config fingerprint": m.get("config_fingerprint", "?"),
        "scene graphs": str(inputs.get("scene_graphs") or "not available"),
        "images": str(inputs.get("images") or "none"),
        "positives": len(run.positives),
        "negatives": len(run.negatives),
    }
    return (
        "<table>"
        + "".join(f"<tr><th>{esc(k)}</th><td style='text-align:left'>{esc(v)}</td></tr>" for k, v in rows.items())
        + "</table>"
    )


def edits_html(run: RunData) -> str:
    """Image negatives per edit operation and split: what the image side of the benchmark is made of."""
    rows = []
    for n in run.negatives:
        if n.get("negative_cate") != "image":
            continue
        e = n.get("edit") if isinstance(n.get("edit"), dict) else {}
        ops = (
            [str(x.get("op")) for x in e.get("edits") or [] if isinstance(x, dict)] if e.get("op") == "sequence" else []
        )
        rows.append(
            {"edit": " + ".join(ops) or str(e.get("op", "?")), "split": n.get("split"), "backend": n.get("backend")}
        )
    if not rows:
        return na("image edits")
    df = pd.DataFrame(rows)
    t = crosstab(df, "edit", "split").reindex(columns=[*[c for c in run.splits if c in set(df["split"])], "total"])
    return table(t) + f"<p class='small'>backends: {esc(', '.join(sorted(map(str, set(df['backend'])))))}</p>"
