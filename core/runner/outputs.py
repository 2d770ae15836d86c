"""Reading what the stages wrote: a run's outputs by stage and kind, and its rejects (`Run`'s reading half).

A stage reads only what a stage declares it writes (`record_type`: a misspelt kind is an error naming the
kinds the stage does write, never an empty read), in unit order, from the files each unit's marker lists.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson

from hardneg.core.io import read_jsonl
from hardneg.core.schema import Output, to_record

R = TypeVar("R")


class StageOutputs:
    """Reading the outputs of a run's stages; `Run` provides the stages, their folders, units and markers."""

    stages: Mapping[str, Any]
    order: list[str]
    root: Path
    cfg: Any

    @property
    def images(self) -> Path | None:
        """The run's photos, or None for a run without (`resolve_inputs`): the ingest stage's copies of the
        inputs, so what they hold is in its output digest, which every later stage's fingerprint holds; where
        the config's `inputs` pointed does not change what a stage makes of them."""
        from hardneg.core.gqa.run_inputs import resolve_inputs

        return resolve_inputs(self.root, self.cfg)[1]

    def stage_dir(self, name: str) -> Path:
        raise NotImplementedError

    def units(self, name: str) -> list[str]:
        raise NotImplementedError

    def _marker(self, name: str, unit: str) -> Path:
        raise NotImplementedError

    def record_type(self, stage: str, kind: str, reader: str | None = None) -> type:
        """The record type `stage` declares for `kind`; a kind it does not write raises, naming `reader`
        (the stage that asked, if any) and the kinds it does write."""
        writes = self.stages[stage].writes
        if kind not in writes:
            who = f"stage {reader} reads" if reader else "reading"
            kinds = ", ".join(sorted(writes)) or "nothing"
            raise RuntimeError(f"{who} {kind!r} of stage {stage}, which does not write it (it writes {kinds})")
        return writes[kind]

    def read(self, stage: str, kind: str, unit: str) -> Iterator[Any]:
        """The rows (dicts) `stage`'s `unit` wrote of `kind` (none if it wrote no such file)."""
        self.record_type(stage, kind)
        if (path := self.stage_dir(stage) / f"{kind}-{unit}.jsonl").exists():
            yield from read_jsonl(path)

    def read_all(self, stage: str | Output[Any], kind: str = "") -> Iterator[Any]:
        """Every `kind` file the stage's units wrote (or an `Output`'s), in unit order, then write order (a
        global stage may write one file per shard, as ingest does)."""
        stage, kind = _named(stage, kind)
        for path in self.files(stage, kind):
            yield from read_jsonl(path)

    def records_all(self, stage: str | Output[R], kind: str = "") -> Iterator[R]:
        """`read_all`, each row as the record type `stage` declares for `kind` (an `Output`'s, checked)."""
        name, kind = _named(stage, kind)
        record = self.record_type(name, kind)
        if isinstance(stage, Output) and stage.record is not record:
            raise RuntimeError(
                f"{name}'s {kind!r} is read as {stage.record.__name__}, but written as {record.__name__}"
            )
        for row in self.read_all(name, kind):
            yield to_record(row, record)

    def files(self, stage: str, kind: str) -> list[Path]:
        """The `kind` files `read_all` reads, in its order."""
        self.record_type(stage, kind)
        d = self.stage_dir(stage)
        out = []
        for unit in self.units(stage):
            m = self._marker(stage, unit)
            if not m.exists():
                raise RuntimeError(f"stage {stage}: unit {unit} is not done")
            for rel in orjson.loads(m.read_bytes())["files"]:
                if rel.startswith(f"{kind}-") and rel.endswith(".jsonl"):
                    out.append(d / rel)
        return out

    def common_reasons(self, name: str, top: int = 3) -> list[tuple[str, int]]:
        """A stage's commonest reject reasons (digits left out, so "image 12.jpg missing" counts with its
        kind) with their counts, for a message that must stand without the run folder."""
        count: Counter[str] = Counter()
        for f in sorted((self.stage_dir(name) / "_rejects").glob("*.jsonl")):
            for r in read_jsonl(f):
                count[re.sub(r"\d+", "N", str(r.get("reason", "")))] += 1
        return count.most_common(top)

    def reject_reasons(self, f: Path) -> list | None:
        """The counts by reason key of a unit's reject file (`reject_files`), as its marker kept them; None
        when it kept none (a unit done by an older version): the file itself says."""
        marker = self._marker(f.parent.parent.name, f.stem)
        return orjson.loads(marker.read_bytes()).get("reasons") if marker.exists() else None

    def reject_files(self) -> Iterator[Path]:
        """Every stage's rejects, in stage order then unit order."""
        for name in self.order:
            d = self.stage_dir(name) / "_rejects"
            if d.exists():
                for unit in self.units(name):
                    f = d / f"{unit}.jsonl"
                    if f.exists():
                        yield f


def _named(output: str | Output[Any], kind: str) -> tuple[str, str]:
    """(stage, kind) of an `Output`, or as given."""
    return (output.stage, output.kind) if isinstance(output, Output) else (output, kind)
