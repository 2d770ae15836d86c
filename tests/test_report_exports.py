"""The report's export sections draw their cards from a light scan of the export's files and read only the
drawn records whole: the same cards as from every record loaded, whatever the file's JSON layout."""

from __future__ import annotations

import random
import re
from pathlib import Path
from types import SimpleNamespace

import orjson

from hardneg.core.splits import SPLITS
from hardneg.exports.common import ExportFolder
from hardneg.review.report.exports import _each, _scan, _whole, probes_html, tricd_html
from hardneg.review.report.gallery import sample


def _tricd_rows(n: int) -> list[dict]:
    rng = random.Random(7)
    rows, next_id = [], 1000
    for k in range(n):
        pid = next_id + rng.randrange(1, 5)  # ids increase but not by one: the draw must not lean on positions
        next_id = pid + 10
        split = ("train", "val", "test")[k % 3]
        rows.append({"id": pid, "split": split, "subset": ("0_hop", "1_hop")[k % 2], "positive_id": None,
                     "image_id": f"img{k}", "caption": f"positive caption {pid}", "image": None})  # fmt: skip
        for j in range(k % 3):  # 0 to 2 negatives a positive
            rows.append({"id": pid + 1 + j, "split": split, "subset": "negative", "positive_id": pid,
                         "image_id": f"neg{k}-{j}", "negative": f"negative {pid}/{j}", "image": None})  # fmt: skip
    return rows


def _by_split(rows: list[dict]) -> dict[str, list[dict]]:
    """The table rows of each split, as an export writes them."""
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for r in rows:
        out[r["split"]].append(r)
    return out


def _drawn_from_everything(rows: list[dict], k: int, seed: int) -> dict[str, list[int]]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if r["positive_id"] is None:
            groups.setdefault(r["subset"], []).append(r)
    return {s: [r["id"] for r in sample(g, k, seed, f"tricd:{s}")] for s, g in groups.items()}


def test_tricd_cards_are_those_drawn_from_every_record(tmp_path: Path):
    rows = _tricd_rows(60)
    ExportFolder(tmp_path, "tricd").write_tables(_by_split(rows))
    r = SimpleNamespace(run=SimpleNamespace(root=tmp_path), per_group=12, seed=3)
    html = tricd_html(r)
    want = _drawn_from_everything(rows, 3, 3)
    assert sum(map(len, want.values())) == 6  # 3 of each subset's 30
    for ids in want.values():
        for pid in ids:
            assert f"positive caption {pid}" in html
            for n in (x for x in rows if x["positive_id"] == pid):
                assert n["negative"] in html  # each drawn positive's negatives, read whole
    shown = {int(x) for x in re.findall(r"positive caption (\d+)", html)}
    assert shown == {i for ids in want.values() for i in ids}


def test_scan_then_whole_reads_the_records_of_any_layout(tmp_path: Path):
    rows = _tricd_rows(20)
    layouts = {
        "ours": None,  # the exports' layout: `[`, a record a line
        "indented": orjson.dumps(rows, option=orjson.OPT_INDENT_2),
        "one line": orjson.dumps(rows),
    }
    for name, text in layouts.items():
        folder = tmp_path / name.replace(" ", "_")
        ExportFolder(folder, "t").write_tables({"train": rows, "val": [], "test": []})
        if text is not None:
            (folder / "t" / "train.json").write_bytes(text)
        light = _scan(folder, "t", "subset")
        assert [x["id"] for x in light] == [x["id"] for x in rows], name
        assert set(light[0]) == {"id", "subset", "_at"}
        picked = light[::3]
        got = _whole(folder, picked)
        assert [got[x["_at"]] for x in picked] == rows[::3], name
    assert list(_each(tmp_path / "absent.json")) == []
    (tmp_path / "empty.json").write_bytes(b"[]\n")
    assert list(_each(tmp_path / "empty.json")) == []


def test_probe_cards_are_drawn_per_kind_from_both_tables(tmp_path: Path):
    r_rows = [{"id": i, "split": "train", "kind": "probe_r/subject", "correct": f"yes {i}", "swapped": f"no {i}",
               "image_id": f"i{i}", "image": None} for i in range(1, 40)]  # fmt: skip
    c_rows = [{"id": i, "split": "val", "kind": "probe_c/object", "prompts": [f"p{i}", f"q{i}"], "swap": "x",
               "image_ids": ["a", "b"], "images": [None, None]} for i in range(100, 130)]  # fmt: skip
    ExportFolder(tmp_path, "probes").write_tables(_by_split(r_rows), "probe_r/")
    ExportFolder(tmp_path, "probes").write_tables(_by_split(c_rows), "probe_c/")
    html = probes_html(SimpleNamespace(run=SimpleNamespace(root=tmp_path), per_group=8, seed=1))
    for kind, rows, text in (("probe_r/subject", r_rows, "yes {}<"), ("probe_c/object", c_rows, "1: p{}<")):
        ids = [x["id"] for x in sample(rows, 2, 1, kind)]
        assert all(text.format(i) in html for i in ids), kind
        assert sum(text.format(x["id"]) in html for x in rows) == 2, kind
