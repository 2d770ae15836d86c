"""The Stage contract and its runner on toy stages: fingerprints from declared keys and upstream output,
skip-if-done, crash safety, declared reads and writes, and what `problems` reports."""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from hardneg.core.config import RunConfig
from hardneg.core.records import Reject
from hardneg.core.runner.cycles import collecting, no_cycle_collection
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import Output, outputs

CALLS: list[tuple[str, str]] = []
OFFSET = {"source": 0}  # stands in for a changed input file or code: what the source stage reads


@dataclass(slots=True, kw_only=True)
class Value:
    v: int


@dataclass(slots=True, kw_only=True)
class Sum:
    sum: int


@dataclass(slots=True, kw_only=True)
class Seen:
    shard: str
    all: int


ITEMS = Output("source", "items", Value)
DOUBLED = Output("double", "doubled", Value)


class Source(Stage):
    name = "source"
    version = "source@v1"
    writes = outputs({"items": Value})
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
    writes = outputs({"doubled": Value})
    config = ("seed",)

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        rows = list(unit.records(ITEMS))
        unit.items_in = len(rows)
        if unit.cfg.seed == 13 and unit.shard == "00001":
            raise RuntimeError("crash in the middle of a unit")
        unit.write("doubled", [{"v": r.v * 2} for r in rows])
        unit.reject(Reject("double", "just because", detail={"shard": unit.shard}))
        unit.stats["rows"] += len(rows)


class Total(Stage):
    name = "total"
    version = "total@v1"
    reads = ("double",)
    writes = outputs({"sum": Sum})
    sharded = False

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        unit.write("sum", [{"sum": sum(r["v"] for r in unit.read_all(DOUBLED))}])


class Triple(Stage):
    """Reads what Double reads, not Double: it runs in Double's wave."""

    name = "triple"
    version = "triple@v1"
    reads = ("source",)
    writes = outputs({"tripled": Value})
    sharded = False

    def run(self, unit: Unit) -> None:
        CALLS.append((self.name, unit.shard))
        unit.write("tripled", [{"v": r["v"] * 3} for r in unit.read_all(ITEMS)])


class Sneaky(Stage):
    name = "sneaky"
    version = "sneaky@v1"
    reads = ("double",)
    sharded = False

    def run(self, unit: Unit) -> None:
        list(unit.read_all(ITEMS))  # not declared


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


def test_stages_run_after_what_they_read_and_names_are_checked():
    """A stage listed before one it reads runs after it; otherwise the order given (a stage that reads every
    earlier stage stays after them). A read of no stage of the run, a ring of reads, two stages of one name
    are errors."""
    assert Run(Path("/nowhere"), RunConfig(), (Source(), Total(), Double())).order == ["source", "double", "total"]
    assert Run(Path("/nowhere"), RunConfig(), (Total(), Double(), Source())).order == ["source", "double", "total"]
    assert Run(Path("/nowhere"), RunConfig(), (Source(), Triple(), Double())).order == ["source", "triple", "double"]
    with pytest.raises(ValueError, match="stage total reads 'double', which is not a stage of the run"):
        Run(Path("/nowhere"), RunConfig(), (Source(), Total()))
    ring = type("Ring", (Double,), {"name": "ring", "reads": ("total",)})
    loop = type("Loop", (Total,), {"reads": ("ring",)})
    with pytest.raises(ValueError, match="stages ring, total read each other"):
        Run(Path("/nowhere"), RunConfig(), (Source(), ring(), loop()))
    with pytest.raises(ValueError, match="two stages share a name"):
        Run(Path("/nowhere"), RunConfig(), (Source(), Source()))
    from hardneg.flows.stages import STAGES as PIPELINE

    assert Run(Path("/nowhere"), RunConfig(), PIPELINE).order == [s.name for s in PIPELINE]  # listed in order
    shuffled = (*PIPELINE[-3:-1], *PIPELINE[:-3], PIPELINE[-1])  # two exports first: each still after its reads
    order = Run(Path("/nowhere"), RunConfig(), shuffled).order
    pipeline = Run(Path("/nowhere"), RunConfig(), PIPELINE)
    assert all(
        order.index(r) < order.index(n) for n in order for r in pipeline.reads[n] if n not in ("write", "report")
    )


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
    writes = outputs({"seen": Seen})

    def __init__(self) -> None:
        self.built: list[int] = []

    def run(self, unit: Unit) -> None:
        def build() -> int:
            value = sum(r["v"] for r in unit.read_all(ITEMS))
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


class Reads(Stage):
    """Reads `kind` of the source stage, as `record` when one is given; writes `rows` as `out`."""

    name = "reads"
    version = "reads@v1"
    reads = ("source",)
    writes = outputs({"doubled": Value})
    sharded = False

    def __init__(self, kind: str = "items", record: type | None = None, out: str = "doubled", rows=None) -> None:
        self.kind, self.record, self.out, self.rows = kind, record, out, rows

    def run(self, unit: Unit) -> None:
        output = Output("source", self.kind, self.record or Value)
        got = unit.records_all(output) if self.record else unit.read_all(output)
        list(got)
        unit.write(self.out, self.rows if self.rows is not None else [{"v": 1}])


def test_a_kind_the_upstream_stage_does_not_write_is_refused_naming_what_it_writes(tmp_path):
    with pytest.raises(RuntimeError, match=r"stage reads reads 'iterms' of stage source, .*\(it writes items\)"):
        run_all(tmp_path, RunConfig(shard_size=2), (Source(), Reads(kind="iterms")))
    with pytest.raises(RuntimeError, match="reads source's 'items' as Sum, but source writes it as Value"):
        run_all(tmp_path, RunConfig(shard_size=2), (Source(), Reads(record=Sum)))
    run = run_all(tmp_path, RunConfig(shard_size=2), (Source(), Reads(record=Value)))
    with pytest.raises(RuntimeError, match="'item' of stage source, which does not write it"):
        list(run.read_all("source", "item"))
    with pytest.raises(RuntimeError, match="source's 'items' is read as Sum, but written as Value"):
        list(run.records_all(Output("source", "items", Sum)))
    assert [r.v for r in run.records_all(ITEMS)] == list(range(6))


def test_a_write_of_an_undeclared_kind_or_a_row_missing_a_field_is_refused(tmp_path):
    cfg = RunConfig(shard_size=2)
    with pytest.raises(RuntimeError, match=r"writes 'sums' without declaring it in `writes` \(doubled\)"):
        run_all(tmp_path / "a", cfg, (Source(), Reads(out="sums")))
    with pytest.raises(RuntimeError, match="a row lacks v"):
        run_all(tmp_path / "b", cfg, (Source(), Reads(rows=[{"value": 1}])))
    with pytest.raises(RuntimeError, match="a row has w, which Value does not declare"):
        run_all(tmp_path / "c", cfg, (Source(), Reads(rows=[{"v": 1, "w": 2}])))
    # only each write's first row is checked in a pipeline run; every row when asked
    run_all(tmp_path / "d", cfg, (Source(), Reads(rows=[{"v": 1}, {"w": 2}])))
    run = Run(tmp_path / "e", cfg, (Source(), Reads(rows=[{"v": 1}, {"w": 2}])))
    run.check_every_row = True
    run.run_stage("source")
    with pytest.raises(RuntimeError, match="a row lacks v"):
        run.run_stage("reads")


def test_a_write_takes_records_of_its_kind_and_refuses_another_kind(tmp_path):
    cfg = RunConfig(shard_size=2)
    run = run_all(tmp_path / "a", cfg, (Source(), Reads(rows=[Value(v=1), {"v": 2}])))
    assert list(run.read_all("reads", "doubled")) == [{"v": 1}, {"v": 2}]
    with pytest.raises(RuntimeError, match="writes a Sum as 'doubled', whose records are Value"):
        run_all(tmp_path / "b", cfg, (Source(), Reads(rows=[Sum(sum=1)])))


def test_a_record_type_must_be_a_dataclass():
    with pytest.raises(TypeError, match="is not a dataclass"):
        outputs({"items": dict})


def test_every_output_has_one_handle_of_the_type_its_stage_writes():
    """The handles readers name (`core/rows.py`, `exports/rows.py`) are exactly the outputs the
    pipeline's stages declare, each of the record type its stage writes; a stage's handles are its own."""
    from hardneg.core import rows
    from hardneg.exports import rows as export_rows
    from hardneg.flows.stages import STAGES as PIPELINE

    handles = [v for m in (rows, export_rows) for v in vars(m).values() if isinstance(v, Output)]
    assert len({(h.stage, h.kind) for h in handles}) == len(handles)
    assert {(h.stage, h.kind): h.record for h in handles} == {
        (s.name, k): t for s in PIPELINE for k, t in s.writes.items()
    }
    with pytest.raises(ValueError, match="a stage's outputs are its own, not those of double, source"):
        outputs(ITEMS, DOUBLED)


def test_a_resplit_reads_the_decision_stage_by_the_record_types_it_writes():
    """`hardneg split` compares what the first decision stage decides with what was published: it finds
    that stage's decided positives and negatives by their record types, and a decision stage that writes
    no single output of each is an error naming it."""
    from hardneg.core.rows import DECIDED_NEGATIVES, DECIDED_POSITIVES, PositiveDecisionRow
    from hardneg.flows.pipeline import _decisions
    from hardneg.flows.stages import STAGES as PIPELINE

    run = Run(Path("/nonexistent"), RunConfig(), PIPELINE)
    assert _decisions(run, "decide") == (DECIDED_POSITIVES, DECIDED_NEGATIVES)

    class TwoOfPositives(Stage):
        name = "doubled_decide"
        decision = True
        writes = outputs({"kept": PositiveDecisionRow, "also": PositiveDecisionRow})

    odd = Run(Path("/nonexistent"), RunConfig(), (TwoOfPositives(),))
    with pytest.raises(TypeError, match="doubled_decide writes 2 outputs of PositiveDecisionRow, not one"):
        _decisions(odd, "doubled_decide")


def test_waves_group_stages_that_read_none_of_each_other():
    run = Run(Path("/nonexistent"), RunConfig(), (Source(), Double(), Triple(), Total()))
    assert run.waves() == [["source"], ["double", "triple"], ["total"]]
    from hardneg.flows.stages import STAGES as PIPELINE

    pipeline = Run(Path("/nonexistent"), RunConfig(), PIPELINE)
    waves = pipeline.waves()
    assert [n for w in waves for n in w] == pipeline.order
    assert ["report"] in waves and ["write"] in waves
    assert {"tricd", "probes", "imagecode"} <= set(next(w for w in waves if "tricd" in w))  # one wave
    assert waves[0] == ["ingest"]
    for wave in waves:
        assert not any(r in wave for n in wave for r in pipeline.reads[n])


def test_a_wave_goes_to_the_pool_at_once_and_makes_what_one_stage_after_another_makes(tmp_path):
    stages = (Source(), Double(), Triple(), Total())
    asked: list[list[tuple[str, str]]] = []
    a = Run(tmp_path / "a", RunConfig(), stages)
    a.run_stage("source")

    def pool(jobs: list[tuple[str, str]]):  # runs them here, in the order given, after recording the call
        asked.append(list(jobs))
        return (a.run_unit(stage, unit) for stage, unit in jobs)

    summaries = a.run_wave(["double", "triple"], pool)
    assert list(summaries) == ["double", "triple"] and a.is_complete("double") and a.is_complete("triple")
    assert asked == [[("triple", "all"), ("double", "00000"), ("double", "00001"), ("double", "00002")]]
    assert a.run_wave(["double", "triple"], pool) == summaries and len(asked) == 1  # done: skipped
    run_all(tmp_path / "b", RunConfig(), stages)
    for name in ("double", "triple"):
        for f in sorted((tmp_path / "b" / "work" / name).glob("*.jsonl")):
            assert (tmp_path / "a" / "work" / name / f.name).read_bytes() == f.read_bytes()


def test_concurrent_stages_off_runs_one_stage_at_a_time(tmp_path):
    """`concurrent_stages: false`: the pool never gets two stages' units in one call."""
    from hardneg.flows.pipeline import run_stages

    asked: list[set[str]] = []
    for flag in (True, False):
        run = Run(tmp_path / str(flag), RunConfig(concurrent_stages=flag), (Source(), Double(), Triple(), Total()))

        def pool(jobs, run=run):  # type: ignore[no-untyped-def]
            asked.append({stage for stage, _ in jobs})
            return (run.run_unit(stage, unit) for stage, unit in jobs)

        run_stages(run, pool)
    assert asked[:3] == [{"source"}, {"double", "triple"}, {"total"}]
    assert asked[3:] == [{"source"}, {"double"}, {"triple"}, {"total"}]


class Batched(Stage):
    """Two shards a unit; its `finish` adds up what its units wrote."""

    name = "batched"
    version = "batched@v1"
    reads = ("double",)
    writes = outputs({"seen": Seen})

    def shards_per_unit(self, run: Run) -> int:
        return 2

    def run(self, unit: Unit) -> None:
        write_seen(unit)

    def finish(self, run: Run, units: list) -> dict:
        return {"batched_total": sum(r["all"] for r in run.read_all(self.name, "seen"))}


class Whole(Stage):
    """One unit, reading a sharded upstream with `Unit.read`."""

    name = "whole"
    version = "whole@v1"
    reads = ("double",)
    writes = outputs({"seen": Seen})
    sharded = False

    def run(self, unit: Unit) -> None:
        write_seen(unit)


def write_seen(unit: Unit) -> None:
    """The unit's name and the sum of what `Unit.read` gives it of the doubled values."""
    unit.write("seen", [{"shard": unit.shard, "all": sum(r["v"] for r in unit.read(DOUBLED))}])


def test_a_unit_of_a_run_of_shards_reads_them_all_and_finish_sees_every_unit(tmp_path):
    run = run_all(tmp_path, RunConfig(shard_size=2), (*STAGES, Batched(), Whole()))
    assert run.units("batched") == ["00000-00001", "00002"]
    assert run.unit_shards("00000-00001") == ["00000", "00001"] and run.unit_shards("00002") == ["00002"]
    doubled = {s: sum(r["v"] for r in run.read("double", "doubled", s)) for s in run.shards()}
    seen = [(r["shard"], r["all"]) for r in run.read_all("batched", "seen")]
    assert seen == [("00000-00001", doubled["00000"] + doubled["00001"]), ("00002", doubled["00002"])]
    assert run.summary("batched")["batched_total"] == total(run) == sum(doubled.values())
    assert next(run.read_all("whole", "seen"))["all"] == total(run)  # every shard, not the none of `-all`
    assert run.problems("batched") == []


class Collector(Stage):
    """Notes whether the cyclic collector is awake while its unit and its `finish` run."""

    name = "collector"
    version = "collector@v1"
    writes = outputs({"items": Value})
    sharded = False
    awake: ClassVar[dict[str, bool]] = {}

    def run(self, unit: Unit) -> None:
        gc.enable()  # as a library may (spaCy's loader does, whatever it found)
        self.awake["run"] = collecting()
        unit.write("items", [{"v": 1}])

    def finish(self, run: Run, units: list) -> dict:
        self.awake["finish"] = collecting()
        return {}


def test_the_collector_sleeps_while_a_unit_and_finish_run_and_wakes_after(tmp_path):
    assert collecting()
    thresholds = gc.get_threshold()
    run_all(tmp_path, RunConfig(), (Collector(),))
    assert Collector.awake == {"run": False, "finish": False} and collecting()
    assert gc.get_threshold() == thresholds


def test_pauses_in_threads_side_by_side_leave_the_collector_as_it_was():
    """Units in threads (Prefect's and Dask's thread runners): A pauses, B pauses, A ends while B runs."""
    thresholds = gc.get_threshold()
    a_in, a_out, b_in, b_checked = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def a() -> None:
        with no_cycle_collection():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b() -> None:
        a_in.wait(5)
        with no_cycle_collection():
            b_in.set()
            a_out.wait(5)
            seen["b after a ended"] = collecting()
        b_checked.set()

    threads = [threading.Thread(target=f) for f in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert b_checked.is_set() and seen == {"b after a ended": False}
    assert gc.get_threshold() == thresholds and collecting()


class Again(Double):
    """`Double` under another name: a second sharded stage beside it in one wave."""

    name = "again"
    version = "again@v1"


def test_a_wave_gives_the_pool_one_unit_of_each_stage_in_turn_the_stage_of_fewest_units_first(tmp_path):
    """Two exports' batches side by side hold less than two of one: the pool gets the units in turn."""
    stages = (Source(), Double(), Triple(), Again())
    asked: list[list[tuple[str, str]]] = []
    run = Run(tmp_path, RunConfig(), stages)
    run.run_stage("source")

    def pool(jobs: list[tuple[str, str]]):
        asked.append(list(jobs))
        return (run.run_unit(stage, unit) for stage, unit in jobs)

    run.run_wave(["double", "again", "triple"], pool)
    shards = ("00000", "00001", "00002")
    assert asked == [[("triple", "all"), *((name, s) for s in shards for name in ("double", "again"))]]
    assert all(run.is_complete(n) for n in ("double", "again", "triple"))
