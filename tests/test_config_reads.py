"""A stage's fingerprint covers every config value it reads, so a rerun after a config change redoes exactly
what a fresh run would make differently.

A stage declares the config it reads (`Stage.config`, and `Stage.data` for the files whose contents count);
the runner fingerprints only those. A value read and not declared is a stale output waiting to happen:
before, the language and images stages worded paths with the renderer's templates and rules without
declaring them (a changed template left the negatives' wording as it was), the images stage read the
language backend and the targets' size limits, the write stage put the whole config in the manifest while
declaring only the splits (stats.md names `risk.max`), and the report drew its samples with the seed.

The runner enforces it where it can (`core/runner/config_view.py`: `unit.cfg` and the hooks' `run.cfg` are views
of the declared keys); a stage can still reach the whole config through `unit.run.cfg` (the write stage's
manifest does, to record it). The demo run here records, per stage, every field of every config section it
reads (the models' attribute access, watched while each stage runs alone in this process) and checks each
against what it declares.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

from hardneg.core.config import RunConfig, load_config
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES

# read by any stage without a declaration: where the inputs are (the ingest stage declares them and digests
# what it read; later stages read the run's own copies) and how a data path resolves (`RunConfig.resolve`)
ANYONE = ("inputs", "resolve()")
# read to record, not to make: the manifest holds the config that made the outputs (its name, seed, demo world
# and fingerprint); a change that alters no output leaves that record as it was (`hardneg split` then says
# "nothing changed" and leaves the run alone)
RECORDS = {"write": ("name", "seed", "demo", "fingerprint()")}


class Reads:
    """Records `<section>.<field>` for every config field (and `<path>.<method>()` for every method) read
    while `stage` is set."""

    def __init__(self, cfg: RunConfig) -> None:
        self.stage: str | None = None
        self.seen: dict[str, set[str]] = defaultdict(set)
        self.paths: dict[int, str] = {}
        self._walk(cfg, "")

    def _walk(self, model: BaseModel, prefix: str) -> None:
        self.paths[id(model)] = prefix
        for name, value in fields(model).items():  # the exports' sections are extra fields
            if isinstance(value, BaseModel):
                self._walk(value, f"{prefix}{name}.")

    def __enter__(self) -> Reads:
        self._original = original = BaseModel.__getattribute__
        reads = self

        def watched(model: BaseModel, name: str) -> object:
            value = original(model, name)
            if reads.stage is not None and not name.startswith(("_", "model_")):
                prefix = reads.paths.get(id(model))
                if prefix is not None and (name in type(model).model_fields or name in (extra(model) or {})):
                    reads.seen[reads.stage].add(prefix + name)
                elif prefix is not None and callable(value):
                    reads.seen[reads.stage].add(f"{prefix}{name}()")
            return value

        def extra(model: BaseModel) -> dict | None:
            return original(model, "__pydantic_extra__")

        BaseModel.__getattribute__ = watched  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        BaseModel.__getattribute__ = self._original  # type: ignore[method-assign]


def fields(model: BaseModel) -> dict[str, object]:
    """A model's fields and their values, its extra fields too."""
    return {**{n: model.__dict__.get(n) for n in type(model).model_fields}, **(model.__pydantic_extra__ or {})}


def covered(read: str, declared: tuple[str, ...]) -> bool:
    """A read is covered by a declared key it lies under or on the way to (reading `exports` to reach a
    declared `exports.tricd.splits`); `fingerprint()` reads everything, so only the whole config covers it."""
    if read == "fingerprint()":
        return read in declared or set(RunConfig.model_fields) <= set(declared)
    if read in ANYONE or read.startswith(tuple(a + "." for a in ANYONE)):
        return True
    key = read.removesuffix("()")
    return any(key == k or key.startswith(k + ".") or k.startswith(key + ".") for k in declared)


def test_every_config_value_a_stage_reads_is_in_its_fingerprint(tmp_path: Path):
    # 6 scenes: every config read the 40-scene demo makes (measured: the same reads, stage by stage)
    over = {"demo": {"n_scenes": 6}, "task_runner": "thread", "workers": 1, "concurrent_stages": False}
    cfg = load_config(None, over)
    root = tmp_path / "run"
    prepare_run(cfg, root)
    run = Run(root, cfg, list(STAGES))
    with Reads(cfg) as reads:
        for name in run.order:
            reads.stage = name
            run.run_stage(name)
            reads.stage = None
    assert {"language", "images", "write", "report"} <= set(reads.seen)  # the watch saw the stages run
    undeclared = {
        s.name: sorted(r for r in reads.seen[s.name] if not covered(r, (*s.config, *s.data, *RECORDS.get(s.name, ()))))
        for s in STAGES
    }
    assert {name: got for name, got in undeclared.items() if got} == {}


def test_the_watch_sees_a_read_the_declarations_miss():
    """The check itself: a field read under a stage that does not declare it is reported."""
    cfg = load_config(None)
    with Reads(cfg) as reads:
        reads.stage = "x"
        _ = cfg.paths.templates, cfg.resolve
        reads.stage = None
        _ = cfg.seed  # no stage running: not counted
    assert reads.seen["x"] == {"paths", "paths.templates", "resolve()"}
    assert not covered("paths.templates", ("paths.rules",)) and covered("paths.templates", ("paths",))
    assert covered("exports", ("exports.tricd.splits",)) and not covered("fingerprint()", ("splits",))
