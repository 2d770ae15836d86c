"""One unit of a stage's work (`core/runner/stage.py`): what `Stage.run` reads from and writes to.

A unit reads only what its stage declares: the stages in `reads`, the kinds those stages declare in
`writes` (`Run.record_type`); and writes only the kinds its own stage declares, each write's first row
checked against the kind's record type (`core/schema.py`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hardneg.core.config import RunConfig
from hardneg.core.io import atomic_write_chunks, dumps, stat_key
from hardneg.core.records import Reject
from hardneg.core.runner.shared import shared
from hardneg.core.schema import Output, as_row, row_problem, to_record

if TYPE_CHECKING:
    from hardneg.core.runner.stage import Run, Stage

ALL = "all"  # the one unit of a stage that is not sharded
T = TypeVar("T")
R = TypeVar("R")


class Unit:
    """One unit of a stage's work: a shard, or the whole corpus (`ALL`)."""

    def __init__(self, run: Run, stage: Stage, shard: str) -> None:
        self.run = run
        self.stage = stage
        self.shard = shard
        self.dir = run.stage_dir(stage.name)
        self.rejects: list[Reject] = []
        self.stats: Counter = Counter()
        self.meta: dict[str, Any] = {}
        self.written: Counter = Counter()
        self.files: dict[str, dict[str, Any]] = {}  # name -> size and content hash
        self.items_in = 0

    @property
    def cfg(self) -> RunConfig:
        """The config as this stage declares it (`core/runner/config_view.py`): an undeclared key raises."""
        return self.run.stage_cfg(self.stage.name)

    @property
    def images(self) -> Path | None:
        """The run's photos (`Run.images`), or None for a run without."""
        return self.run.images

    @property
    def root(self) -> Path:
        return self.run.root

    def path(self, kind: str, shard: str | None = None) -> Path:
        return self.dir / f"{kind}-{shard or self.shard}.jsonl"

    def _check_declared(self, stage: str) -> None:
        if stage not in self.run.reads[self.stage.name]:
            raise RuntimeError(f"stage {self.stage.name} reads {stage!r} without declaring it in `reads`")

    def _check_type(self, output: Output[Any]) -> None:
        """`output`, of a declared upstream stage, is what that stage writes: its kind, of its record type."""
        self._check_declared(output.stage)
        declared = self.run.record_type(output.stage, output.kind, reader=self.stage.name)
        if output.record is not declared:
            raise RuntimeError(
                f"stage {self.stage.name} reads {output.stage}'s {output.kind!r} as {output.record.__name__}, "
                f"but {output.stage} writes it as {declared.__name__}"
            )

    def read(self, output: Output[Any], shard: str | None = None) -> Iterator[Any]:
        """Rows (dicts) of a declared upstream stage's `output` for this unit's shards (or `shard`); a stage
        of one unit reads every shard of a sharded upstream, in order."""
        self._check_type(output)
        stage, kind = output.stage, output.kind
        if shard is None and self.shard == ALL and self.run.stages[stage].sharded:
            yield from self.run.read_all(stage, kind)
            return
        for s in [shard] if shard else self.run.unit_shards(self.shard):
            yield from self.run.read(stage, kind, s)

    def read_all(self, output: Output[Any]) -> Iterator[Any]:
        """Rows (dicts) of `output` from every unit of its (declared upstream) stage, in unit order."""
        self._check_type(output)
        yield from self.run.read_all(output.stage, output.kind)

    def records(self, output: Output[R], shard: str | None = None) -> Iterator[R]:
        """`read`, each row as the output's record type."""
        for row in self.read(output, shard):
            yield to_record(row, output.record)

    def records_all(self, output: Output[R]) -> Iterator[R]:
        """`read_all`, each row as the output's record type."""
        for row in self.read_all(output):
            yield to_record(row, output.record)

    def upstream(self, stage: str) -> dict[str, Any]:
        """The summary (`_stage.json`) of a declared upstream stage."""
        self._check_declared(stage)
        return self.run.summary(stage)

    def shared(self, stage: str, what: str, build: Callable[[], T]) -> T:
        """`build()`, something every unit makes alike from a declared upstream stage's whole output (a model
        of the corpus, a set of ids), made once per worker (`core/runner/shared.py`): a worker runs many units. Kept
        under the run folder, the stage and `what`, for the upstream's output digest: a changed upstream
        builds anew."""
        self._check_declared(stage)
        return shared((str(self.root), stage, what), build, version=self.run.summary(stage)["digest"])

    def write(self, kind: str, rows: Iterable[Any], shard: str | None = None) -> Path:
        """Write one output file of a declared kind atomically; rows are records of the kind's type or
        JSON-able dicts (`core/schema.py: as_row`), the first (every one, with `Run.check_every_row`) checked
        against the kind's record type. Returns its path."""
        record = self.stage.writes.get(kind)
        if record is None:
            declared = ", ".join(sorted(self.stage.writes)) or "nothing"
            raise RuntimeError(f"stage {self.stage.name} writes {kind!r} without declaring it in `writes` ({declared})")
        every, count = self.run.check_every_row, 0

        def lines() -> Iterator[bytes]:  # written as they come: a stage's output is never twice in memory
            nonlocal count
            for item in rows:
                if not isinstance(item, (dict, record)):
                    what = f"a {type(item).__name__} as {kind!r}, whose records are {record.__name__}"
                    raise RuntimeError(f"stage {self.stage.name} writes {what}")
                row = as_row(item)
                if (every or not count) and (why := row_problem(row, record)):
                    raise RuntimeError(f"stage {self.stage.name} writes a bad {kind!r} row: {why}")
                count += 1
                yield dumps(row) + b"\n"

        path = self.path(kind, shard)
        size, sha1 = atomic_write_chunks(path, lines())
        self.written[kind] += count
        # the content's digest is what a resume trusts; the stat it had when written, only a cache key
        self.files[path.name] = {"size": size, "sha1": sha1[:16], "stat": stat_key(path.stat())}
        return path

    def reject(self, reject: Reject) -> None:
        self.rejects.append(reject)
