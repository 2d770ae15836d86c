"""The Stage contract and its runner on toy stages: fingerprints from declared keys and upstream output,
skip-if-done, crash safety, declared reads, and what `problems` reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg.core.config import RunConfig
from hardneg.core.records import Reject
from hardneg.core.stage import Run, Stage, Unit

CALLS: list[tuple[str, str]] = []
OFFSET = {"source": 0}  # stands in for a changed input file or code: what the source stage reads


class Source(Stage):
    name = "source"
    version = "source@v1"
    config = ("shard_size",)
    sharded = False

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        n = unit.cfg.shard_size
        for i in range(3):
            unit.write("items", [{"v": i * n + k + OFFSET["source"]} for k in range(n)], shard=f"{i:05d}")
        unit.meta["shards"] = [f"{i:05d}" for i in range(3)]


class Double(Stage):
    name = "double"
    version = "double@v1"
    reads = ("source",)
    config = ("seed",)

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        rows = list(unit.read("source", "items"))
        unit.items_in = len(rows)
        if unit.cfg.seed == 13 and unit.shard == "00001":
            raise RuntimeError("crash in the middle of a unit")
        unit.write("doubled", [{"v": r["v"] * 2} for r in rows])
        unit.reject(Reject("double", "just because", detail={"shard": unit.shard}))
        unit.stats["rows"] += len(rows)


class Total(Stage):
    name = "total"
    version = "total@v1"
    reads = ("double",)
    sharded = False

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        unit.write("sum", [{"sum": sum(r["v"] for r in unit.read_all("double", "doubled"))}])


class Sneaky(Stage):
    name = "sneaky"
    version = "sneaky@v1"
    reads = ("double",)
    sharded = False

    def run(self, unit: Unit) -> None:
        list(unit.read_all("source", "items"))  # not declared


STAGES = (Source(), Double(), Total())


def run_all(root: Path, cfg: RunConfig, stages=STAGES) -> Run:
    run = Run(root, cfg, stages)
    for name in run.order:
        run.run_stage(name)
    return run


def total(run: Run) -> int:
    return next(run.read_all("total", "sum"))["sum"]


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()


def test_a_rerun_does_nothing_and_a_changed_key_redoes_exactly_its_dependants(tmp_path):
    cfg = RunConfig(shard_size=2)
    run = run_all(tmp_path, cfg)
    assert total(run) == 2 * sum(range(6))
    assert run.summary("double")["stats"] == {"rows": 6} and run.summary("double")["rejects"] == 3
    CALLS.clear()
    run_all(tmp_path, cfg)
    assert CALLS == []
    run_all(tmp_path, RunConfig(shard_size=2, seed=5))  # only `double` declares seed: it and `total` rerun
    assert [c[0] for c in CALLS] == ["double"] * 3 + ["total"]
    CALLS.clear()
    run_all(tmp_path, RunConfig(shard_size=2, seed=5, workers=7))  # undeclared everywhere: nothing reruns
    assert CALLS == []


def test_a_redone_upstream_with_the_same_output_keeps_downstream_and_a_changed_one_redoes_it(tmp_path):
    cfg = RunConfig(shard_size=2)
    run_all(tmp_path, cfg)
    (tmp_path / "work" / "source" / "_done" / "all.json").unlink()  # a lost unit: source reruns, same output
    CALLS.clear()
    run_all(tmp_path, cfg)
    assert CALLS == [("source", "all")]
    (tmp_path / "work" / "source" / "_done" / "all.json").unlink()
    OFFSET["source"] = 1  # this time the rerun writes something else: everything downstream is redone
    try:
        CALLS.clear()
        run = run_all(tmp_path, cfg)
    finally:
        OFFSET["source"] = 0
    assert [c[0] for c in CALLS] == ["source", "double", "double", "double", "total"]
    assert total(run) == 2 * sum(range(1, 7))


def test_a_crash_mid_stage_leaves_no_marker_and_the_rerun_finishes_only_what_is_missing(tmp_path):
    with pytest.raises(RuntimeError, match="crash"):
        run_all(tmp_path, RunConfig(shard_size=2, seed=13))
    done = sorted(p.name for p in (tmp_path / "work" / "double" / "_done").iterdir())
    assert done == ["00000.json"]
    assert not (tmp_path / "work" / "double" / "_stage.json").exists()
    run = Run(tmp_path, RunConfig(shard_size=2, seed=13), STAGES)
    assert run.open("double") == ["00001", "00002"]
    assert run.problems("double") == ["stage double has not finished"]


def test_a_missing_output_file_is_a_problem_and_is_redone(tmp_path):
    cfg = RunConfig(shard_size=2)
    run_all(tmp_path, cfg)
    (tmp_path / "work" / "double" / "doubled-00001.jsonl").unlink()
    run = Run(tmp_path, cfg, STAGES)
    assert not run.is_complete("double")
    CALLS.clear()
    run_all(tmp_path, cfg)
    assert CALLS == [("double", "00001")]  # its output is the same again: total is not redone


def test_undeclared_reads_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="reads 'source' without declaring it"):
        run_all(tmp_path, RunConfig(shard_size=2), (Source(), Double(), Sneaky()))


def test_stage_order_and_names_are_checked():
    with pytest.raises(ValueError, match="reads 'double', which is not an earlier stage"):
        Run(Path("/nowhere"), RunConfig(), (Source(), Total(), Double()))
    with pytest.raises(ValueError, match="two stages share a name"):
        Run(Path("/nowhere"), RunConfig(), (Source(), Source()))


def test_temp_files_of_an_interrupted_write_are_cleaned_on_open(tmp_path):
    cfg = RunConfig(shard_size=2)
    run_all(tmp_path, cfg)
    stray = tmp_path / "work" / "double" / ".doubled-00001.jsonl.tmp4242"
    stray.write_text("half a fi")
    Run(tmp_path, cfg, STAGES).open("double")
    assert not stray.exists()


class Shared(Stage):
    """Each unit reads a total of the whole upstream output, built once per process."""

    name = "shared"
    version = "shared@v1"
    reads = ("source",)

    def __init__(self) -> None:
        self.built: list[int] = []

    def run(self, unit: Unit) -> None:
        def build() -> int:
            value = sum(r["v"] for r in unit.read_all("source", "items"))
            self.built.append(value)
            return value

        unit.write("seen", [{"shard": unit.shard, "all": unit.shared("source", "sum", build)}])


def test_what_every_unit_builds_alike_from_upstream_is_built_once_and_anew_when_upstream_changes(tmp_path):
    stage = Shared()
    cfg = RunConfig(shard_size=2)
    run = run_all(tmp_path, cfg, (Source(), stage))
    assert stage.built == [sum(range(6))]  # three units, one build
    assert {r["all"] for r in run.read_all("shared", "seen")} == {sum(range(6))}
    (tmp_path / "work" / "source" / "_done" / "all.json").unlink()
    OFFSET["source"] = 1
    try:
        run = run_all(tmp_path, cfg, (Source(), stage))  # source redone with another output: built anew
    finally:
        OFFSET["source"] = 0
    assert stage.built == [sum(range(6)), sum(range(1, 7))]
    assert {r["all"] for r in run.read_all("shared", "seen")} == {sum(range(1, 7))}
    with pytest.raises(RuntimeError, match="without declaring"):
        Unit(run, stage, "00000").shared("shared", "x", lambda: 0)
