"""The report stage, the run's last: the run's summary (`stats.md`, `stats.json`, the dataset card) and
`report.html` (`hardneg split` rewrites them)."""

from __future__ import annotations

from hardneg.core.runner.stage import Stage, Unit
from hardneg.exports.finecops import WriteStage


class ReportStage(Stage):
    name = "report"
    version = "report@v5"  # v3: a small site (an overview and paginated section pages), readable rejects; v4: every
    # group of bad input drawn; v5: writes the run's summary, which the write stage no longer writes first
    reads_all = True
    reports = True  # the report shows what the last run of every stage wrote
    config = ("seed",)  # its samples are keyed draws
    sharded = False
    decision = True
    publishes = ("report.html", "report", "stats.md", "stats.json", "README.md")

    def run(self, unit: Unit) -> None:
        from hardneg.exports.summary import publish
        from hardneg.review.report.page import build_report  # pandas and matplotlib load only here

        # the write stage's counts and the exports' (they run after it), each file written once
        written = unit.run.summary(WriteStage.name)["meta"]
        publish(unit.root, written["stats"], written["dataset"])
        out = build_report(unit.root, seed=unit.cfg.seed)
        unit.meta["report"] = out.name
