"""stats.md: a header that says what made the run, the human review's counts, and a rejects summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from hardneg.core.runner.reasons import reason_counts, reason_key
from hardneg.exports.stats import build_stats, rejects_summary, write_stats


def test_the_review_counts_reach_stats_md(tmp_path: Path):
    # build_stats took the review summary and dropped it: the table never appeared
    review = {
        "items": 4,
        "dropping": 1,
        "by_annotator": {"ann": {"correct": 3, "wrong": 1}, "bob": {"correct": 2}},
        "agreement": [{"a": "ann", "b": "bob", "kappa": 0.5, "items": 2}],
    }
    write_stats(tmp_path, build_stats(Counter(), Counter(), Counter(), {}, review))
    md = (tmp_path / "stats.md").read_text()
    assert "Human review: 4 items, 1 dropped" in md and "| ann | correct 3, wrong 1 |" in md
    assert orjson.loads((tmp_path / "stats.json").read_bytes())["review"]["items"] == 4


def test_rejects_counted_file_by_file_sum_to_one_pass_over_them_all_ties_included(tmp_path: Path):
    files = [tmp_path / f"{k}.jsonl" for k in range(3)]
    rows = [
        [("select", "balance: cap 5 for 'on'"), ("paths", "max_per_image 6"), ("select", "balance: cap 5 for 'in'")],
        [("paths", "b 1"), ("paths", "a 2"), ("targets", "crowd"), ("paths", "b 3")],
        [("targets", "crowd"), ("paths", "a 7"), ("ingest", "bad id 9")],
    ]
    for f, part in zip(files, rows, strict=True):
        f.write_bytes(b"".join(orjson.dumps({"stage": s, "reason": r}) + b"\n" for s, r in part))
    whole = tmp_path / "rejects.jsonl"
    whole.write_bytes(b"".join(f.read_bytes() for f in files))
    one_pass = rejects_summary(whole, top=2)
    tallied = [(f, reason_counts(part)) for f, part in zip(files, rows, strict=True)]
    tallied[1] = (files[1], None)  # a unit whose marker kept no counts: its file is read
    got = rejects_summary(tallied, top=2)
    assert got == one_pass and list(got) == list(one_pass) == ["paths", "select", "targets", "ingest"]
    assert list(got["paths"]["reasons"]) == list(one_pass["paths"]["reasons"]) == ["b", "a"]  # a tie: b came first


def test_a_header_and_the_rejects_per_stage_with_their_commonest_reasons(tmp_path: Path):
    rejects = tmp_path / "rejects.jsonl"
    rows = [{"stage": "paths", "reason": f"max_per_image: image {k} has 9 paths"} for k in range(3)]
    rows += [{"stage": "filter", "reason": "filter: no candidate passed (4 tried); smear: 38% of the area"}]
    rejects.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    summary = rejects_summary(rejects)
    assert summary == {
        "paths": {"count": 3, "reasons": {"max_per_image: image has paths": 3}},
        "filter": {"count": 1, "reasons": {"no candidate passed: smear": 1}},
    }
    stats = build_stats(Counter(), Counter(), Counter(), {})
    stats["run"] = {"inputs": "val_sceneGraphs.json", "images": "images", "images_kept": 98, "seed": 3,
                    "config": "gqa", "hardneg": "0.1.0", "date": "2026-11-25"}  # fmt: skip
    stats["rejects"] = summary
    write_stats(tmp_path, stats)
    md = (tmp_path / "stats.md").read_text()
    assert md.splitlines()[2].startswith("Inputs: val_sceneGraphs.json, images `images` (98 images kept). Seed 3")
    assert "hardneg 0.1.0, begun 2026-11-25." in md.splitlines()[2]
    assert "| paths | 3 | max_per_image: image has paths (3) |" in md
    assert "/" not in md.splitlines()[2].split("`")[1]  # names, never absolute paths
    assert reason_key("x" * 100).endswith("...") and len(reason_key("x" * 100)) == 70
    assert reason_key("a 5 m² café (x3)") == "a café"  # any digit str.isdigit knows, ASCII or not
