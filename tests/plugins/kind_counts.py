"""The kept text negatives of each kind, per split, in `RUN/kind_counts/summary.json`: the worked example of
an export in docs/extending.md (it would sit in `exports/`)."""

from __future__ import annotations

from collections import Counter

from hardneg.core.config_exports import ExportOptions
from hardneg.core.plugins import EXPORTS
from hardneg.core.rows import DECIDED_NEGATIVES, LANGUAGE_NEGATIVES
from hardneg.core.runner.stage import Unit
from hardneg.exports.base import ExportStage
from hardneg.exports.common import ExportFolder, kept_positives


class KindCountsExport(ExportOptions):
    enabled: bool = True


@EXPORTS.add("kind_counts", order=60)
class KindCountsStage(ExportStage):
    version = "kind_counts@v1"
    Options = KindCountsExport
    title = "Text negatives per kind"
    about = "the text negatives the run kept, by kind and split"
    reads = ("language", "decide")
    config = ("splits", "exports.kind_counts")
    sharded = False
    decision = True  # no model: `hardneg split` reruns it
    publishes = ("kind_counts",)

    def run(self, unit: Unit) -> None:
        opts = unit.cfg.exports.kind_counts
        counts: dict[str, Counter] = {}
        if opts.enabled:
            split = {p.id: p.split for p in kept_positives(unit)}
            kept = {d.id for d in unit.records_all(DECIDED_NEGATIVES) if d.keep}
            for n in unit.records_all(LANGUAGE_NEGATIVES):
                if n.id in kept and n.positive_id in split:
                    counts.setdefault(n.negative_type, Counter())[split[n.positive_id]] += 1
        folder = ExportFolder(unit.root, self.name)
        folder.reset()
        summary = {k: dict(v) for k, v in counts.items()}
        folder.write_summary({"shape": self.name, "version": self.version, "enabled": opts.enabled, "counts": summary})
        unit.meta["counts"] = summary
