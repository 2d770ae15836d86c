"""Rebuild the prior of real scene graphs (`templates/prior.v2.json`, `core/gqa/prior.py`) from GQA files.

    python -m benchmarks.build_prior --source "GQA val, full graphs=/data/gqa/val_sceneGraphs.json" \
        --source "GQA val, 200 names=/data/gqa200/sceneGraphs.json" --out templates/prior.v2.json

Each `--source LABEL=PATH` is a `*_sceneGraphs.json` (or a folder of them), read in the order given: an
image already counted from an earlier source is skipped, so put the fullest graphs first. Every graph is
validated and cleaned as a run does it (`core/gqa/loader.py`, `core/gqa/hygiene.py` with the default
config, less the side-by-side edges hygiene puts back where a graph lacks them) and counted as the
plausibility stage counts it. A source none of whose graphs carries an attribute had its attributes
stripped: its graphs count towards names, relations and how names are annotated, never towards which
attributes a name carries. Prints what it counted and the file's size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hardneg.core.config import HygieneConfig, RunConfig
from hardneg.core.gqa.hygiene import clean_by
from hardneg.core.gqa.loader import load_graphs
from hardneg.core.gqa.prior import Prior
from hardneg.core.words.table import Words


def count_source(prior: Prior, path: Path, words: Words, hygiene: HygieneConfig) -> dict[str, int]:
    graphs = [c.graph for c in load_graphs(path) if c.graph is not None]
    described = any(o.attributes for g in graphs for o in g.objects.values())
    before = len(prior.images)
    # not the side-by-side edges a reduced source lost: two names seen in one image already attest a
    # positional relation (generators/text/context.py), and those edges would double the prior's size
    h = hygiene.model_copy(update={"spatial_from_boxes": False})
    for g in graphs:
        cleaned, _ = clean_by(g, words, h)
        prior.add(cleaned, words, described)
    return {"graphs": len(graphs), "counted": len(prior.images) - before, "described": described}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", action="append", required=True, metavar="LABEL=PATH", help="graphs to count (in order)")
    ap.add_argument("--out", type=Path, required=True, help="the prior file to write")
    ap.add_argument("--version", default="prior-gqa@v3", help="the content's version, recorded in every run's manifest")
    args = ap.parse_args(argv)
    words = Words.load()
    h = RunConfig().hygiene
    prior = Prior(args.version)
    for spec in args.source:
        label, eq, path = spec.partition("=")
        if not eq or not label or not path:
            raise SystemExit(f"--source {spec!r}: LABEL=PATH")
        got = count_source(prior, Path(path), words, h)
        what = "with attributes" if got["described"] else "without attributes"
        prior.sources.append(f"{label}: {got['counted']} of {got['graphs']} graphs, {what}")
        print(f"{label}: {got['counted']} of {got['graphs']} graphs counted ({what})")
    prior.write(args.out)
    c, a = prior.counts, prior.notes
    print(
        f"{args.out}: {len(prior.images)} images ({len(prior.described)} with attributes), {len(c.names)} names, "
        f"{len(c.attribute_name)} (attribute, name) pairs, {len(c.triples)} triples, {len(a.together)} name pairs; "
        f"{args.out.stat().st_size / 1e6:.2f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
