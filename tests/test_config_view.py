"""Each stage reads the config through a view of the keys it declares (`core/runner/config_view.py`): a key
its fingerprint does not hold raises where it is read, in `run` and in the hooks (`finish`, `prepare`, ...),
instead of leaving a resumed run with output made under another value."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hardneg.core.config import load_config
from hardneg.core.runner.config_view import ConfigView, UndeclaredConfig
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.flows.pipeline import STAGES


def test_a_view_gives_what_is_declared_and_refuses_the_rest():
    cfg = load_config(None)
    view: Any = ConfigView(cfg, ("seed", "targets.min_area_frac", "exports.tricd"), "toy")
    assert view.seed == cfg.seed
    assert view.targets.min_area_frac == cfg.targets.min_area_frac  # a section on the way to a declared key
    assert view.exports.tricd == cfg.exports.tricd  # export sections are the config's extra fields
    assert view.resolve(Path("x.yaml")) == cfg.resolve(Path("x.yaml"))  # reads no key
    with pytest.raises(UndeclaredConfig, match=r"stage toy reads config 'targets.min_side'"):
        _ = view.targets.min_side
    with pytest.raises(UndeclaredConfig, match=r"'exports.probes'"):
        _ = view.exports.probes
    with pytest.raises(UndeclaredConfig, match=r"'language'"):
        _ = view.language
    with pytest.raises(UndeclaredConfig, match=r"model_dump\(\)"):  # a dump reads every key
        view.model_dump()
    with pytest.raises(AttributeError, match="read-only"):
        view.seed = 3


@dataclass(slots=True, kw_only=True)
class Value:
    v: int


class Source(Stage):
    name = "source"
    version = "source@v1"
    writes = outputs({"items": Value})
    config = ("seed",)
    sharded = False
    reads_in_run = "seed"
    reads_in_finish = "seed"

    def run(self, unit: Unit) -> None:
        unit.write("items", [{"v": getattr(unit.cfg, self.reads_in_run)}])
        unit.meta["shards"] = ["00000"]

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        return {"read": getattr(run.cfg, self.reads_in_finish)}


def _run(tmp_path: Path, stage: Source) -> dict[str, Any]:
    root = tmp_path / "run"
    (root / "work").mkdir(parents=True)
    return Run(root, load_config(None), [stage]).run_stage("source")


def test_a_stage_reading_an_undeclared_key_fails_where_it_reads_it(tmp_path: Path):
    assert _run(tmp_path, Source())["read"] == load_config(None).seed
    in_run, in_finish = Source(), Source()
    in_run.reads_in_run = "shard_size"
    in_finish.reads_in_finish = "shard_size"
    with pytest.raises(UndeclaredConfig, match="stage source reads config 'shard_size'"):
        _run(tmp_path / "a", in_run)
    with pytest.raises(UndeclaredConfig, match="stage source reads config 'shard_size'"):
        _run(tmp_path / "b", in_finish)


def test_the_probes_fingerprint_holds_the_probe_b_settings_its_finish_writes_with(tmp_path: Path):
    """The probes stage writes Probe-B's official tree in its `finish` with `exports.probe_b`'s splits,
    fillers and minimum object area: a change of them must redo it."""
    fps = []
    for area in (0.01, 0.02):
        cfg = load_config(None, {"exports": {"probe_b": {"min_object_area": area}}})
        fps.append(Run(tmp_path, cfg, list(STAGES)).config_fingerprint("probes"))
    assert fps[0] != fps[1]
