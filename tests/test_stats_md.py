"""stats.md: a header that says what made the run, the human review's counts, and a rejects summary;
written once a run, whole, with the card and stats.json."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import orjson

from hardneg.core.runner.reasons import reason_counts, reason_key
from hardneg.exports.stats import build_stats, markdown, rejects_summary
from hardneg.exports.summary import BEGIN
from hardneg.flows.pipeline import resplit
from tests.runs import copy_of_small_run

SUMMARY = ("stats.md", "stats.json", "README.md")


def test_a_split_writes_each_summary_file_once_with_the_exports_counts_in_it(tmp_path: Path, monkeypatch):
    """Regression: the write stage published stats.md, stats.json and the card, and the report stage wrote
    each again to add the exports' counts (which only exist after the write stage)."""
    root = copy_of_small_run(tmp_path / "run")
    written: Counter = Counter()
    replace = os.replace

    def counting(src, dst, *a, **k):  # every writer of a whole file ends by renaming it into place
        if Path(dst).parent == root and Path(dst).name in SUMMARY:
            written[Path(dst).name] += 1
        return replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", counting)
    outcome = resplit(root, {"risk": {"max": 0.1}})
    monkeypatch.undo()
    assert not outcome.unchanged and written == dict.fromkeys(SUMMARY, 1)
    assert BEGIN in (root / "stats.md").read_text() and BEGIN in (root / "README.md").read_text()
    assert set(orjson.loads((root / "stats.json").read_bytes())["exports"]) == {"tricd", "probes", "imagecode"}


def test_the_review_counts_reach_stats_md():
    # build_stats took the review summary and dropped it: the table never appeared
    review = {
        "items": 4,
        "dropping": 1,
        "by_annotator": {"ann": {"correct": 3, "wrong": 1}, "bob": {"correct": 2}},
        "agreement": [{"a": "ann", "b": "bob", "kappa": 0.5, "items": 2}],
    }
    stats = build_stats(Counter(), Counter(), Counter(), {}, review)
    md = markdown(stats)
    assert "Human review: 4 items, 1 dropped" in md and "| ann | correct 3, wrong 1 |" in md
    assert stats["review"]["items"] == 4


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
    md = markdown(stats)
    assert md.splitlines()[2].startswith("Inputs: val_sceneGraphs.json, images `images` (98 images kept). Seed 3")
    assert "hardneg 0.1.0, begun 2026-11-25." in md.splitlines()[2]
    assert "| paths | 3 | max_per_image: image has paths (3) |" in md
    assert "/" not in md.splitlines()[2].split("`")[1]  # names, never absolute paths
    assert reason_key("x" * 100).endswith("...") and len(reason_key("x" * 100)) == 70
    assert reason_key("a 5 m² café (x3)") == "a café"  # any digit str.isdigit knows, ASCII or not
