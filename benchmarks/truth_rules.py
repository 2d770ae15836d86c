"""What each data-truth rule removes, on the demo world or a GQA-like corpus.

    python -m benchmarks.truth_rules                         # the demo world (40 scenes)
    python -m benchmarks.truth_rules --synthetic 2000        # a synthetic GQA-like corpus of 2,000 images
    python -m benchmarks.truth_rules --scene-graphs val_sceneGraphs.json   # real GQA scene graphs

Runs ingest -> hygiene -> plausibility -> paths -> select -> language (lexicon, offline) in a temp folder and
prints, as markdown:

- hygiene: duplicate annotations merged, stored spatial edges the boxes contradict;
- positives each path rule removes per type and level: the paths stage once with every rule and once with
  each rule switched off (`paths.rules`), the difference of their candidate positives;
- positives the English check dropped, per type and level;
- negatives each rule refused: swaps refused when tried, and corpus words kept out of the replacement
  options, by the rule behind the refusal (`generators.text.sites.refusal_kind`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

import orjson

from hardneg.core.config import PATH_RULES, load_config
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.rows import LANGUAGE_POSITIVES, PATHS_POSITIVES
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES

UPTO = ("ingest", "hygiene", "plausibility", "paths", "select", "language")


def run_until(root: Path, overrides: dict, last: str) -> Run:
    cfg = load_config(None, overrides)
    prepare_run(cfg, root)
    stages = [s for s in STAGES if s.name in UPTO[: UPTO.index(last) + 1]]
    run = Run(root, cfg, stages)
    for name in run.order:
        run.run_stage(name)
    return run


def by_type_level(run: Run, stage: str, kind: str) -> Counter:
    return Counter((r["tuple_type"], r["level"]) for r in run.read_all(stage, kind))


def rejects(run: Run, stage: str) -> list[dict]:
    d = run.stage_dir(stage) / "_rejects"
    return [orjson.loads(x) for f in sorted(d.glob("*.jsonl")) for x in f.read_bytes().splitlines() if x.strip()]


def table(title: str, rows: dict[str, Counter], cols: list[tuple[str, int]]) -> str:
    head = "| rule | " + " | ".join(f"{t} L{lv}" for t, lv in cols) + " | total |"
    lines = [f"### {title}", "", head, "|" + "---|" * (len(cols) + 2)]
    for name, c in rows.items():
        lines.append(f"| {name} | " + " | ".join(str(c.get(k, 0)) for k in cols) + f" | {sum(c.values())} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synthetic", type=int, default=0, help="images of a synthetic GQA-like corpus (0: the demo)")
    ap.add_argument("--scene-graphs", type=Path, help="real GQA scene graphs (a *_sceneGraphs.json) instead")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base: dict = {"images": {"enabled": False}, "seed": args.seed}
        if args.scene_graphs is not None:
            base |= {"inputs": {"scene_graphs": str(args.scene_graphs.resolve())}}
            what = f"scene graphs of {args.scene_graphs.name} ({args.scene_graphs.resolve().parent.name})"
        elif args.synthetic:
            from benchmarks.synthetic_gqa import write_synthetic_gqa

            corpus = Path(tmp) / "synthetic_sceneGraphs.json"
            write_synthetic_gqa(corpus, n_images=args.synthetic, seed=args.seed)
            base |= {"inputs": {"scene_graphs": str(corpus)}, "shard_size": 500}
            what = f"synthetic GQA-like corpus, {args.synthetic} images"
        else:
            what = "demo world, 40 scenes"
        full = run_until(Path(tmp) / "all", base, "language")
        on = by_type_level(full, "paths", "positives")
        removed: dict[str, Counter] = {}
        for rule in PATH_RULES:
            others = [r for r in PATH_RULES if r != rule]
            off = run_until(Path(tmp) / f"without-{rule}", {**base, "paths": {"rules": others}}, "paths")
            removed[rule] = by_type_level(off, "paths", "positives") - on
        english = Counter((r["detail"]["tuple_type"], r["detail"]["level"]) for r in rejects(full, "language")
                          if r["stage"] == "english" and "tuple_type" in r.get("detail", {}))  # fmt: skip
        removed["english check (after balancing)"] = english
        cols = sorted({k for c in [on, *removed.values()] for k in c})
        print(f"## Data-truth rules on the {what}\n")
        h = full.summary("hygiene")["stats"]
        merged, dropped = h.get("merged_duplicate", 0), h.get("dropped_contradicted_edge", 0)
        print(f"Hygiene: {merged} duplicate annotations merged, {dropped} contradicted spatial edges dropped.\n")
        print(table("Candidate positives (all rules on)", {"kept": on}, cols))
        print(table("Positives each rule removed, per type and level", removed, cols))
        kept_ids = {r["id"] for r in full.read_all(LANGUAGE_POSITIVES)}
        after = Counter((r["tuple_type"], r["level"]) for r in full.read_all(PATHS_POSITIVES) if r["id"] in kept_ids)
        print(table("Positives after balancing and the English check, per type and level", {"kept": after}, cols))
        stats = full.summary("language")["stats"]
        refused = Counter({k: v for k, v in stats.items() if k.startswith(("refused:", "options_refused:"))})
        print("### Negatives refused, by rule\n\n| where | rule | count |\n|---|---|---|")
        for k, v in sorted(refused.items()):
            where, _, rule = k.partition(":")[2].rpartition(":")
            print(f"| {'site refused' if k.startswith('refused') else 'replacement option'} {where} | {rule} | {v} |")
        made = Counter({k: v for k, v in stats.items() if k.startswith("made:")})
        print(f"\nText negatives made: {sum(made.values())}; positives kept after balancing: "
              f"{sum(1 for _ in full.read_all('language', 'positives'))}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
