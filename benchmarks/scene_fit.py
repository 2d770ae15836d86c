"""How far a replacement name may fit a picture worse than the name it replaces, measured on real pictures.

    python -m benchmarks.scene_fit --run RUN                 # a finished run folder (any config)
    python -m benchmarks.scene_fit --run RUN --examples 30   # and a keyed draw of the refused replacements

A replaced object's new name should belong in the picture (`generators/text/scene.py`). The yardstick is
what real pictures hold: for every two names of one category that an image of the run really holds (a dog
and a cat, a fork and a knife), how much worse one fits the image's other names than the other does
(`AnnotationStats.scene_fit`, the run's counts plus the prior's, as the language stage reads them), where
it also fits under `UNUSUAL` of its usual rate (the rule's second condition). A threshold that real pairs
almost never cross refuses only what a picture of that kind does not hold.

Prints, per threshold: the share of real same-category pairs beyond it, and the share of the run's emitted
object replacements beyond it (with `replacement_fit` off for the run, what the rule would refuse; on, it
is 0 above the run's own threshold). With `--examples N`, a keyed draw of N emitted replacements beyond
the configured threshold, to read.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from itertools import permutations
from pathlib import Path

from benchmarks.image_truth import rows
from hardneg.core.config import LanguageConfig
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.rows import GraphRow
from hardneg.core.words.table import Words
from hardneg.generators.text.scene import UNUSUAL

THRESHOLDS = (0.8, 1.0, 1.2, 1.5, 2.0)


def scenes(root: Path) -> dict[str, frozenset[str]]:
    """image id -> the names of its objects, as the cleaned graphs hold them."""
    graphs = (GraphRow(**r).scene_graph() for r in rows(root, "hygiene", "graphs"))
    return {g.image_id: frozenset(o.name for o in g.objects.values()) for g in graphs}


def real_pairs(notes: AnnotationStats, words: Words, pictures: dict[str, frozenset[str]]) -> list[tuple[float, float]]:
    """For every ordered pair (a, b) of names of one category an image holds: how much less b fits it than a
    does, and b's fit."""
    out = []
    for scene in pictures.values():
        ordered = sorted(scene)
        fits = {n: notes.scene_fit(n, ordered) for n in ordered}
        for a, b in permutations(ordered, 2):
            fa, fb, cat = fits[a], fits[b], words.name_category(a)
            if cat is not None and cat == words.name_category(b) and fa is not None and fb is not None:
                out.append((fa - fb, fb))
    return out


def emitted(root: Path, notes: AnnotationStats, pictures: dict[str, frozenset[str]]) -> list[tuple[float, float, dict]]:
    """The emitted object replacements: how much less the new name fits than the one replaced, its fit, the row."""
    keep = {d["id"] for d in rows(root, "decide", "negatives") if d["keep"]}
    out = []
    for r in rows(root, "language", "negatives"):
        if r["id"] not in keep or r["negative_type"] != "replace_object":
            continue
        scene = sorted(pictures[r["image_id"]])
        was, got = notes.scene_fit(r["change"]["from"], scene), notes.scene_fit(r["change"]["to"], scene)
        if was is not None and got is not None:
            out.append((was - got, got, r))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a finished run folder")
    ap.add_argument("--examples", type=int, default=0, help="show a keyed draw of this many beyond the default")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    root = args.run
    notes = AnnotationStats.from_rows(rows(root, "plausibility", "annotations")).with_prior(
        rows(root, "plausibility", "prior")
    )
    pictures = scenes(root)
    real = real_pairs(notes, Words.load(), pictures)
    made = emitted(root, notes, pictures)
    print(f"run `{root}`: {len(pictures)} images, {len(real)} ordered real same-category pairs, {len(made)} emitted")
    print(f"object replacements with both names known; beyond: that many times less fitting, and under e^{UNUSUAL}")
    print("of its usual rate\n")
    print("| drop (log) | fits x times less | real pairs beyond | emitted replacements beyond |")
    print("|---|---|---|---|")
    for t in THRESHOLDS:
        r = sum(d > t and f < UNUSUAL for d, f in real) / max(1, len(real))
        e = sum(d > t and f < UNUSUAL for d, f, _ in made) / max(1, len(made))
        print(f"| {t} | {math.exp(t):.1f} | {r:.2%} | {e:.1%} |")
    if args.examples:
        limit = LanguageConfig().replacement_fit or 1.0
        beyond = [(d, r) for d, f, r in made if d > limit and f < UNUSUAL]
        n = min(args.examples, len(beyond))
        print(f"\n{len(beyond)} emitted beyond {limit}; a keyed draw of {n}:\n")
        for d, r in sorted(random.Random(args.seed).sample(beyond, n), key=lambda x: -x[0]):
            print(f"- {d:.2f} {r['change']['from']} -> {r['change']['to']}: {r['expression']} [{r['image_id']}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
