"""The TRICD, probes and ImageCoDe exports search a few shards at a time (in any worker, side by side) and put the
units' rows together once every unit is done (`Stage.finish`): the files are those one search over every
positive writes, and a run cut off while they are put together writes them again when resumed."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from hardneg.core.runner.folder import stored_config
from hardneg.core.runner.publish import publishing
from hardneg.core.runner.stage import ALL, Run
from hardneg.exports.probes import stage as probes_stage
from hardneg.exports.probes.stage import first_by_id
from hardneg.flows.pipeline import STAGES
from tests.runs import SIXTEEN, shared_run

pytestmark = pytest.mark.slow

# the 16-scene export run in 4 shards, each search in 2 units of 2 shards
FOUR = {
    **SIXTEEN,
    "shard_size": 4,
    "exports": {
        **SIXTEEN["exports"],
        "tricd": {"batch_images": 8},
        "probes": {"batch_images": 8},
        "imagecode": {**SIXTEEN["exports"]["imagecode"], "batch_images": 8},
    },
}
SHARDED = ("tricd", "probes", "imagecode")


def _tree(root: Path, shape: str) -> dict[str, bytes]:
    return {f.relative_to(root).as_posix(): f.read_bytes() for f in sorted((root / shape).rglob("*")) if f.is_file()}


def _rerun(root: Path, stages: list, names: tuple[str, ...] = SHARDED) -> Run:
    run = Run(root, stored_config(root), stages)
    for name in names:
        shutil.rmtree(run.stage_dir(name))
    with publishing(root):
        for name in names:
            run.run_stage(name)
    return run


@pytest.fixture(scope="module")
def sharded() -> Path:
    return shared_run(FOUR)


def test_shards_write_what_one_search_over_every_positive_writes(sharded: Path, tmp_path: Path):
    run = Run(sharded, stored_config(sharded), STAGES)
    assert [run.units(n) for n in SHARDED] == [["00000-00001", "00002-00003"]] * 3
    assert run.unit_shards("00002-00003") == ["00002", "00003"]
    assert sum(1 for f in (sharded / "work" / "probes").glob("probe_r-*.jsonl") if f.stat().st_size) > 1
    whole = []
    for s in STAGES:  # the same stages, each export one unit over every positive
        if s.name in SHARDED:
            s = copy.copy(s)
            s.sharded = False
        whole.append(s)
    root = tmp_path / "run"
    shutil.copytree(sharded, root)
    one = _rerun(root, whole)
    assert [one.units(n) for n in SHARDED] == [[ALL]] * 3
    for shape in SHARDED:
        mine, theirs = _tree(sharded, shape), _tree(root, shape)
        assert len(mine) > 10 and mine.keys() == theirs.keys(), shape
        assert [f for f in mine if mine[f] != theirs[f]] == [], shape


def test_a_run_cut_off_while_the_shards_are_put_together_writes_them_again(
    sharded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    root = tmp_path / "run"
    shutil.copytree(sharded, root)

    def cut_off(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(probes_stage, "probe_r_records", cut_off)
        with pytest.raises(KeyboardInterrupt):
            _rerun(root, STAGES, ("probes",))
    run = Run(root, stored_config(root), STAGES)
    assert not run.is_complete("probes")
    with publishing(root):
        run.run_stage("probes")
    assert _tree(root, "probes") == _tree(sharded, "probes")


def test_a_probe_two_shards_ask_is_kept_once_as_the_first_positive_asked_it():
    def probe(i: int, positive: int, shard: str) -> SimpleNamespace:  # a probe row's id, positive and shard
        return SimpleNamespace(id=i, positive_id=positive, shard=shard)

    a = [probe(1, 7, "a"), probe(4, 7, "a")]
    b = [probe(1, 3, "b"), probe(2, 3, "b")]
    got = list(first_by_id([a, [], b]))
    assert [(r.id, r.shard) for r in got] == [(1, "b"), (2, "b"), (4, "a")]
