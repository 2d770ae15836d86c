"""The decide stage: scores in, decisions out, in seconds and without a model (`hardneg split` reruns it).

Per positive: what the photo says (the pixels stage; `filters/evidence.py`), each configured filter that
scores positives (the detector: an unannotated twin, a label error), the risk cuts. Per text negative: a
colour the photo shows after all (`filters/evidence.py`), SugarCREPE's balancing (`filters/refine.py`),
then each filter's `keep`. Per image negative: the candidates every filter keeps, the best of them by the
ranking filter. Then the human filter's labels (`filters/human/apply.py`): each annotator's latest label is a vote
to keep or to drop, a majority decides, an adjudicator's label is the final word, and a tie keeps the
sample and queues it. A dropped positive takes its negatives with it.

Output rows (`PositiveDecisionRow`, `NegativeDecisionRow`; `scores` flattened by score name:
`{"similarity": 0.93, "realism": 0.04}`):
`positives`: `{"id", "keep", "reason", "scores", "risk_reasons"}` for every positive;
`negatives`: `{"id", "keep", "reason", "candidate", "scores"}` for every negative (a kept image negative
also has `passed`: every candidate each filter keeps).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from hardneg.core.config import RunConfig
from hardneg.core.plugins import FILTERS
from hardneg.core.records import Reject, RiskReason
from hardneg.core.rows import (
    DECIDED_NEGATIVES,
    DECIDED_POSITIVES,
    FILTER_SCORES,
    IMAGE_NEGATIVES,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    PIXELS_NEGATIVES,
    PIXELS_POSITIVES,
    REFINE_SCORES,
    FilterScoreRow,
    NegativeDecisionRow,
    PositiveDecisionRow,
    RefineScoreRow,
)
from hardneg.core.runner.stage import Stage, Unit
from hardneg.core.schema import outputs
from hardneg.filters.base import Scores
from hardneg.filters.decide import Rule, decide_image, first_failure, flatten, rules
from hardneg.filters.evidence import level_drop, negative_photo, with_photo
from hardneg.filters.human.apply import Reviewable, apply_labels, load_labels, pseudonymous
from hardneg.filters.human.apply import summary as review_summary
from hardneg.filters.human.audit import audit_key, audit_summary
from hardneg.filters.mix import VERSION as MIX_VERSION
from hardneg.filters.mix import MixItem, mix
from hardneg.filters.refine import RefinePair, refine
from hardneg.generators.paths.annotation_rules import RISK_WEIGHTS, combine, risk_band


def not_configured(cfg: RunConfig) -> list[str]:
    """The registered filters that decide samples and are left out of `filters.scorers`, by name: stats.md
    and the run summary show them as "not configured", never silently absent (the demo runs without CLIP
    or a detector)."""
    return sorted(n for n, cls in FILTERS.items() if cls.scores_samples() and n not in cfg.filters.scorers)


class _Tally:
    """Pass counts per filter and target, for stats.md."""

    def __init__(self) -> None:
        self.seen: Counter = Counter()
        self.passed: Counter = Counter()

    def rules(self, target: str, applied: list[str], failed: bool) -> None:
        for k, name in enumerate(applied):
            self.seen[f"{name}:{target}"] += 1
            self.passed[f"{name}:{target}"] += not failed or k < len(applied) - 1

    def one(self, key: str, ok: bool) -> None:
        self.seen[key] += 1
        self.passed[key] += ok

    def table(self) -> dict[str, dict[str, int]]:
        return {k: {"passed": self.passed[k], "seen": self.seen[k]} for k in sorted(self.seen)}


class DecideStage(Stage):
    name = "decide"
    version = "decide@v9"  # v4: refinement per type and level, the type mix of text negatives; v5: positives' risk;
    # v6: the photo's findings, risk dropped by level; v7: refinement keeps pairs of positives with fewest kept first;
    # v8: types too rare to balance alone are refined as one group; v9: one such type, with the smallest other one
    reads = ("language", "images", "pixels", "filters", "refine")
    writes = outputs(DECIDED_POSITIVES, DECIDED_NEGATIVES)
    config = (
        "seed",
        "filters.scorers",
        "filters.thresholds",
        "refine.enabled",
        "refine.bins_2d",
        "refine.bins_1d",
        "refine.min_per_cell",
        "negative_mix",
        "language.negative_types",
        "risk",
        "pixels.drop",
        "review",
    )
    sharded = False
    decision = True

    def validate(self, cfg: RunConfig) -> None:
        rules(cfg)

    def extra_fingerprint(self, run: Any) -> Any:
        """The human filter's labels in force (`hardneg review`): a new label re-decides; so does a new
        audit draw (`hardneg review --audit N`), whose estimates this stage carries to stats.md."""
        labels = sorted((i, lab.label, lab.annotators) for i, lab in load_labels(run.root).items())
        drawn = audit_key(run.root)
        return labels if drawn is None else (labels, drawn)

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        rules_ = rules(cfg)
        ran = set(unit.upstream("filters").get("filters_ran", []))
        active = [r for r in rules_ if r.name in ran]
        stored = {r.id: r for r in unit.records_all(FILTER_SCORES)}
        tally = _Tally()
        about: dict[int, tuple[str, frozenset[str]]] = {}  # positive id -> (image, the objects its path names)
        positives = self._positives(unit, stored, active, tally, about)
        dropped = {p.id: p.reason or "" for p in positives if not p.keep}
        kept_about = {i: a for i, a in about.items() if i not in dropped}
        negatives = self._text(unit, stored, active, tally, dropped, kept_about)
        negatives += self._images(unit, stored, active, tally, dropped)
        self._review(unit, positives, negatives)
        unit.write("positives", positives)
        unit.write("negatives", negatives)
        # what the terminal's line reports: the samples kept, not the decisions written about them
        unit.stats["kept:positives"] = sum(1 for d in positives if d.keep)
        unit.stats["kept:negatives"] = sum(1 for d in negatives if d.keep)
        unit.meta["passes"] = tally.table()
        unit.meta["not_run"] = sorted(r.name for r in rules_ if r.name not in ran)
        unit.meta["not_configured"] = not_configured(cfg)
        unit.meta["thresholds"] = {r.name: r.thresholds.model_dump() for r in rules_}

    def _positives(
        self,
        unit: Unit,
        stored: dict[int, FilterScoreRow],
        active: list[Rule],
        tally: _Tally,
        about: dict[int, tuple[str, frozenset[str]]],
    ) -> list[PositiveDecisionRow]:
        """Each positive's filters, and its risk (`generators/paths/annotation_rules.py`): what the graph cannot
        rule out, plus "no detector looked for an unannotated twin" where none is configured; a positive
        above `risk.max` is dropped."""
        cfg = unit.cfg
        run_reasons = []
        if "detector" not in cfg.filters.scorers:
            why = "no detector looked for an unannotated object of the target's name"
            run_reasons.append(RiskReason("no_detector", why, RISK_WEIGHTS["no_detector"]))
        photo = {r.id: r for r in unit.records_all(PIXELS_POSITIVES)}
        out = []
        for r in unit.records_all(LANGUAGE_POSITIVES):
            unit.items_in += 1
            unit.stats["positives"] += 1
            about[r.id] = (r.image_id, frozenset(n.id for n in r.node().nodes() if n.id is not None))
            graph_reasons = [RiskReason.from_json(x) for x in r.risk_reasons]
            reasons, why = with_photo([*graph_reasons, *run_reasons], photo.get(r.id), cfg, unit.stats)
            if r.id in photo:
                tally.one("pixels:positive", why is None)
            risk = combine(x.weight for x in reasons)
            unit.stats[f"risk:{risk_band(risk)}"] += 1
            by_version = _scores(stored, r.id)
            if by_version and why is None:  # a positive no filter scored is decided by its risk alone
                applied, why = first_failure(by_version, active, "positive")
                tally.rules("positive", applied, why is not None)
            scores = {**flatten(by_version), "annotation_risk": risk}
            if why is None and cfg.risk.max is not None:  # the risk cut is a rule: `split`'s guard counts it
                tally.one("risk", risk <= cfg.risk.max)
                if risk > cfg.risk.max:
                    kinds = ", ".join(sorted({x.kind for x in reasons}))
                    why = f"risk: {risk:.2f} above risk.max {cfg.risk.max} ({kinds})"
                    unit.stats["risk_dropped"] += 1
            if why is None:
                why, flagged = level_drop(r.level, reasons, cfg, unit.stats)
                tally.one("risk_level", why is None)
                if flagged:
                    scores["at_risk"] = 1.0  # kept at risk: the review queue starts with it
            if why is not None:
                detail = {"tuple_type": r.tuple_type, "level": r.level, "expression": r.expression, **scores}
                stage = why.split(": ", 1)[0] if why.startswith(("risk: ", "pixels: ")) else "filter"
                unit.reject(Reject(stage, why, r.image_id, r.id, detail=detail))
            said = [x.to_json() for x in reasons]
            out.append(PositiveDecisionRow(id=r.id, keep=why is None, reason=why, scores=scores, risk_reasons=said))
        return out

    def _text(
        self,
        unit: Unit,
        stored: dict[int, FilterScoreRow],
        active: list[Rule],
        tally: _Tally,
        dropped: dict[int, str],
        about: dict[int, tuple[str, frozenset[str]]],
    ) -> list[NegativeDecisionRow]:
        cfg = unit.cfg
        refine_rows = {r.id: r for r in unit.records_all(REFINE_SCORES)}
        refine_kept, refine_dropped, cells, groups = _refine(cfg, refine_rows)
        unit.meta["refine"] = groups
        out: list[NegativeDecisionRow] = []
        kinds: dict[int, tuple[str, int, int]] = {}  # id -> (negative type, positive id, negative level)
        photo = {r.id: r for r in unit.records_all(PIXELS_NEGATIVES)}
        for r in unit.records_all(LANGUAGE_NEGATIVES):
            kinds[r.id] = (r.negative_type, r.positive_id, r.negative_level)
            unit.items_in += 1
            sc = refine_rows.get(r.id)
            scores: Scores = {"refine_s1": sc.s1, "refine_s2": sc.s2} if sc is not None else {}  # type: ignore[dict-item]
            detail = {"negative_type": r.negative_type, "expression": r.expression, **scores}
            if r.positive_id in dropped:
                why = f"its positive was dropped: {dropped[r.positive_id]}"
                out.append(NegativeDecisionRow(id=r.id, keep=False, reason=why))
                continue
            if (why := negative_photo(photo.get(r.id), cfg, unit.stats)) is not None:
                unit.reject(Reject("pixels", why, r.image_id, r.id, detail=detail))
                out.append(NegativeDecisionRow(id=r.id, keep=False, reason=why))
                continue
            if cfg.refine.enabled:
                tally.one("refine", r.id in refine_kept)
                if r.id not in refine_kept:
                    why = refine_dropped.get(r.id, "refine: not scored")
                    unit.reject(Reject("refine", why, r.image_id, r.id, detail=detail))
                    out.append(NegativeDecisionRow(id=r.id, keep=False, reason=why))
                    continue
            by_version = _scores(stored, r.id)
            scores.update(flatten(by_version))
            applied, why = first_failure(by_version, active, "text_negative")
            tally.rules("text_negative", applied, why is not None)
            if why is not None:
                unit.reject(Reject("filter", why, r.image_id, r.id, detail={**detail, **scores}))
                out.append(NegativeDecisionRow(id=r.id, keep=False, reason=why))
                continue
            out.append(NegativeDecisionRow(id=r.id, keep=True, scores=scores))
        self._mix(unit, out, kinds, cells, about)
        return out

    def _mix(
        self,
        unit: Unit,
        rows: list[NegativeDecisionRow],
        kinds: dict[int, tuple[str, int, int]],
        cells: dict[int, tuple[str, tuple[int, ...]]],
        about: dict[int, tuple[str, frozenset[str]]],
    ) -> None:
        """The type mix (filters/mix.py) over the text negatives still kept, in place, for the kept positives
        (`about`: each one's image and objects); what it thins goes to rejects with the reason."""
        cfg = unit.cfg
        m = cfg.negative_mix
        positives = len(about)
        wanted = set(cfg.language.negative_types)
        shares = {t: s for t, s in m.shares.items() if t in wanted}
        kept = [row for row in rows if row.keep]
        items = []
        for row in kept:
            kind, pid, level = kinds[row.id]
            image, objects = about.get(pid, ("", frozenset()))
            items.append(MixItem(str(row.id), kind, str(pid), cells.get(row.id, ("zero", ())), level, image, objects))
        cap = math.floor(m.per_positive * positives + 1e-9)
        least = math.ceil(min(m.min_per_positive, m.per_positive) * positives - 1e-9)
        image_positives = Counter(image for image, _ in about.values())
        result = mix(items, shares, cap, m.floor, cfg.seed, least, m.per_object_set, m.per_image, image_positives)
        for row in kept:
            why = result.dropped.get(str(row.id))
            if why is not None:
                row.keep, row.reason, row.scores = False, why, None
                detail = {"negative_type": kinds[row.id][0]}
                unit.reject(Reject("mix", why, None, row.id, detail=detail))
        unit.meta["mix"] = {
            "version": MIX_VERSION,
            "floor": cfg.negative_mix.floor,
            "positives": positives,
            "cap": cap,
            "total": result.total,
            "types": result.report,
            "warnings": result.warnings,
        }

    def _images(
        self, unit: Unit, stored: dict[int, FilterScoreRow], active: list[Rule], tally: _Tally, dropped: dict[int, str]
    ) -> list[NegativeDecisionRow]:
        out: list[NegativeDecisionRow] = []
        for r in unit.records_all(IMAGE_NEGATIVES):
            unit.items_in += 1
            if r.positive_id in dropped:
                why = f"its positive was dropped: {dropped[r.positive_id]}"
                out.append(NegativeDecisionRow(id=r.id, keep=False, reason=why))
                continue
            cands = (stored[r.id].candidates if r.id in stored else []) or [{} for _ in r.candidates]
            d = decide_image(cands, active)
            tally.one("image_negative", d.keep)
            failed = sum(1 for _, why in d.losers if "best of" not in why)  # a candidate that lost on rank passed
            tally.seen["image_candidate"] += len(cands)
            tally.passed["image_candidate"] += len(cands) - failed
            for k, why in d.losers:
                detail = {"negative_type": r.negative_type, "file_name": r.candidates[k], **flatten(cands[k])}
                unit.reject(Reject("filter", why, r.source_image_id, r.id, detail=detail))
            if not d.keep:
                detail = {"negative_type": r.negative_type}
                unit.reject(Reject("filter", d.reason or "", r.source_image_id, r.id, detail=detail))
                out.append(NegativeDecisionRow(id=r.id, keep=False, reason=d.reason))
                continue
            passed = [k for k, c in enumerate(cands) if first_failure(c, active, "image_candidate")[1] is None]
            # `passed`: every candidate each filter keeps (the ImageCoDe export)
            scores = flatten(cands[d.candidate])
            out.append(NegativeDecisionRow(id=r.id, keep=True, candidate=d.candidate, scores=scores, passed=passed))
        return out

    def _review(self, unit: Unit, positives: list[PositiveDecisionRow], negatives: list[NegativeDecisionRow]) -> None:
        """The human filter, applied in place: dropped samples get keep False and the reason."""
        labels = load_labels(unit.root)
        if not unit.cfg.review.publish_annotators:  # the reasons and counts are published: no names in them
            labels = pseudonymous(labels)
        unit.meta["review"] = review_summary(labels)
        unit.meta["audit"] = audit_summary(unit.root, labels)  # {} without an audit (filters/human/audit.py)
        if not labels:
            return
        decided = {p.id: p for p in positives}
        pos_items = []
        for r in unit.records_all(LANGUAGE_POSITIVES):
            if r.id not in decided:
                decided[r.id] = PositiveDecisionRow(id=r.id, keep=True)
                positives.append(decided[r.id])
            if decided[r.id].keep:
                pos_items.append(Reviewable(r.id, r.image_id))
        kept = {d.id: d for d in negatives if d.keep}
        shown = [  # (negative, the image it is shown on)
            *((n, n.image_id) for n in unit.records_all(LANGUAGE_NEGATIVES)),
            *((n, n.source_image_id) for n in unit.records_all(IMAGE_NEGATIVES)),
        ]
        neg_items = [Reviewable(n.id, image, n.positive_id) for n, image in shown if n.id in kept]
        _, _, dropped = apply_labels(pos_items, neg_items, labels)
        for d in dropped:
            unit.reject(Reject("review", d.reason, d.image_id, d.sample_id, detail=d.detail))
            target = kept.get(d.sample_id) or decided.get(d.sample_id)
            if target is not None:
                target.keep, target.reason = False, d.reason
        unit.stats["review_dropped"] = len(dropped)


def _scores(stored: dict[int, FilterScoreRow], sample_id: int) -> dict[str, Scores]:
    """A positive's or a text negative's scores by filter version ({} where no filter scored it)."""
    row = stored.get(sample_id)
    return row.scores if row is not None else {}


def _refine(
    cfg: RunConfig, rows: dict[int, RefineScoreRow]
) -> tuple[set[int], dict[int, str], dict[int, tuple[str, tuple[int, ...]]], dict[str, dict[str, int]]]:
    """Kept ids, dropped ids with reasons, each pair's cell, and what each pair group kept."""
    if not cfg.refine.enabled:
        return set(rows), {}, {}, {}
    # each negative type and level on its own; a type with a level too small to fill one cell per quadrant is
    # balanced as one group, and the types too small for that even with their levels pooled are balanced
    # together ("replace_relation+swap_attribute"), or one such type with the smallest other type: a type of a
    # few pairs has no mirror of its own, so alone it would always be dropped whole, and a small run would
    # publish none of it
    sizes = Counter(r.group for r in rows.values())
    small = 4 * max(cfg.refine.min_per_cell, 1)
    pooled = {g.rpartition("/L")[0] for g, n in sizes.items() if n < small and cfg.refine.min_per_cell}
    totals = Counter(r.group.rpartition("/L")[0] for r in rows.values())
    rare = sorted(t for t in pooled if totals[t] < small)
    if len(rare) == 1 and len(totals) > 1:  # alone it has no mirror either: with the smallest other type
        rare = sorted([*rare, min((t for t in totals if t != rare[0]), key=lambda t: (totals[t], t))])
    together = {t: "+".join(rare) for t in rare}

    def group(r: RefineScoreRow) -> str:
        kind = r.group.rpartition("/L")[0]
        return together.get(kind) or (kind if kind in pooled else r.group)

    pairs = [
        RefinePair(str(r.id), r.s1[0] - r.s1[1], r.s2[0] - r.s2[1], group(r), str(r.positive or ""))
        for r in rows.values()
    ]
    result = refine(
        pairs,
        seed=cfg.seed,
        bins_2d=cfg.refine.bins_2d,
        bins_1d=cfg.refine.bins_1d,
        min_per_cell=cfg.refine.min_per_cell,
    )
    return (
        {int(k) for k in result.kept},
        {int(k): v for k, v in result.dropped.items()},
        {int(k): v for k, v in result.cells.items()},
        result.groups,
    )
