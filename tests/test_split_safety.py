"""`hardneg split` and the write stage never destroy good output: split refuses a run whose
stored work is incomplete or stale; outputs are written beside the old ones and swapped in only when
complete; a crash in the middle of the swap is finished on the next start."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.errors import HardnegError
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.runner import publish
from hardneg.core.runner.folder import stored_config
from hardneg.core.runner.publish import BACKUP, OUTPUTS, STAGING
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES, resplit, run_local
from tests.runs import shared_run

TINY = {
    "demo": {"n_scenes": 6},
    "shard_size": 2,
    "images": {"candidates": 1},
    "language": {"negatives_per_positive": 1},
}
PUBLISHED = tuple(dict.fromkeys(n for s in STAGES for n in s.publishes))  # every output of a run
RESPLIT = {"refine": {"enabled": False}}  # keeps more text negatives: every split's negative.json changes


def outputs(root: Path, elsewhere: bool = False) -> dict[str, bytes]:
    """Every file a run publishes, by relative path; `elsewhere`: the write stage's, comparable with another
    run folder (the manifest's counts and thresholds only, not its folder name, input paths or timings)."""
    out = {}
    for name in OUTPUTS if elsewhere else PUBLISHED:
        p = root / name
        files = sorted(p.rglob("*")) if p.is_dir() else [p]
        out.update({str(f.relative_to(root)): f.read_bytes() for f in files if f.is_file()})
    if elsewhere:
        m = orjson.loads(out["manifest.json"])
        out["manifest.json"] = orjson.dumps({k: m[k] for k in ("counts", "thresholds")})
    return out


@pytest.fixture(scope="module")
def tiny_run() -> Path:
    return shared_run(TINY)


@pytest.fixture(scope="module")
def resplit_outputs(tiny_run: Path, tmp_path_factory) -> dict[str, bytes]:
    """What a clean `hardneg split` with RESPLIT writes."""
    root = tmp_path_factory.mktemp("clean") / "run"
    shutil.copytree(tiny_run, root)
    resplit(root, RESPLIT)
    got = outputs(root, elsewhere=True)
    assert got["splits/train/negative.json"] != outputs(tiny_run)["splits/train/negative.json"]
    return got


def _copy(tiny_run: Path, tmp_path: Path) -> Path:
    root = tmp_path / "run"
    shutil.copytree(tiny_run, root)
    return root


def test_a_split_that_fails_half_way_leaves_the_old_outputs_whole(tiny_run, resplit_outputs, tmp_path, monkeypatch):
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)

    def full_disk(files: list[Path], out: Path) -> None:  # the rejects come after every split file
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    monkeypatch.setattr("hardneg.exports.finecops._concat", full_disk)
    with pytest.raises(OSError):
        resplit(root, RESPLIT)
    assert outputs(root) == before
    monkeypatch.undo()
    resplit(root, RESPLIT)  # rerun: starts clean and finishes
    assert outputs(root, elsewhere=True) == resplit_outputs
    assert not (root / STAGING).exists() and not (root / BACKUP).exists()


def _interrupt_the_swap(root: Path, monkeypatch) -> None:
    """Stop a split in the middle of the write stage's swap: the new splits in, the old rejects.jsonl
    aside, the new one not yet in."""
    real_replace = publish.os.replace

    def crash_midway(src, dst):
        if Path(src) == root / STAGING / "rejects.jsonl":
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(publish.os, "replace", crash_midway)


def test_an_interrupted_split_puts_the_old_outputs_back(tiny_run, resplit_outputs, tmp_path, monkeypatch):
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    _interrupt_the_swap(root, monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        resplit(root, RESPLIT)
    monkeypatch.undo()
    assert outputs(root) == before
    assert not any((root / n).exists() for n in (STAGING, BACKUP, publish.TXN))
    resplit(root, RESPLIT)  # the split the interrupt cut short, run again, ends where a clean one does
    assert outputs(root, elsewhere=True) == resplit_outputs


def test_a_crash_in_the_middle_of_the_swap_is_undone_on_the_next_start(
    tiny_run, resplit_outputs, tmp_path, monkeypatch
):
    """A crash runs no handler (kill -9, power loss): the next start finds the transaction open."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    _interrupt_the_swap(root, monkeypatch)
    monkeypatch.setattr(publish, "rollback", lambda root: [])  # the dying process rolls nothing back
    with pytest.raises(KeyboardInterrupt):
        resplit(root, RESPLIT)
    monkeypatch.undo()
    assert not (root / "rejects.jsonl").exists()  # the half-done state this test is about
    prepare_run(stored_config(root), root)  # what every run does first
    assert outputs(root) == before
    assert not any((root / n).exists() for n in (STAGING, BACKUP, publish.TXN))
    assert not (root / "work" / "write").exists()  # the stage the crash cut short is redone
    resplit(root, RESPLIT)
    assert outputs(root, elsewhere=True) == resplit_outputs


def test_an_unfinished_staging_is_discarded_and_the_old_outputs_kept(tiny_run, tmp_path):
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    (root / STAGING / "splits" / "train").mkdir(parents=True)
    (root / STAGING / "splits" / "train" / "positive.json").write_text("[\n")
    prepare_run(stored_config(root), root)
    assert outputs(root) == before and not (root / STAGING).exists()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda r: shutil.rmtree(r / "work" / "images"), "stage images has not finished"),
        (lambda r: next((r / "work" / "language").glob("positives-*.jsonl")).unlink(), "stage language"),
        (lambda r: (r / "work" / "filters" / "_done" / "00000.json").unlink(), "stage filters"),
    ],
    ids=["images stage deleted", "language shard deleted", "filters unit marker deleted"],
)
def test_split_refuses_a_run_whose_work_is_incomplete(tiny_run, tmp_path, damage, problem):
    """Regression (fixed by the Stage redesign): split used to re-decide from whatever was left."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    damage(root)
    with pytest.raises(HardnegError, match=f"cannot be re-split: {problem}"):
        resplit(root, RESPLIT)
    assert outputs(root) == before


def test_split_refuses_a_run_left_half_redone_under_another_config(tiny_run, tmp_path, monkeypatch):
    """An interrupted `hardneg run` with a new seed leaves stages made under two configs: refused."""
    root = _copy(tiny_run, tmp_path)
    before = outputs(root)
    calls = []
    real = __import__("hardneg.core.runner.stage", fromlist=["Run"]).Run.run_unit

    def interrupted(self, name, unit):
        if name == "language":
            calls.append(unit)
            if len(calls) == 2:
                raise KeyboardInterrupt
        return real(self, name, unit)

    monkeypatch.setattr("hardneg.core.runner.stage.Run.run_unit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_local(load_config(None, {**TINY, "seed": 5}), root)
    monkeypatch.undo()
    with pytest.raises(HardnegError, match="cannot be re-split"):
        resplit(root, RESPLIT)
    assert outputs(root) == before


def test_rejects_jsonl_holds_only_the_stages_before_the_write(tiny_run, tmp_path):
    """Found by the resume property test: the stages after the write (the benchmark exports) had their
    rejects of the previous run copied into a rewritten rejects.jsonl, so a resumed run differed from a
    fresh one."""
    root = _copy(tiny_run, tmp_path)
    order = [s.name for s in STAGES]
    later = order[order.index("write") + 1 :]
    run = Run(root, stored_config(root), STAGES)
    planted = root / "work" / later[0] / "_rejects" / f"{run.units(later[0])[0]}.jsonl"
    assert planted in set(run.reject_files()) or not planted.exists()
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes((planted.read_bytes() if planted.exists() else b"") + b'{"stage":"stale","reason":"old"}\n')
    assert planted in set(run.reject_files())
    resplit(root, RESPLIT)  # rewrites rejects.jsonl
    assert b'"stale"' not in (root / "rejects.jsonl").read_bytes()
