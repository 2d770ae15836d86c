"""Resuming is a fresh run: for every config key a stage declares, change it to another valid
value; resuming a finished run with the new config must write byte-identical splits and rejects to a
fresh run with that config. A stage that forgets a key it depends on (the images stage once left out
`splits`) fails here, and so does a new key nobody gave a change: add one to CHANGES."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from hardneg.core.config import RunConfig, apply_overrides, config_value, load_config
from hardneg.core.config_files import leaf_keys
from hardneg.core.demo.world import build_demo_world
from hardneg.core.errors import ConfigError
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.resources import data_path
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES

pytestmark = pytest.mark.slow

BASE = {
    "demo": {"n_scenes": 4},
    "shard_size": 2,
    "images": {"candidates": 1, "per_positive": 1},  # one image negative a positive: half the edits to try
    "language": {"negatives_per_positive": 1},
}
# The stages up to the one that writes the splits and rejects (the exports and the report after it write
# neither, and cost seconds a run).
PIPELINE = STAGES[: [s.name for s in STAGES].index("write") + 1]
DECLARED = sorted({k for s in PIPELINE for k in s.config})
COMPARED = [*(f"splits/{s}/{f}" for s in ("train", "val", "test") for f in ("positive", "negative", "coco")), "rejects"]


def _changes(world: Path) -> dict[str, dict[str, Any]]:
    """Meaningful changes where an automatic one would be meaningless or invalid."""
    return {
        "inputs": {"inputs": {"scene_graphs": str(world / "demo_sceneGraphs.json"), "images": str(world / "images")}},
        "splits": {"splits": {"train": 0.4, "val": 0.2, "test": 0.4}},
        "paths": {"paths": {"types": ["0_hop", "1_hop", "and", "2_hop"]}},
        "targets": {"targets": {"min_side": 30}},
        "balance": {"balance": {"per_type_level": 6}},
        "language": {"language": {"negatives_per_positive": 2}},
        "images": {"images": {"candidates": 2}},
        "attribute_table": {"attribute_table": str(world / "attribute_categories.json")},
        "filters.scorers": {"filters": {"scorers": {"sharpness": {}}}},
        "filters.thresholds": {"filters": {"thresholds": {"seam": {"max": 0.05}}}},
        "refine.enabled": {"refine": {"enabled": False}},
        "refine.bins_2d": {"refine": {"bins_2d": 4}},
        "refine.bins_1d": {"refine": {"bins_1d": 2}},
        "risk": {"risk": {"max": 0.25}},
        # the renderer's files, read by the paths, language and images stages: the same words at another path
        **{key: _moved(world, key) for key in ("paths.english", "paths.relations", "paths.templates",
                                                "targets.poor_referents")},
    }  # fmt: skip


def _moved(world: Path, key: str) -> dict[str, Any]:
    """A change of `key` to a copy of its bundled file in the world folder."""
    source = data_path(config_value(RunConfig(), key))
    copy = world / source.name
    shutil.copyfile(source, copy)
    section, field = key.split(".")
    return {section: {field: str(copy)}}


def _auto_change(cfg: RunConfig, key: str) -> dict[str, Any] | None:
    """The first leaf under `key` that takes another valid value: a bool flipped, a number moved, a list
    shortened or reversed."""
    value = config_value(cfg, key)
    leaves = leaf_keys({key: value}) if isinstance(value, dict) else [key]
    for leaf in sorted(leaves):
        old = config_value(cfg, leaf)
        if isinstance(old, bool):
            options: list[Any] = [not old]
        elif isinstance(old, int):
            options = [old + 1, old - 1]
        elif isinstance(old, float):
            options = [round(old / 2, 6)]
        elif isinstance(old, list) and len(old) > 1:
            options = [old[::-1], old[:-1]]
        else:
            continue
        for new in options:
            tree: dict[str, Any] = {}
            node = tree
            parts = leaf.split(".")
            for p in parts[:-1]:
                node = node.setdefault(p, {})
            node[parts[-1]] = new
            try:
                apply_overrides(cfg, tree)
            except ConfigError:  # a value the config refuses: try the next
                continue
            return tree
    return None


def _run(cfg: RunConfig, root: Path) -> None:
    """What `run_local` does, up to the write stage."""
    for s in PIPELINE:
        s.validate(cfg)
    prepare_run(cfg, root)
    run = Run(root, cfg, PIPELINE)
    for name in run.order:
        run.run_stage(name)


def _outputs(root: Path) -> dict[str, bytes]:
    return {f: (root / (f + ".json" if f.startswith("splits") else "rejects.jsonl")).read_bytes() for f in COMPARED}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, Path, RunConfig]:
    base = tmp_path_factory.mktemp("resume")
    world = build_demo_world(base / "world", n_scenes=4, seed=9).scene_graphs.parent
    # A table that differs from the bundled one where the demo notices: no "material" category, so no
    # "same material" path and no material swap (a byte copy would test nothing).
    table = json.loads((Path(__file__).parent.parent / "templates" / "attribute_categories.json").read_text())
    del table["categories"]["material"]
    (world / "attribute_categories.json").write_text(json.dumps(table))
    raw = load_config(None, BASE).model_dump(mode="json")
    raw["filters"]["scorers"] = {"seam": {}}  # the SSIM scorer costs seconds a run; one image filter is enough
    cfg = RunConfig.model_validate(raw)
    _run(cfg, base / "finished")
    return base, world, cfg


def test_every_declared_key_has_a_change(finished):
    _, world, cfg = finished
    curated = _changes(world)
    missing = [k for k in DECLARED if k not in curated and _auto_change(cfg, k) is None]
    assert not missing, f"give these keys a change in CHANGES: {missing}"


@pytest.mark.parametrize("key", DECLARED)
def test_resuming_with_a_changed_key_equals_a_fresh_run(finished, tmp_path: Path, key: str):
    base, world, cfg = finished
    change = _changes(world).get(key) or _auto_change(cfg, key)
    assert change is not None, f"no valid change for {key}: add one to CHANGES"
    new = apply_overrides(cfg, change)
    assert config_value(new, key) != config_value(cfg, key)
    resumed = tmp_path / "resumed"
    shutil.copytree(base / "finished", resumed)
    _run(new, resumed)
    _run(new, tmp_path / "fresh")
    got, want = _outputs(resumed), _outputs(tmp_path / "fresh")
    assert [f for f in COMPARED if got[f] != want[f]] == [], f"{key} -> {change}: resume differs from fresh"
    if key == "attribute_table":
        assert want != _outputs(base / "finished")  # the change reaches the output, so resuming is tested
