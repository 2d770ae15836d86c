"""The decision rules: the one place thresholds are applied (score first, decide later: a new threshold
never re-scores).

Pure functions of stored scores and the config's thresholds: each configured filter's `keep` in config
order, and for an image negative the best candidate among those every filter keeps (FineCops-Ref: the most
similar to the source). The decide stage (`filters/decide_stage.py`) applies them; no model, no torch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hardneg.core.config import RunConfig
from hardneg.core.errors import ConfigError
from hardneg.filters.base import Filter, Scores, Settings
from hardneg.filters.registry import filter_class, thresholds


@dataclass(frozen=True, slots=True)
class Rule:
    """One filter's decision half: its class (for `keep`, `targets`, `rank`) and its thresholds."""

    cls: type[Filter]
    thresholds: Settings

    @property
    def name(self) -> str:
        return self.cls.name


@dataclass(frozen=True, slots=True)
class Decision:
    keep: bool
    reason: str | None = None  # why not, when dropped
    candidate: int | None = None  # image negatives: the chosen candidate
    losers: tuple[tuple[int, str], ...] = ()  # image negatives: (candidate, why it lost)


def rules(cfg: RunConfig) -> list[Rule]:
    """The configured filters' decision rules, in config order; thresholds for a filter that does not
    run are an error (they would silently decide nothing)."""
    for name in cfg.filters.thresholds:
        filter_class(name)
        if name not in cfg.filters.scorers:
            raise ConfigError(f"filters.thresholds.{name}: {name} does not run; add it to filters.scorers")
    return [Rule(filter_class(n), thresholds(n, cfg.filters.thresholds.get(n))) for n in cfg.filters.scorers]


def _by_version(stored: dict[str, Scores], rule: Rule) -> Scores:
    return stored.get(rule.cls.version, {})


def first_failure(stored: dict[str, Scores], rules_: list[Rule], target: str) -> tuple[list[str], str | None]:
    """Apply the rules for `target` in order until one fails: (the names of the rules applied, the
    failure's reason or None). The last name applied is the failing rule's when there is a reason."""
    applied = []
    for r in rules_:
        if target in r.cls.targets:
            applied.append(r.name)
            ok, why = r.cls.keep(_by_version(stored, r), r.thresholds)
            if not ok:
                return applied, f"filter: {why}"
    return applied, None


def decide_text(stored: dict[str, Scores], rules_: list[Rule]) -> Decision:
    """A text negative: kept unless a filter's `keep` says no."""
    why = first_failure(stored, rules_, "text_negative")[1]
    return Decision(why is None, why)


def decide_image(candidates: list[dict[str, Scores]], rules_: list[Rule]) -> Decision:
    """An image negative's candidates: drop those any filter rejects, keep the best of the rest by the
    ranking filter's score (ties, and no ranker: the lower index)."""
    ranker = next((r for r in rules_ if r.cls.rank and "image_candidate" in r.cls.targets), None)
    passing: list[tuple[float, int]] = []
    losers: list[tuple[int, str]] = []
    for k, stored in enumerate(candidates):
        why = first_failure(stored, rules_, "image_candidate")[1]
        if why is not None:
            losers.append((k, why))
            continue
        value = _by_version(stored, ranker).get(ranker.cls.rank) if ranker else None  # type: ignore[arg-type]
        passing.append((float("-inf") if value is None else value, k))
    if not passing:
        # the commonest failure names what to fix ("edits: ..." says the offline edit looked fake)
        common = Counter(why.removeprefix("filter: ") for _, why in losers).most_common(1)
        why = f"filter: no candidate passed ({len(candidates)} tried)" + (f"; {common[0][0]}" if common else "")
        return Decision(False, why, None, tuple(losers))
    best = max(passing, key=lambda p: (p[0], -p[1]))[1]
    for value, k in passing:
        if k != best:
            what = f"this one's {ranker.cls.rank} {value:.4f}" if ranker else "the first passing one wins"
            losers.append((k, f"filter: best of {len(candidates)} is candidate {best}, {what}"))
    return Decision(True, None, best, tuple(sorted(losers)))


def flatten(stored: dict[str, Scores]) -> Scores:
    """Scores by name for the output records (`{"similarity": ..}`); the manifest says which version."""
    out: Scores = {}
    for scores in stored.values():
        out.update(scores)
    return out
