"""A run's outputs are published all or nothing, and `hardneg split` trusts stored work by its bytes.

Every output a run writes (splits, rejects, stats, manifest, data/, the card, the exports, the report)
stands as the last finished run left it until the new run has finished every stage: a run that fails
after the first output was written (a full disk while data/ or the report is built) puts the old set
back, and a fresh folder whose run fails shows no outputs at all, never a finished-looking run.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from hardneg.core.config import load_config
from hardneg.core.errors import HardnegError
from hardneg.core.runner.publish import TXN
from hardneg.flows.pipeline import resplit, run_local
from tests.runs import shared_run
from tests.test_split_safety import TINY, outputs  # outputs(root): every published file

CHANGED = {**TINY, "refine": {"enabled": False}}  # keeps more text negatives: every output changes


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture(scope="module")
def tiny_run() -> Path:
    return shared_run(TINY)


@pytest.fixture(scope="module")
def changed_run() -> dict[str, bytes]:
    """What a clean run of CHANGED publishes (for comparing a resumed run with)."""
    return outputs(shared_run(CHANGED))


def _copy(tiny_run: Path, tmp_path: Path) -> Path:
    root = tmp_path / "run"
    shutil.copytree(tiny_run, root)
    return root


@pytest.mark.parametrize(
    "where",
    [
        "hardneg.exports.dataset.DatasetFiles.close",
        "hardneg.exports.summary.card",
        "hardneg.review.report.page.build_report",
    ],
    ids=["data/", "card", "report"],
)
def test_a_full_disk_after_the_splits_leaves_the_old_outputs_whole(tiny_run, changed_run, tmp_path, monkeypatch, where):
    """Regression: the splits, rejects, stats and manifest were swapped in before data/, the card and the
    report were built, so a full disk left new splits beside the old data/ and report."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    monkeypatch.setattr(where, no_space)
    with pytest.raises(OSError):
        run_local(load_config(None, CHANGED), root)
    monkeypatch.undo()
    assert outputs(root) == before
    assert not (root / TXN).exists()
    run_local(load_config(None, CHANGED), root)  # room made: the rerun finishes as a fresh run would
    assert _comparable(outputs(root)) == _comparable(changed_run)


def test_a_first_run_that_fails_at_the_end_publishes_nothing(tmp_path, monkeypatch):
    root = tmp_path / "run"
    monkeypatch.setattr("hardneg.review.report.page.build_report", no_space)
    with pytest.raises(OSError):
        run_local(load_config(None, TINY), root)
    assert outputs(root) == {}  # no splits without their report: nothing that looks finished


def _half_published(tiny_run: Path, tmp_path: Path, monkeypatch) -> tuple[Path, dict[str, bytes]]:
    """A copy of the run killed (kill -9: no handler runs) after its new splits were swapped in and before
    its card was written; and what it published before."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    monkeypatch.setattr("hardneg.core.runner.publish.rollback", lambda root: [])  # the dying process does nothing
    monkeypatch.setattr("hardneg.exports.summary.card", no_space)
    with pytest.raises(OSError):
        run_local(load_config(None, CHANGED), root)
    monkeypatch.undo()
    assert (root / TXN).exists() and outputs(root) != before  # the half-published state
    return root, before


def test_a_crash_after_the_splits_is_undone_on_the_next_start(tiny_run, changed_run, tmp_path, monkeypatch):
    """kill -9 runs no handler: the transaction is still open when the next run starts."""
    root, before = _half_published(tiny_run, tmp_path, monkeypatch)
    monkeypatch.setattr("hardneg.review.report.page.build_report", no_space)  # the next run starts, then fails too
    with pytest.raises(OSError):
        run_local(load_config(None, CHANGED), root)
    monkeypatch.undo()
    assert outputs(root) == before
    run_local(load_config(None, CHANGED), root)
    assert _comparable(outputs(root)) == _comparable(changed_run)


def test_split_refuses_a_score_shard_changed_in_place(tiny_run, tmp_path):
    """Regression: split compared file sizes only, so one digit changed in a score was accepted."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    shard = next(f for f in sorted((root / "work" / "filters").glob("scores-*.jsonl")) if b'":0.' in f.read_bytes())
    data = shard.read_bytes()
    i = data.index(b'":0.') + 4  # the first digit of a score
    shard.write_bytes(data[:i] + (b"1" if data[i : i + 1] != b"1" else b"2") + data[i + 1 :])  # same size
    with pytest.raises(HardnegError, match=r"scores-.* changed since it was written"):
        resplit(root, {"refine": {"enabled": False}})
    assert outputs(root) == before


def _comparable(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files two run folders share byte for byte: the manifest, stats, card and report name the folder
    and the time each stage took."""
    timed = ("manifest.json", "stats.json", "stats.md", "README.md", "report.html")
    return {k: v for k, v in files.items() if k not in timed and not k.startswith("report/")}


def test_hardneg_report_puts_a_half_published_folder_back_before_it_renders(tiny_run, tmp_path, monkeypatch):
    """Failed before: after a kill -9 in the middle of publishing, `hardneg report` rendered the half-new
    outputs (new splits beside the old card) as if they were a run."""
    from hardneg.cli import main

    root, before = _half_published(tiny_run, tmp_path, monkeypatch)
    assert main(["report", str(root)]) == 0
    assert not (root / TXN).exists()
    assert _comparable(outputs(root)) == _comparable(before)  # the report of the last finished run
