"""The report's words: reject reasons as people read them, scores rounded, and what each score means.

A reject's `reason` is written by the stage that dropped it, often with the stage's name in front
("refine: larger side of ..."); the report shows the stage beside it, so the name is dropped from the
reason rather than doubled. Numbers stay, rounded where they carry noise digits; no word is blanked.
"""

from __future__ import annotations

import re
from typing import Any

from hardneg.core.plugins import FILTERS
from hardneg.core.registry import Registry
from hardneg.review.report.assets import esc

SIG = 3  # significant digits for every score and long number the report shows

# The run's own scores, beside those of the filters (`Filter.legend`): what each measures and which way is
# better. A key ending in "_" names a family of scores (a prefix).
RUN_SCORES: dict[str, str] = {
    "refine_s1": "plausibility under the first blind text scorer (an n-gram model fit on the other fold's "
    "positives), shown positive / negative; higher is more plausible. Refinement keeps as many pairs where "
    "it prefers the negative as where it prefers the positive",
    "refine_s2": "acceptability under the second blind text scorer (grammar rules or a classifier), shown "
    "positive / negative; higher is more acceptable",
    "annotation_risk": "how likely the scene-graph annotation behind the sample is wrong (0 = safe)",
}


def score_legend() -> dict[str, str]:
    """Every score's line: the run's own, then each registered filter's in registry order (the first line
    for a name wins: two filters that store "realism" mean the same by it)."""
    out = dict(RUN_SCORES)
    for _, cls in FILTERS.items():
        for line in cls.legend:
            out.setdefault(line.name, line.text)
    return out


_LONG_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{5,}(?:e[-+]?\d+)?(?![\w.])")  # noise digits: 0.99933338
_OBJECT_ID = re.compile(r"\bobject (\d{3,})\b")


def fmt_num(x: float | int) -> str:
    """A number at `SIG` significant digits, without an exponent for ordinary magnitudes."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    if x != x:  # NaN
        return "nan"
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 10**SIG:
        return f"{float(f'{x:.{SIG}g}'):f}".rstrip("0").rstrip(".")
    return f"{x:.{SIG}g}" if abs(x) < 1e-4 else f"{round(x):d}"


def fmt_value(v: Any) -> str:
    """A score or detail value as text: numbers rounded, pairs as "a / b", nested values flattened."""
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    if isinstance(v, int | float):
        return fmt_num(v)
    if isinstance(v, list | tuple):
        sep = " / " if v and all(isinstance(x, int | float) for x in v) else ", "
        return sep.join(fmt_value(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k} {fmt_value(x)}" for k, x in v.items())
    return " ".join(str(v).split())


def clean_reason(stage: str, reason: Any) -> str:
    """The reason in words: the stage's own name dropped from its front (the page shows the stage), runs
    of whitespace collapsed, noise digits rounded. Nothing is blanked."""
    s = " ".join(str(reason if reason is not None else "").split())
    prefix = f"{stage}:"
    while stage and s.lower().startswith(prefix.lower()):
        s = s[len(prefix) :].lstrip()
    s = _LONG_NUMBER.sub(lambda m: fmt_num(float(m.group())), s)
    return s or "no reason recorded"


def named_objects(reason: Any) -> list[str]:
    """Scene-graph object ids a reason names ("object 3000018 ('box') may match"), in order."""
    return list(dict.fromkeys(_OBJECT_ID.findall(str(reason or ""))))


def legend_line(name: str) -> str | None:
    """The legend's line for a score name: its own, else its family's, else None."""
    legend = score_legend()
    if name in legend:
        return legend[name]
    return next((line for key, line in legend.items() if key.endswith("_") and name.startswith(key)), None)


def is_score(name: str) -> bool:
    return legend_line(name) is not None


def scores_html(scores: Any, skip: set[str] | None = None) -> str:
    """Scores as "name value" pairs, rounded, each with its legend line as a tooltip."""
    if not isinstance(scores, dict) or not scores:
        return ""
    parts = []
    for k, v in scores.items():
        if (skip and k in skip) or not isinstance(v, int | float | list | str) or isinstance(v, bool):
            continue
        title = legend_line(str(k))
        tip = f" title='{esc(title)}'" if title else ""
        parts.append(f"<span{tip}>{esc(k)} {esc(fmt_value(v))}</span>")
    return f" <span class='scores'>{' · '.join(parts)}</span>" if parts else ""


def legend_html(names: set[str]) -> str:
    """The legend table for the score names a page shows (every family when `names` is empty)."""
    keys = sorted(names) if names else [k for k in score_legend() if not k.endswith("_")]
    rows = [(k, line) for k in keys if (line := legend_line(k)) is not None]
    if not rows:
        return ""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(line)}</td></tr>" for k, line in rows)
    return (
        "<details class='legend-scores' open><summary>What the scores mean</summary>"
        f"<p class='small'>Shown to {SIG} significant digits.</p>"
        f"<div class='scroll'><table class='left legend'>{body}</table></div></details>"
    )


def kinds_html(registry: Registry[Any], records: list[dict[str, Any]]) -> str:
    """What each kind of negative among `records` is (its registered label and description), in the
    registry's order; a kind the registry does not know shows its name alone."""
    present = {str(r.get("negative_type")) for r in records if r.get("negative_type")}
    if not present:
        return ""
    known = [(n, cls.label, cls.description) for n, cls in registry.items() if n in present]
    known += [(n, "", "") for n in sorted(present - {n for n, _, _ in known})]
    body = "".join(f"<tr><th>{esc(n)}</th><td>{esc(label)}</td><td>{esc(d)}</td></tr>" for n, label, d in known)
    return (
        "<details class='legend-scores' open><summary>The kinds of negative</summary>"
        f"<div class='scroll'><table class='left legend'>{body}</table></div></details>"
    )
