"""TRICD and the probes are evaluation benchmarks: made for the val and test splits unless their
`exports.<name>.splits` adds train."""

from __future__ import annotations

from pathlib import Path

import orjson

from hardneg.core.io import read_jsonl
from hardneg.core.runner.folder import stored_config
from hardneg.core.splits import split_of
from hardneg.exports.probes.stage import ProbesExport
from hardneg.exports.tricd.stage import TricdExport
from tests.export_run import export_run, records
from tests.runs import SIXTEEN, shared_run

EVAL = ("val", "test")


def _summary(root: Path, name: str) -> dict:
    return orjson.loads((root / name / "summary.json").read_bytes())


def _positive_splits(root: Path) -> dict[int, str]:
    cfg = stored_config(root)
    return {
        r["id"]: split_of(r["image_id"], cfg.splits)
        for f in sorted((root / "work" / "language").glob("positives-*.jsonl"))
        for r in read_jsonl(f)
    }


def _of_positives(rows: list[dict]) -> list[int]:
    return [r["positive_id"] for r in rows if r["positive_id"] is not None]


def _pair_splits(root: Path, pairs: list[dict]) -> set[str]:
    """The splits of the images of TRICD's positive pairs (their positives' images)."""
    cfg = stored_config(root)
    return {split_of(p["image_id"], cfg.splits) for p in pairs if p["positive_id"] is None}


def test_tricd_and_the_probes_are_made_for_val_and_test_by_default():
    assert TricdExport().splits == ProbesExport().splits == ["val", "test"]
    root = shared_run(SIXTEEN)  # the demo config's exports as they are
    splits = _positive_splits(root)
    assert "train" in splits.values()  # the run has train positives to leave out
    for f in ("tricd/train.json", "tricd/TRICD_grounding_train.json", "probes/probe_r/train.json",
              "probes/probe_c/train.json", "probes/probe_r/train", "probes/probe_c/train"):  # fmt: skip
        assert not (root / f).exists(), f
    pairs = records(root, "tricd", EVAL)
    assert pairs and _pair_splits(root, pairs) <= set(EVAL)
    probes = records(root, "probes/probe_r", EVAL) + records(root, "probes/probe_c", EVAL)
    assert probes and {splits[i] for i in _of_positives(probes)} <= set(EVAL)
    phrased = [r["id"] for f in sorted((root / "work" / "phrases").glob("phrases-*.jsonl")) for r in read_jsonl(f)]
    assert phrased and {splits[i] for i in phrased} <= set(EVAL)  # no phrases for positives TRICD leaves out
    assert any(n.startswith("train: not emitted") for n in _summary(root, "tricd")["notes"])
    assert any(n.startswith("train: no Probe-R or Probe-C") for n in _summary(root, "probes")["notes"])


def test_adding_train_makes_them_for_train_and_leaves_val_and_test_as_they_were():
    root, default = export_run(), shared_run(SIXTEEN)  # the export tests' run adds train to both
    assert stored_config(root).exports.tricd.splits == ["train", "val", "test"]
    train = records(root, "tricd", ("train",))
    assert train and _pair_splits(root, train) == {"train"}
    assert records(root, "probes/probe_r", ("train",)) and (root / "probes/probe_c/train").is_dir()
    for s in EVAL:  # the train split's pairs change nothing of the others
        assert records(root, "tricd", (s,)) == records(default, "tricd", (s,))
    assert not any(n.startswith("train: not emitted") for n in _summary(root, "tricd")["notes"])
