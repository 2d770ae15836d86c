"""The refine stage: score every (positive, text negative) pair with the two blind text scorers of
`refine.scorers` (SugarCREPE). Global, because the n-gram LM is fit on the positives;
scores only: the balancing decision is the decide stage's.
"""

from __future__ import annotations

from typing import Any

from hardneg.core.config import RunConfig
from hardneg.core.errors import ConfigError
from hardneg.core.gqa.plausibility import fold_of, load_fold_plausibility
from hardneg.core.rows import (
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    PLAUSIBILITY_COUNTS,
    PLAUSIBILITY_FOLDCOUNTS,
    PLAUSIBILITY_PRIOR,
    REFINE_SCORES,
    RefineScoreRow,
)
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.filters.base import Item, TextClaim
from hardneg.filters.registry import build, filter_class
from hardneg.filters.scorers.text import NGramFilter, TextFilter


def text_filter(spec: dict[str, Any], i: int) -> TextFilter:
    options = {k: v for k, v in spec.items() if k != "kind"}
    f = build(spec["kind"], options, where=f"refine.scorers[{i}]")
    if not isinstance(f, TextFilter):
        raise ConfigError(f"refine.scorers[{i}]: {spec['kind']!r} does not score text alone")
    return f


class RefineStage(Stage):
    name = "refine"
    # v2: the plausibility scorer is cross-fit too; v3: the n-gram LM knows the words of the corpus and the prior;
    # v4: a row names its positive (refinement keeps the pairs of positives with fewest kept first)
    version = "refine-scores@v4"
    reads = ("language", "plausibility")
    writes = outputs(REFINE_SCORES)
    config = ("refine.scorers",)
    sharded = False

    def validate(self, cfg: RunConfig) -> None:
        for i, spec in enumerate(cfg.refine.scorers):
            text_filter(spec, i)

    def extra_fingerprint(self, run: Run) -> Any:
        """Each scorer's version: a new one must score again."""
        return [filter_class(spec["kind"]).version for spec in run.cfg.refine.scorers]

    def run(self, unit: Unit) -> None:
        # text -> what a blind scorer reads of the records that say it: the text and its path (the plausibility
        # scorer scores the facts it states). Held per distinct text for every sample of the run, so not the
        # whole records (at GQA scale those held 2.2 GiB)
        claims: dict[str, TextClaim] = {}
        positives = {}
        for p in unit.records_all(LANGUAGE_POSITIVES):
            positives[p.id] = (p.image_id, p.expression)
            claims.setdefault(p.expression, TextClaim(p.expression, p.path))
        negatives = []
        groups = {}  # refinement balances each negative type and level on its own
        for n in unit.records_all(LANGUAGE_NEGATIVES):
            negatives.append((n.id, n.positive_id, n.expression))
            groups[n.id] = f"{n.negative_type}/L{n.negative_level}"
            claims.setdefault(n.expression, TextClaim(n.expression, n.path))
        unit.items_in = len(negatives)
        filters = [text_filter(spec, i) for i, spec in enumerate(unit.cfg.refine.scorers)]
        unit.meta["scorers"] = [f.identity for f in filters]
        rows: list[RefineScoreRow] = []
        if negatives:
            # Cross-fitting: a scorer that is fit (the n-gram LM on the positives, the plausibility model on
            # the scene graphs) is fit on one half of the images and scores the other half. Fit on all, it
            # would count the very positive (or annotation) it judges as evidence and prefer it by
            # construction, leaving no pair a mirror cell.
            fold = {pid: fold_of(img) for pid, (img, _) in positives.items()}
            models = None
            if any(getattr(f, "needs_counts", False) for f in filters):
                models = load_fold_plausibility(
                    unit.read_all(PLAUSIBILITY_FOLDCOUNTS), unit.read_all(PLAUSIBILITY_PRIOR)
                )
            per_fold: list[list[TextFilter]] = []
            for f in filters:
                if isinstance(f, NGramFilter):
                    vocabulary = _vocabulary(unit)
                    per_fold.append([
                        f.fitted(sorted({t for pid, (_, t) in positives.items() if fold[pid] != k}), vocabulary)
                        for k in (0, 1)
                    ])  # fmt: skip
                elif getattr(f, "needs_counts", False):
                    per_fold.append([f.using(models[1 - k]) for k in (0, 1)])  # type: ignore[attr-defined, index]
                else:
                    per_fold.append([f, f])
            for k in (0, 1):
                mine = [(nid, pid, text) for nid, pid, text in negatives if fold[pid] == k]
                texts = sorted({positives[pid][1] for _, pid, _ in mine} | {t for _, _, t in mine})
                if not texts:
                    continue
                items = [Item(0, "text", claims[t], t) for t in texts]
                s1 = {t: s["score"] for t, s in zip(texts, per_fold[0][k].score(items), strict=True)}
                s2 = {t: s["score"] for t, s in zip(texts, per_fold[1][k].score(items), strict=True)}
                for nid, pid, text in mine:
                    pos = positives[pid][1]
                    rows.append(RefineScoreRow(id=nid, group=groups[nid], s1=[s1[pos], s1[text]],
                                               s2=[s2[pos], s2[text]], positive=pid))  # fmt: skip
            rows.sort(key=lambda r: r.id)
        unit.write("scores", rows)


VOCABULARY = ("names", "attributes", "relations")


def _vocabulary(unit: Unit) -> list[str]:
    """The corpus's words, the run's and the prior's: names, attributes, relations (the n-gram LM knows them)."""
    words = {c.key for c in unit.records_all(PLAUSIBILITY_COUNTS) if c.kind in VOCABULARY}
    for p in unit.records_all(PLAUSIBILITY_PRIOR):
        if p.kind.partition(":")[2] in VOCABULARY:
            words.update(p.keys)
    return sorted(words)
