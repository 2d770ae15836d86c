"""How much of the real vocabulary the word-semantics tables classify.

Reads Visual Genome's vocabularies (the bottom-up-attention detectors' `objects_vocab`, `attributes_vocab` and
`relations_vocab` lists, saved as the files below; GQA uses nearly the same words; relations there
are lemmatized, so a relation counts as covered when its GQA form or its lemma is in the tables) and
prints, for the 500 most frequent object names, all 1,600 names, the 400 attributes and the 450
relations, how many are classified and which are not.

    python -m benchmarks.word_coverage [--data DIR] [--templates DIR] [--show 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from hardneg.core.words.table import Words

log = logging.getLogger("word_coverage")

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OBJECTS = "vg_objects_1600.txt"
ATTRIBUTES = "vg_attributes_400.txt"
RELATIONS = "vg_relations_450_lemmatized.txt"


def read_list(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        raise SystemExit(f"vocabulary file not found: {path} (pass --data)") from None


def report(words: Words, data: Path) -> dict[str, dict]:
    names = read_list(data / OBJECTS)
    attributes = read_list(data / ATTRIBUTES)
    relations = read_list(data / RELATIONS)
    top = words.coverage(names[:500], [], [])["names"]
    full = words.coverage(names, attributes, relations)
    return {
        "names top 500": top,
        "names all 1600": full["names"],
        "attributes 400": full["attributes"],
        "relations 450": full["relations"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the VG vocabulary files")
    ap.add_argument("--templates", type=Path, default=None, help="word tables (default: the bundled ones)")
    ap.add_argument("--show", type=int, default=40, help="uncovered words to list per vocabulary")
    ap.add_argument("--json", action="store_true", help="print the full report as JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)

    words = Words.load(args.templates)
    rows = report(words, args.data)
    if args.json:
        sys.stdout.write(json.dumps({"version": words.version, **rows}, indent=1) + "\n")
        return 0
    log.info("%s", words.version)
    log.info("%-16s %8s %8s %8s  by kind", "vocabulary", "covered", "total", "share")
    for label, r in rows.items():
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items(), key=lambda kv: -kv[1]))
        log.info("%-16s %8d %8d %7.1f%%  %s", label, r["covered"], r["total"], 100 * r["covered"] / r["total"], kinds)
    for label, r in rows.items():
        if r["uncovered"]:
            shown = r["uncovered"][: args.show]
            more = len(r["uncovered"]) - len(shown)
            log.info("uncovered %s: %s%s", label, ", ".join(shown), f" (+{more} more)" if more > 0 else "")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
