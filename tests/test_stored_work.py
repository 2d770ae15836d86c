"""A resumed run trusts stored work by its content, never by its size: a stage's file changed since it was
written (by hand, a disk error) is made again, and the run ends as a fresh one would. (Before, `keep`
edited to `leep` in a decision file crashed the rerun with a KeyError, and a risk of 0.1 edited to 0.9,
the same size, was published.) A copied run folder, whose files are intact under new inodes, is hashed
once and trusted from then on."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson

from hardneg.core.config import load_config
from hardneg.flows.pipeline import run_local
from tests.runs import SMALL, copy_of_small_run

OUTPUTS = ("splits", "manifest.json")


def _published(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and rel.parts[0] == "splits":
            out[str(rel)] = p.read_bytes()
    return out


def _tamper(path: Path, old: bytes, new: bytes) -> None:
    """Replace the first `old` by `new` (same length) and set the mtime back, as a careful hand would."""
    assert len(old) == len(new)
    st = path.stat()
    data = path.read_bytes()
    assert old in data, (path, old)
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def test_a_stored_file_changed_in_place_is_made_again_not_trusted(tmp_path: Path):
    root = copy_of_small_run(tmp_path / "run")
    want = _published(root)
    decisions = root / "work" / "decide" / "positives-all.jsonl"
    _tamper(decisions, b'"keep":true', b'"leep":true')  # a decision the next stage would choke on
    positives = next((root / "work" / "language").glob("positives-*.jsonl"))
    risky = b'"annotation_risk":0.1'
    if risky in positives.read_bytes():
        _tamper(positives, risky, b'"annotation_risk":0.9')
    shutil.rmtree(root / "work" / "write")  # a stage after them to do: it reads what they stored
    run_local(load_config(None, SMALL), root)
    assert _published(root) == want  # made again from its inputs: what a fresh run publishes
    assert b'"leep"' not in decisions.read_bytes()


def test_a_copied_run_folder_is_hashed_once_then_trusted(tmp_path: Path):
    root = copy_of_small_run(tmp_path / "run")  # a copy: every file under a new inode
    marker = root / "work" / "decide" / "_done" / "all.json"
    before = orjson.loads(marker.read_bytes())
    run_local(load_config(None, SMALL), root)  # nothing to do: every file hashed, found intact
    after = orjson.loads(marker.read_bytes())
    [(name, info)] = [(k, v) for k, v in after["files"].items() if k.startswith("positives")]
    assert info["sha1"] == before["files"][name]["sha1"] and info["stat"] != before["files"][name].get("stat")
    assert info["stat"][3] == (root / "work" / "decide" / name).stat().st_ino  # the new stat, recorded
    run_local(load_config(None, SMALL), root)
    assert orjson.loads(marker.read_bytes()) == after  # trusted by its stat now: not hashed, not rewritten
