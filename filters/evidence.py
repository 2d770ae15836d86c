"""What the decide stage does with the photo's findings and with each positive's risk.

- **The photo** (the pixels stage, `core/pixels/claims.py`): a positive with a finding of a rule in
  `pixels.drop` (a colour the photo contradicts, a single colour on a multi-coloured object, a same-colour
  edge the photo contradicts) is dropped with the finding's reason; so is a text negative whose new colour
  the photo shows (`colour_still_true`). The other findings are risks: `colour_twin`, `photo_twin`,
  `photo_lookalike` join the positive's `risk_reasons`; a graph doubt the photo settled (every object the
  graph left open is ruled out by its colours) takes `unannotated_twin` out of them.
- **Risk where it hurts most**: a positive's risk reasons fall in two families, *twin* (another object may
  fit: `TWIN_KINDS`) and *box* (the box may not be what its name says: `BOX_KINDS`), each combined as
  independent reasons. A positive of a level in `risk.drop_levels` (2 and 3 by default: the levels a model
  needs the expression's details for, and a person most often rejects) whose twin risk reaches
  `risk.drop_twin`, or box risk `risk.drop_box`, is dropped (stage `risk` in rejects); at the other levels it
  is kept and flagged (its score `at_risk` is 1), and the review queue (`review/priority.py`) starts with it.
"""

from __future__ import annotations

from collections import Counter

from hardneg.core.config import RunConfig
from hardneg.core.pixels.claims import POSITIVE_RULES, RISK_RULES, Finding
from hardneg.core.records import RiskReason
from hardneg.core.rows import PixelNegativeRow, PixelPositiveRow
from hardneg.generators.paths.annotation_rules import BOX_KINDS, RISK_WEIGHTS, TWIN_KINDS, combine

Reasons = list[RiskReason]


def with_photo(
    reasons: Reasons, row: PixelPositiveRow | None, cfg: RunConfig, stats: Counter
) -> tuple[Reasons, str | None]:
    """A positive's risk reasons with what the photo adds and settles, and the reason it is dropped for (a
    finding of a rule in `pixels.drop`), or None."""
    if row is None:
        return reasons, None
    stats.update(f"pixels:checked:{rule}" for rule in row.checked)
    out = list(reasons)
    if row.resolved is not None and any(r.kind == "unannotated_twin" for r in out):
        out = [r for r in out if r.kind != "unannotated_twin"]
        stats["pixels:resolved:unannotated_twin"] += 1
    findings = [Finding.from_json(f) for f in row.findings]
    for f in findings:
        if f.rule in RISK_RULES and not any(r.kind == f.rule for r in out):
            out.append(RiskReason(f.rule, f.reason, RISK_WEIGHTS[f.rule]))
            stats[f"pixels:risk:{f.rule}"] += 1
    drop = next((f for f in findings if f.rule in POSITIVE_RULES and f.rule in cfg.pixels.drop), None)
    if drop is None:
        return out, None
    stats[f"pixels:removed:{drop.rule}"] += 1
    return out, f"pixels: {drop.rule}: {drop.reason}"


def negative_photo(row: PixelNegativeRow | None, cfg: RunConfig, stats: Counter) -> str | None:
    """Why a text negative is still true in the photo (`colour_still_true` in `pixels.drop`), or None."""
    if row is None:
        return None
    stats["pixels:checked:colour_still_true"] += 1
    finding = Finding.from_json(row.finding) if row.finding is not None else None
    if finding is None or finding.rule not in cfg.pixels.drop:
        return None
    stats["pixels:removed:colour_still_true"] += 1
    return f"pixels: {finding.rule}: {finding.reason}"


def family_risks(reasons: Reasons) -> dict[str, float]:
    """The twin risk and the box risk of a positive's reasons (module docstring)."""
    return {
        "twin": combine(r.weight for r in reasons if r.kind in TWIN_KINDS),
        "box": combine(r.weight for r in reasons if r.kind in BOX_KINDS),
    }


def level_drop(level: int, reasons: Reasons, cfg: RunConfig, stats: Counter) -> tuple[str | None, bool]:
    """Why a positive of `level` is dropped for its twin or box risk (or None), and whether it is kept at risk
    (flagged: a level outside `risk.drop_levels` whose risk reaches the bar)."""
    risks = family_risks(reasons)
    bars = {"twin": cfg.risk.drop_twin, "box": cfg.risk.drop_box}
    high = [f for f in ("twin", "box") if bars[f] is not None and risks[f] >= bars[f]]  # type: ignore[operator]
    if not high:
        return None, False
    family = high[0]
    if level not in cfg.risk.drop_levels:
        stats[f"risk_flagged:{family}"] += 1
        return None, True
    stats[f"risk_level_dropped:{family}"] += 1
    kinds = TWIN_KINDS if family == "twin" else BOX_KINDS
    named = ", ".join(sorted({r.kind for r in reasons if r.kind in kinds}))
    what = "another object may fit" if family == "twin" else "the box may not be what its name says"
    bar = f"risk.drop_{family} {bars[family]}"
    return f"risk: {what} ({family} risk {risks[family]:.2f} >= {bar} at level {level}: {named})", False
