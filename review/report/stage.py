"""The report stage: every run ends with `report.html` (and `hardneg split` rewrites it)."""

from __future__ import annotations

from hardneg.core.runner.stage import Stage, Unit


class ReportStage(Stage):
    name = "report"
    version = "report@v4"  # v3: a small site (an overview and paginated section pages), readable rejects; v4: every
    # group of bad input drawn
    reads_all = True
    reports = True  # the report shows what the last run of every stage wrote
    config = ("seed",)  # its samples are keyed draws
    sharded = False
    decision = True
    publishes = ("report.html", "report", "stats.md", "stats.json", "README.md")  # the exports' counts too

    def run(self, unit: Unit) -> None:
        from hardneg.exports.shape_stats import publish
        from hardneg.review.report.page import build_report  # pandas and matplotlib load only here

        publish(unit.root)  # the export stages' counts into stats.md, stats.json and the card (they run after write)
        out = build_report(unit.root, seed=unit.cfg.seed)
        unit.meta["report"] = out.name
