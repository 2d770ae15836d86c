"""The shape of the text negatives a run makes, against FineCops-Ref's: negatives per positive, the mix of
types and levels, and what each rule, refinement and the type mix removed per type.

    python -m benchmarks.shape                                            # the demo world
    python -m benchmarks.shape --scene-graphs /data/gqa/val_sceneGraphs.json   # real GQA graphs
    python -m benchmarks.shape --scene-graphs ... --config gqa            # another config
    python -m benchmarks.shape --corpus val=/data/val.json --sample val:10 --sample val:25 \
        --corpus photos=/data/photos/sceneGraphs.json,/data/photos/images   # one row per corpus

Runs ingest -> ... -> decide (text negatives only: no images) in a temp folder with the offline config
(the demo's, unless `--config`) and prints markdown:

- one row per negative type: candidates the language stage made, how many refinement and the type mix
  dropped, how many are emitted, the emitted share against the paper's test split (as it counts it: replace
  object 40%, attribute 18%, relation 19%, swap object 18%, swap attribute 5%), and whether the share is
  at least half the paper's;
- negatives per positive (candidates, after refinement, emitted; the paper's test split has 1.02);
- emitted negatives per type and level;
- what each generation rule refused per type (`refused:*`, replacement options kept out, sites with no
  word) and why refinement dropped what it dropped.

With `--corpus NAME=GRAPHS[,IMAGES]` (repeatable; `--sample NAME:N` adds a keyed draw of N graphs of a
corpus) it runs every corpus in turn and prints one row each instead: graphs, positives, text negatives
per positive, each type's share against the paper's, the negatives' and the positives' levels, and how far
the candidates that allow a swap of attributes got (`swap_attribute` is the rarest kind: a path must
describe two of its objects with different attributes of one category).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from hardneg.core.config import load_config
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.plugins import TEXT_NEGATIVES
from hardneg.core.rows import (
    DECIDED_NEGATIVES,
    DECIDED_POSITIVES,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    PATHS_POSITIVES,
    SELECT_KEPT,
)
from hardneg.core.runner.stage import Run
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.flows.pipeline import STAGES
from hardneg.generators.paths.select import swappable

TYPES = TEXT_NEGATIVES.names()
# each kind's weight in the default mix: for the paper's kinds, their counts in FineCops-Ref's test split (its
# Table 10: 9,814 text negatives for 9,605 positives)
PAPER = {name: cls.mix_weight for name, cls in TEXT_NEGATIVES.items()}
PAPER_PER_POSITIVE = 9814 / 9605
UPTO = "decide"


def run_text(root: Path, config: str | None, overrides: dict[str, Any]) -> Run:
    """The pipeline up to the decide stage, without negative images."""
    cfg = load_config(config, {"images": {"enabled": False}, **overrides})
    prepare_run(cfg, root)
    names = [s.name for s in STAGES]
    run = Run(root, cfg, [s for s in STAGES if names.index(s.name) <= names.index(UPTO)])
    for name in run.order:
        run.run_stage(name)
    return run


def measure(run: Run) -> dict[str, Any]:
    """Counts of what the run made and kept, per type and level, and why the rest went."""
    made = {r["id"]: (r["negative_type"], r["negative_level"]) for r in run.read_all(LANGUAGE_NEGATIVES)}
    emitted = {d["id"] for d in run.read_all(DECIDED_POSITIVES) if d["keep"]}  # as the splits hold them
    levels: Counter = Counter()
    for r in run.read_all(LANGUAGE_POSITIVES):
        levels[r["level"] if r["id"] in emitted else "dropped"] += 1
    kept: Counter = Counter()
    dropped: dict[str, Counter] = {}
    for d in run.read_all(DECIDED_NEGATIVES):
        t, lv = made[d["id"]]
        if d["keep"]:
            kept[(t, lv)] += 1
        else:
            why = d.get("reason") or ""
            stage = why.split(":", 1)[0] if ":" in why else "other"
            dropped.setdefault(stage, Counter())[t] += 1
    language = run.summary("language")["stats"]
    refine_reasons: dict[str, Counter] = {}
    for r in rejects(run, "decide"):
        if r["stage"] == "refine" and r.get("sample_id") in made:
            t, _ = made[r["sample_id"]]
            refine_reasons.setdefault(t, Counter())[_short(r["reason"])] += 1
    return {
        "positives": len(emitted),
        "positives_made": sum(levels.values()),
        "positive_levels": levels,
        "made": Counter(made.values()),
        "kept": kept,
        "dropped": dropped,
        "language": language,
        "refine_reasons": refine_reasons,
        "decide_meta": run.summary("decide").get("meta", {}),
    }


def rejects(run: Run, stage: str) -> list[dict]:
    import orjson

    d = run.stage_dir(stage) / "_rejects"
    return [orjson.loads(x) for f in sorted(d.glob("*.jsonl")) for x in f.read_bytes().splitlines() if x.strip()]


def _short(reason: str) -> str:
    """A refinement reason without its cell numbers ("refine: mirror cell empty")."""
    head = reason.split(":", 2)
    return ":".join(head[:2]).strip() if len(head) > 1 else reason


def _by_type(c: Counter) -> Counter:
    out: Counter = Counter()
    for (t, _), n in c.items():
        out[t] += n
    return out


def report(m: dict[str, Any], what: str, seconds: float) -> str:
    made, kept = _by_type(m["made"]), _by_type(m["kept"])
    n_pos = m["positives"]
    total_kept = sum(kept.values())
    total_paper = sum(PAPER.values())
    stages = sorted(m["dropped"])
    lines = [
        f"## Text negatives on {what} ({seconds:.0f} s)",
        "",
        f"{n_pos} positives emitted ({m['positives_made']} made); {sum(made.values())} candidate negatives "
        f"({sum(made.values()) / max(n_pos, 1):.2f} per positive), {total_kept} emitted "
        f"(**{total_kept / max(n_pos, 1):.2f} per positive**; the paper's test split {PAPER_PER_POSITIVE:.2f}).",
        "",
        "| type | made | " + " | ".join(f"dropped: {s}" for s in stages) + " | emitted | share | paper | >= half |",
        "|---|---|" + "---|" * len(stages) + "---|---|---|---|",
    ]
    for t in TYPES:
        share = kept[t] / total_kept if total_kept else 0.0
        paper = PAPER[t] / total_paper
        drops = " | ".join(str(m["dropped"].get(s, Counter())[t]) for s in stages)
        lines.append(
            f"| {t} | {made[t]} | {drops} | {kept[t]} | {share:.0%} | {paper:.0%} | "
            f"{'yes' if share >= paper / 2 else '**no**'} |"
        )
    lines += ["", "### Emitted per type and level", "", "| type | L1 | L2 |", "|---|---|---|"]
    for t in TYPES:
        lines.append(f"| {t} | {m['kept'][(t, 1)]} | {m['kept'][(t, 2)]} |")
    lines += ["", "### What generation refused, per type", "", "| type | rule | count |", "|---|---|---|"]
    lang = m["language"]
    rows = []
    for key, n in lang.items():
        parts = key.split(":")
        if parts[0] == "refused" and len(parts) == 3:
            rows.append((parts[1], parts[2], n))
        elif parts[0] in ("no_alternative", "replace_failed", "not_negative") and len(parts) == 2:
            rows.append((parts[1], parts[0].replace("_", " "), n))
        elif parts[0] == "options_refused" and len(parts) == 3:
            rows.append((f"replace_{parts[1]}", f"option refused: {parts[2]}", n))
    for t, rule, n in sorted(rows, key=lambda r: (TYPES.index(r[0]) if r[0] in TYPES else 9, -r[2], r[1])):
        lines.append(f"| {t} | {rule} | {n} |")
    if m["refine_reasons"]:
        lines += ["", "### Why refinement dropped, per type", "", "| type | reason | count |", "|---|---|---|"]
        for t in TYPES:
            for why, n in m["refine_reasons"].get(t, Counter()).most_common():
                lines.append(f"| {t} | {why} | {n} |")
    warnings = m["decide_meta"].get("mix", {}).get("warnings", [])
    if warnings:
        lines += ["", "### Warnings", "", *(f"- {w}" for w in warnings)]
    return "\n".join(lines) + "\n"


# -- several corpora, one row each -------------------------------------------------------------------


def sample_graphs(graphs: Path, n: int, seed: int, out: Path) -> Path:
    """A keyed draw of `n` graphs of a `*_sceneGraphs.json`, written to `out` (the same draw every time)."""
    data = json.loads(graphs.read_bytes())
    ids = sorted(data)
    random.Random(f"shape:{seed}:{n}").shuffle(ids)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({k: data[k] for k in sorted(ids[:n])}))
    return out


def swap_funnel(run: Run) -> dict[str, int]:
    """How far candidates that allow a swap of attributes got: candidate positives, kept by balancing, swaps
    of attributes made, emitted."""
    table = AttributeTable.load(run.cfg.resolve(run.cfg.attribute_table))
    candidates = {r["id"] for r in run.read_all(PATHS_POSITIVES) if swappable(r["path"], table)}
    kept = {r["id"] for r in run.read_all(SELECT_KEPT)} & candidates
    made = {r["id"] for r in run.read_all(LANGUAGE_NEGATIVES) if r["negative_type"] == "swap_attribute"}
    emitted = sum(1 for d in run.read_all(DECIDED_NEGATIVES) if d["id"] in made and d["keep"])
    return {"paths": len(candidates), "kept": len(kept), "made": len(made), "emitted": emitted}


def row(name: str, run: Run, m: dict[str, Any], seconds: float) -> str:
    kept = _by_type(m["kept"])
    n_pos, total = m["positives"], sum(kept.values())
    total_paper = sum(PAPER.values())
    shares = []
    for t in TYPES:
        share, paper = (kept[t] / total if total else 0.0), PAPER[t] / total_paper
        shares.append(f"{share:.0%}" if share >= paper / 2 else f"**{share:.0%}**")
    neg_levels = Counter(lv for (_, lv), n in m["kept"].items() for _ in range(n))
    pos_levels = m["positive_levels"]
    graphs = run.summary("hygiene")["items_in"]
    f = swap_funnel(run)
    return (
        f"| {name} | {graphs} | {n_pos} | {_per_positive(total, n_pos)} | {' | '.join(shares)} | "
        f"{neg_levels[1]}/{neg_levels[2]} | {pos_levels[1]}/{pos_levels[2]}/{pos_levels[3]} | "
        f"{f['paths']}/{f['kept']}/{f['made']}/{f['emitted']} | {seconds:.0f} |"
    )


LEAST = 0.8  # negatives per positive below which a corpus's row is bold: a fifth of its positives go untested


def _per_positive(total: int, n_pos: int) -> str:
    value = f"{total / max(n_pos, 1):.2f}"
    return value if total >= LEAST * n_pos else f"**{value}**"


def header() -> str:
    total_paper = sum(PAPER.values())
    paper = "/".join(f"{PAPER[t] / total_paper:.0%}" for t in TYPES)
    return "\n".join([
        f"Emitted text negatives per positive (the paper's test split {PAPER_PER_POSITIVE:.2f}) and each type's share "
        f"({', '.join(TYPES)}; the paper {paper}; **bold**: under half the paper's share, or {LEAST} a positive).",
        "",
        "| corpus | graphs | positives | per positive | " + " | ".join(TYPES) + " | negatives L1/L2 | "
        "positives L1/L2/L3 | swap_attribute: paths/kept/made/emitted | s |",
        "|---|---|---|---|" + "---|" * len(TYPES) + "---|---|---|---|",
    ])  # fmt: skip


def merged(overrides: dict[str, Any], sets: list[str]) -> dict[str, Any]:
    """`overrides` with each `KEY=VALUE` of `--set` on top (a dotted key, its value read as YAML)."""
    for spec in sets:
        key, eq, value = spec.partition("=")
        if not key or not eq:
            raise SystemExit(f"--set {spec!r}: KEY=VALUE")
        *parents, leaf = key.split(".")
        node = overrides
        for k in parents:
            node = node.setdefault(k, {})
        node[leaf] = yaml.safe_load(value)
    return overrides


def parse_corpus(spec: str) -> tuple[str, Path | None, Path | None]:
    """NAME=GRAPHS[,IMAGES]; an empty GRAPHS is the demo world."""
    name, eq, paths = spec.partition("=")
    if not name or not eq:
        raise SystemExit(f"--corpus {spec!r}: NAME=GRAPHS[,IMAGES] (NAME= for the demo world)")
    graphs, _, images = paths.partition(",")
    return name, Path(graphs).resolve() if graphs else None, Path(images).resolve() if images else None


def run_corpora(args: argparse.Namespace, tmp: Path) -> int:
    corpora = [parse_corpus(c) for c in args.corpus]
    by_name = {c[0]: c for c in corpora}
    for spec in args.sample:
        name, _, n = spec.rpartition(":")
        if name not in by_name or not n.isdigit():
            raise SystemExit(f"--sample {spec!r}: NAME:N of a --corpus")
        _, graphs, images = by_name[name]
        if graphs is None:
            raise SystemExit(f"--sample {spec!r}: the demo world is not sampled")
        corpora.append((f"{name}:{n}", sample_graphs(graphs, int(n), args.seed, tmp / f"{name}-{n}.json"), images))
    sys.stdout.write(header() + "\n")
    for name, graphs, images in corpora:
        inputs: dict[str, Any] = {"scene_graphs": str(graphs) if graphs is not None else None}
        if images is not None:
            inputs["images"] = str(images)
        root = (args.workdir or tmp) / name.replace(":", "-")
        t0 = time.perf_counter()
        run = run_text(root, args.config, merged({"seed": args.seed, "inputs": inputs}, args.set))
        seconds = time.perf_counter() - t0
        sys.stdout.write(row(name, run, measure(run), seconds) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene-graphs", type=Path, help="a GQA *_sceneGraphs.json or a folder of them (default: demo)")
    ap.add_argument(
        "--corpus",
        action="append",
        default=[],
        metavar="NAME=GRAPHS[,IMAGES]",
        help="a corpus for the one-row-each table (repeatable; `demo=` is the demo world)",
    )
    ap.add_argument("--sample", action="append", default=[], metavar="NAME:N",
                    help="also a keyed draw of N graphs of the corpus NAME (repeatable)")  # fmt: skip
    ap.add_argument("--config", help="config name or file (default: the embedded demo config)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, help="keep the run here instead of a temp folder")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a config value on top of the config (dotted key, YAML value; repeatable), "
                    "e.g. negative_mix.per_image=1.5")  # fmt: skip
    args = ap.parse_args(argv)
    if args.corpus:
        with tempfile.TemporaryDirectory() as tmp:
            return run_corpora(args, Path(tmp))
    overrides: dict[str, Any] = merged({"seed": args.seed}, args.set)
    what = "the demo world"
    if args.scene_graphs is not None:
        overrides["inputs"] = {"scene_graphs": str(args.scene_graphs.resolve())}
        what = f"`{args.scene_graphs.name}` ({args.scene_graphs.resolve().parent.name})"
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp) / "run"
        t0 = time.perf_counter()
        run = run_text(root, args.config, overrides)
        seconds = time.perf_counter() - t0
        sys.stdout.write(report(measure(run), what, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
