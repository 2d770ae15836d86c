"""The run's statistics in the paper's shape (FineCops-Ref tables), as `stats.json` and `stats.md`."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.hygiene import CHANGES as HYGIENE_CHANGES
from hardneg.core.pixels.claims import RULE_TEXT
from hardneg.core.runner.reasons import reason_counts
from hardneg.core.splits import SPLITS

LEVELS = (1, 2, 3)


def text_mix(language: dict[str, int], decide_meta: dict[str, Any]) -> dict[str, Any]:
    """Per text negative type: made by the language stage, kept by refinement (and the filters), emitted
    after the type mix, the share against the target; the mix's warnings. From the stage summaries."""
    mix = decide_meta.get("mix") or {}
    refined: Counter = Counter()
    for group, g in (decide_meta.get("refine") or {}).items():
        refined[group.split("/")[0]] += g["kept"]
    made: Counter = Counter()
    for key, n in language.items():
        parts = key.split(":")
        if parts[0] == "made" and len(parts) == 3:
            made[parts[1]] += n
    types = {
        t: {"made": made[t], "refined": refined[t] if decide_meta.get("refine") else made[t], **r}
        for t, r in (mix.get("types") or {}).items()
    }
    emitted = sum(r["emitted"] for r in types.values())
    positives = mix.get("positives") or 0
    return {
        "types": types,
        "refine_groups": decide_meta.get("refine") or {},
        "positives": positives,
        "emitted": emitted,
        "per_positive": round(emitted / positives, 3) if positives else None,
        "cap": mix.get("cap"),
        "floor": mix.get("floor", 0.5),
        "warnings": list(mix.get("warnings") or []),
    }


def positive_risk(decide_stats: dict[str, int], max_risk: float | None) -> dict[str, Any]:
    """Positives per risk band (generators/paths/annotation_rules.py) and how many `risk.max` dropped."""
    return {
        "bands": {b: decide_stats.get(f"risk:{b}", 0) for b in ("none", "low", "medium", "high")},
        "max": max_risk,
        "dropped": decide_stats.get("risk_dropped", 0),
    }


def pixel_rules(pixels: dict[str, int], decide: dict[str, int]) -> dict[str, Any]:
    """What each pixel rule checked, found and acted on (the pixels and decide stages' counts: a finding on
    a positive another rule dropped first is found, not acted on), the cost, and the risk cut by level."""
    acted = {rule: decide.get(f"pixels:removed:{rule}", 0) + decide.get(f"pixels:risk:{rule}", 0) for rule in RULE_TEXT}
    acted["twin_resolved"] = decide.get("pixels:resolved:unannotated_twin", 0)
    images = pixels.get("images", 0)
    return {
        "not_run": next((k.split(":", 1)[1] for k in sorted(pixels) if k.startswith("not_run:")), None),
        "rules": {
            rule: {
                "checks": text,
                "checked": pixels.get(f"checked:{rule}", 0),
                "found": pixels.get(f"found:{rule}", 0),
                "acted": acted[rule],
            }
            for rule, text in RULE_TEXT.items()
        },
        "images": images,
        "objects": pixels.get("objects", 0),
        "masks": pixels.get("masks", 0),
        "ms_per_image": round(pixels.get("ms", 0) / images) if images else None,
        "by_level": {
            f"{what}:{family}": decide.get(f"risk_{what}:{family}", 0)
            for what in ("level_dropped", "flagged")
            for family in ("twin", "box")
        },
    }


def build_stats(
    positives: Counter,
    text_negatives: Counter,
    image_negatives: Counter,
    filters: dict[str, dict[str, Any]],
    review: dict[str, Any] | None = None,
    mix: dict[str, Any] | None = None,
    audit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Counters keyed by (split, type, level); `filters` maps a filter to {"passed", "seen"}, or to
    {"not_run": True} for a configured filter that could not run (it never reads as 100% passed);
    `audit`: the audit's estimates (`hardneg review --audit N`), {} when none was drawn."""
    pos_split_level = {
        s: {f"L{lv}": sum(n for (sp, _, l2), n in positives.items() if sp == s and l2 == lv) for lv in LEVELS}
        for s in SPLITS
    }
    pos_type_level = {
        t: {f"L{lv}": sum(n for (_, t2, l2), n in positives.items() if t2 == t and l2 == lv) for lv in LEVELS}
        for t in sorted({t for _, t, _ in positives})
    }

    def by_type_level(c: Counter) -> dict[str, dict[str, int]]:
        return {
            f"{t}/L{lv}": {s: c.get((s, t, lv), 0) for s in SPLITS} for t, lv in sorted({(t, lv) for _, t, lv in c})
        }

    return {
        "positives_by_split_level": pos_split_level,
        "positives_by_type_level": pos_type_level,
        "text_negatives_by_type_level": by_type_level(text_negatives),
        "image_negatives_by_type_level": by_type_level(image_negatives),
        "totals": {
            "positives": {s: sum(pos_split_level[s].values()) for s in SPLITS},
            "text_negatives": {s: sum(n for (sp, _, _), n in text_negatives.items() if sp == s) for s in SPLITS},
            "image_negatives": {s: sum(n for (sp, _, _), n in image_negatives.items() if sp == s) for s in SPLITS},
        },
        "filters": {
            k: {**v, "rate": round(v["passed"] / v["seen"], 4) if v.get("seen") else None} for k, v in filters.items()
        },
        "text_negative_mix": mix or {},
        "review": review or {},
        "audit": audit or {},
    }


def run_header(manifest: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """What made the run, for the top of stats.md: inputs by name (never an absolute path), seed, config
    fingerprint, the code's version, and how many images came in."""
    sg = manifest["inputs"]["scene_graphs"]
    demo = cfg.inputs.scene_graphs is None
    ingest = manifest["counts"]["ingest"]
    return {
        "inputs": f"the demo world ({cfg.demo.n_scenes} scenes, seed {cfg.demo.seed})" if demo else Path(sg).name,
        "images": None if demo or manifest["inputs"]["images"] is None else Path(manifest["inputs"]["images"]).name,
        "images_kept": ingest.get("images_kept"),
        "seed": manifest["seed"],
        "config": cfg.name or manifest["config_fingerprint"],
        "hardneg": manifest["hardneg_version"],
    }


def rejects_summary(sources: Path | Iterable[tuple[Path, list | None]], top: int = 3) -> dict[str, dict[str, Any]]:
    """Per stage: how many samples went to rejects.jsonl, and its commonest reasons (numbers left out). From
    one file of rejects, or from reject files in order, each with its unit's counts by reason key when its
    marker kept them (`core/runner/reasons.py`: then the file is not read again)."""
    count: Counter = Counter()
    reasons: dict[str, Counter] = defaultdict(Counter)
    for path, tallied in [(sources, None)] if isinstance(sources, Path) else sources:
        for stage, key, n in tallied if tallied is not None else _tally(path):
            count[stage] += n
            reasons[stage][key] += n
    return {s: {"count": n, "reasons": dict(reasons[s].most_common(top))} for s, n in count.most_common()}


def _tally(path: Path) -> list[list]:
    if not path.exists():
        return []
    with path.open("rb") as f:
        return reason_counts((r["stage"], r.get("reason") or "") for r in map(orjson.loads, f))


def gist(reason: str) -> str:
    """What a rejection reason names, without its numbers, so like reasons count together: for a negative
    no candidate of which passed, the first check its candidates failed ("smear", "pasted rectangle")."""
    parts = reason.split("; ")
    text = parts[1] if parts[0].startswith("filter: no candidate passed") and len(parts) > 1 else parts[0]
    head = text.removeprefix("filter: ").split(":")[0]
    return " ".join("".join(c for c in head if not c.isdigit() and c not in "%().<=").split())


def image_edit_table(edits: dict[str, Counter], images_stats: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per negative image type: refused before painting (the certificate, the paste-fit and flip rules),
    made, verified in the pixels (kept by every filter), rejected, and the commonest reasons."""
    from hardneg.generators.images.types import off_by_default

    off = off_by_default("opencv")
    out = {}
    noted = ("refused:", "uncertified:", "off:", "unverified:")
    for t in sorted(set(edits) | {k.split(":")[1] for k in images_stats if k.startswith(noted)}):
        c = edits.get(t, Counter())
        why = Counter({k[4:]: n for k, n in c.items() if k.startswith("why:")})
        note = None
        if images_stats.get(f"off:{t}"):
            note = f"off by default offline: {off.get(t) or 'its edits are not verified'}"
        elif images_stats.get(f"unverified:{t}"):
            note = "made because images.types names it: offline edits of this kind are not verified"
        out[t] = {
            "note": note,
            "refused": images_stats.get(f"refused:{t}", 0),
            "uncertified": images_stats.get(f"uncertified:{t}", 0),
            "made": c["made"],
            "verified": c["verified"],
            "rejected": c["made"] - c["verified"],
            "reasons": dict(why.most_common(3)),
        }
    return out


def _table(title: str, header: list[str], rows: list[list[Any]]) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _estimate_row(name: str, what: str, c: dict[str, Any]) -> list[Any]:
    """One audit row; a row nothing is labelled in says so, never a made-up 0%."""
    if c["share"] is None:
        return [name, what, c["population"], c["drawn"], 0, "nothing labelled yet", "-"]
    est = f"{c['share']:.1%}" + (f" (of {c['coverage']:.0%} of it)" if c.get("coverage", 1) < 1 else "")
    return [name, what, c["population"], c["drawn"], c["labelled"], est, f"{c['low']:.1%} to {c['high']:.1%}"]


def _audit_table(audit: dict[str, Any]) -> str:
    """The audit's estimates: overall (strata weighted by size), per negative type, per stratum."""
    what = {"positive": "unusable"}
    rows = [_estimate_row(f"**{k}**", "", c) for k, c in audit["overall"].items()]
    rows += [_estimate_row(t, "still true", c) for t, c in audit["by_negative_type"].items()]
    rows += [_estimate_row(k, what.get(k.split("/")[0], "still true"), c) for k, c in audit["strata"].items()]
    header = ["stratum", "error", "in dataset", "drawn", "n labelled", "estimate", "95% interval"]
    note = (
        f"A random sample of the final dataset (`hardneg review RUN --audit {audit['asked']}`, seed "
        f"{audit['seed']}, drawn {audit['drawn_at']}), stratified by kind, type and level and labelled "
        f"without scores: {audit['labelled']} of {audit['drawn']} items labelled"
        + (f", {audit['tied']} tied (not counted)" if audit.get("tied") else "")
        + ". Unusable: Ambiguous or Wrong expression; still true: Still true. Wilson intervals; the overall "
        "rows weight the strata by their sizes (an estimate over part of the dataset says of how much). The "
        "audit's labels vote like any other: `hardneg split` drops what they find wrong (docs/review.md).\n"
    )
    return _table("Audit: estimated error rates (n labelled, 95% interval)", header, rows) + "\n" + note


def official_finecops(stats: dict[str, Any]) -> str:
    """Which splits FineCops-Ref's own `eval_metric.py` can score: it needs a negative (its recall table has a
    row per negative type) and a level-1 positive (its AUROC pools the level-1 positives' scores)."""
    ok, why = [], []
    for s in SPLITS:
        negatives = sum(v.get(s, 0) for k in ("text_negatives_by_type_level", "image_negatives_by_type_level")
                        for v in stats[k].values())  # fmt: skip
        level1 = stats["positives_by_split_level"][s].get("L1", 0)
        if negatives and level1:
            ok.append(s)
        else:
            lacks = (
                "neither negatives nor level-1 positives"
                if not negatives and not level1
                else ("no negatives" if not negatives else "no level-1 positives")
            )
            why.append(f"not {s}: it has {lacks}")
    can = f"scores {', '.join(ok)}" if ok else "scores no split"
    line = f"FineCops-Ref's own `eval_metric.py` {can}" + ("; " + "; ".join(why) if why else "")
    tail = " (`hardneg.evaluation.finecops` scores any split).\n" if why else ".\n"
    return "### FineCops-Ref's official evaluation\n\n" + line + tail


def _pixel_table(p: dict[str, Any]) -> str:
    """The pixel rules' table, and the risk acted on by level (`filters/evidence.py`)."""
    lv = p["by_level"]
    cut = (
        f"Risk acted on where it hurts most (`risk.drop_levels`): dropped for twin risk {lv['level_dropped:twin']}, "
        f"for box risk {lv['level_dropped:box']}; at the other levels flagged and kept, first in the review queue: "
        f"twin {lv['flagged:twin']}, box {lv['flagged:box']}.\n"
    )
    if p["not_run"]:
        return f"### Pixel evidence\n\nNot checked: {p['not_run']} (`--images`); the graph alone decided.\n\n" + cut
    rows = [[rule, r["checks"], r["checked"], r["found"], r["acted"]] for rule, r in p["rules"].items()]
    title = (
        f"Pixel evidence: each claim against the photo ({p['images']} images, {p['masks']} of their {p['objects']} "
        f"objects masked, {p['ms_per_image']} ms an image; acted on: dropped, risk added or settled)"
    )
    return _table(title, ["rule", "what it checks", "checked", "found", "acted on"], rows) + "\n" + cut


def markdown(stats: dict[str, Any]) -> str:
    """`stats.md`'s text: the run's header, its warnings and the tables in the paper's shape (the run
    publishes it with the exports' section: `exports/summary.py`)."""
    parts = ["# Run statistics\n"]
    if head := stats.get("run"):
        images = f", images `{head['images']}`" if head.get("images") else ""
        kept = f" ({head['images_kept']} images kept)" if head.get("images_kept") is not None else ""
        parts.append(
            f"Inputs: {head['inputs']}{images}{kept}. Seed {head['seed']}, config `{head['config']}`, "
            f"hardneg {head['hardneg']}"
            + (f", begun {head['date']}" if head.get("date") else "")
            + ". Rejects, with every reason: `rejects.jsonl`.\n"
        )
    changed = stats.get("hygiene") or {}
    if said := [f"{changed[k]:,} {what}" for k, what in HYGIENE_CHANGES.items() if changed.get(k)]:
        parts.append("Scene graphs cleaned before any path: " + ", ".join(said) + ".\n")
    mix = stats.get("text_negative_mix") or {}
    warnings = stats.get("warnings", mix.get("warnings"))
    if warnings:
        parts.append("**Warnings**\n\n" + "\n".join(f"- **{w}**" for w in warnings) + "\n")
    psl = stats["positives_by_split_level"]
    parts.append(_table("Positives per split and level", ["split", "L1", "L2", "L3", "total"],
                        [[s, *psl[s].values(), sum(psl[s].values())] for s in SPLITS]))  # fmt: skip
    ptl = stats["positives_by_type_level"]
    parts.append(
        _table(
            "Positives per path type and level", ["type", "L1", "L2", "L3"], [[t, *v.values()] for t, v in ptl.items()]
        )
    )
    for key, title in (("text_negatives_by_type_level", "Text negatives per type, level and split"),
                       ("image_negatives_by_type_level", "Image negatives per type, level and split")):  # fmt: skip
        rows = [[k, *v.values(), sum(v.values())] for k, v in stats[key].items()]
        parts.append(_table(title, ["type/level", *SPLITS, "total"], rows or [["(none)", 0, 0, 0, 0]]))
    rates = [
        [k, "-", "-", "not run"] if v.get("not_run") else
        [k, "-", "-", "not configured"] if v.get("not_configured") else
        [k, v["passed"], v["seen"], "n/a" if v["rate"] is None else f"{v['rate']:.1%}"]
        for k, v in stats["filters"].items()
    ]  # fmt: skip
    parts.append(_table("Filter pass rates", ["filter", "passed", "seen", "rate"], rates))
    parts.append(official_finecops(stats))
    if mix.get("types"):
        rows = [
            [t, r["made"], r["refined"], r["emitted"], f"{r['share']:.0%}", f"{r['target']:.0%}",
             "yes" if r["share"] >= mix["floor"] * r["target"] or not r["target"] else "**no**"]
            for t, r in mix["types"].items()
        ]  # fmt: skip
        title = (
            f"Text negative types: target mix and what each step kept ({mix['emitted']} for {mix['positives']} "
            f"positives, {mix['per_positive']} per positive; at most {mix['cap']})"
        )
        header = [
            "type",
            "made",
            "kept by refinement",
            "emitted",
            "share",
            "target",
            f"at {mix['floor']:.0%} of target",
        ]
        parts.append(_table(title, header, rows))
    if mix.get("refine_groups"):
        rows = [[g, r["pairs"], r["kept"], f"{r['kept'] / r['pairs']:.0%}" if r["pairs"] else "-"]
                for g, r in sorted(mix["refine_groups"].items())]  # fmt: skip
        title = (
            "Refinement per negative type and level (a type with a level too small to balance is one group; "
            "types too small even so are balanced together, joined by +)"
        )
        parts.append(_table(title, ["group", "pairs", "kept", "rate"], rows))
    edits = stats.get("image_edits") or {}
    if edits:
        rows = [
            [t, r["refused"], r["uncertified"], r["made"], r["verified"], r["rejected"],
             "; ".join([*([f"**{r['note']}**"] if r.get("note") else []),
                        *(f"{w} ({n})" for w, n in r["reasons"].items())]) or "-"]
            for t, r in edits.items()
        ]  # fmt: skip
        title = (
            "Negative images per edit type: refused before painting (a rule, or an edit that may leave the "
            "expression true), made, verified in the pixels by every filter, rejected (an offline edit that "
            "looks fake is rejected here: configure the diffusers backend for more)"
        )
        header = ["type", "refused", "may stay true", "made", "verified", "rejected", "commonest reasons"]
        parts.append(_table(title, header, rows))
    risk = stats.get("positive_risk") or {}
    if risk.get("bands"):
        rows = [[b, n] for b, n in risk["bands"].items()]
        title = "Positives by risk: none 0, low < 0.3, medium < 0.5, high (what the graph cannot rule out; " + (
            f"`risk.max` {risk['max']} dropped {risk['dropped']})" if risk["max"] is not None else "not dropped)"
        )
        parts.append(_table(title, ["risk", "positives"], rows))
    if pixels := stats.get("pixel_rules"):
        parts.append(_pixel_table(pixels))
    rejects = stats.get("rejects") or {}
    if rejects:
        rows = [
            [stage, r["count"], "; ".join(f"{w} ({n})" for w, n in r["reasons"].items())]
            for stage, r in rejects.items()
        ]
        parts.append(_table("Rejects per stage and their commonest reasons", ["stage", "rejects", "reasons"], rows))
    review = stats.get("review") or {}
    if review.get("items"):
        rows = [
            [who, ", ".join(f"{k} {v}" for k, v in labels.items())] for who, labels in review["by_annotator"].items()
        ]
        rows += [[f"{a['a']} vs {a['b']}", f"kappa {a['kappa']} on {a['items']} items"] for a in review["agreement"]]
        tied = review.get("tied", 0)  # no majority: kept, and first in the review app for an adjudicator
        if tied:
            more = " …" if tied > len(review.get("tied_items", [])) else ""
            rows.append(["tied (kept, to adjudicate)", ", ".join(map(str, review.get("tied_items", []))) + more])
        title = f"Human review: {review['items']} items, {review['dropping']} dropped, {tied} tied"
        if review.get("adjudicated"):
            title += f", {review['adjudicated']} by an adjudicator"
        title += " (a majority of annotators decides; docs/review.md)"
        parts.append(_table(title, ["annotator", "labels"], rows))
    if stats.get("audit"):
        parts.append(_audit_table(stats["audit"]))
    return "\n".join(parts)
