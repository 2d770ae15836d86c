"""The config is strict: no silent coercion of `true` or `"16"` into a number, no duplicate
YAML keys resolved last-wins, and a run `name` that is a folder name, never a path out of outputs/."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg.core.config import RunConfig, apply_overrides, load_config
from hardneg.core.errors import ConfigError


def _cfg(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("shard_size: true\n", "shard_size"),
        ('shard_size: "16"\n', "shard_size"),
        ("shard_size: 16.0\n", "shard_size"),
        ("seed: '3'\n", "seed"),
        ("images: {candidates: '4'}\n", "images.candidates"),
        ("language: {rewrite_positives: 'yes'}\n", "language.rewrite_positives"),
        ("language: {rewrite_positives: 1}\n", "language.rewrite_positives"),
        ("splits: {train: '0.8', val: 0.1, test: 0.1}\n", "splits.train"),
        ("inputs: {scene_graphs: 3}\n", "inputs.scene_graphs"),
    ],
)
def test_values_of_the_wrong_type_are_errors_not_coerced(tmp_path: Path, text: str, key: str):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(_cfg(tmp_path, text))


def test_ints_for_floats_and_strings_for_paths_are_fine(tmp_path: Path):
    cfg = load_config(_cfg(tmp_path, "splits: {train: 1, val: 0, test: 0}\ninputs: {scene_graphs: g.json}\n"))
    assert cfg.splits.train == 1.0 and cfg.inputs.scene_graphs == Path.cwd() / "g.json"  # read from here
    again = RunConfig.model_validate_json(cfg.model_dump_json())  # how a run folder's config is read back
    assert again == cfg
    assert apply_overrides(cfg, {"seed": 3}).inputs.scene_graphs == Path.cwd() / "g.json"


@pytest.mark.parametrize(
    "text",
    ["seed: 1\nshard_size: 4\nseed: 2\n", "images:\n  candidates: 2\n  enabled: true\n  candidates: 3\n"],
)
def test_a_duplicate_yaml_key_is_an_error(tmp_path: Path, text: str):
    with pytest.raises(ConfigError, match=r"duplicate key '(seed|candidates)'"):
        load_config(_cfg(tmp_path, text))


@pytest.mark.parametrize("name", ["../../x", "/abs", "", "a/b", "..", "run\n", "x" * 201])
def test_a_run_name_must_be_a_plain_folder_name(tmp_path: Path, name: str):
    with pytest.raises(ConfigError, match="name"):
        load_config(None, {"name": name})


def test_a_plain_run_name_is_fine():
    assert load_config(None, {"name": "gqa-train_2"}).name == "gqa-train_2"


def test_the_cli_says_which_key_is_wrong_in_one_line(tmp_path: Path, capsys, monkeypatch):
    from hardneg.cli import main

    cfg = _cfg(tmp_path, "name: ../../escaped\n")
    here = tmp_path / "a" / "b"  # a run named ../../escaped would land in here/outputs/../../escaped
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert main(["run", "--no-prefect", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hardneg: error:") and "name" in err and "Traceback" not in err
    assert not (tmp_path / "a" / "escaped").exists() and not (here / "outputs").exists()


def test_refine_bins_must_be_even(tmp_path: Path):
    """Found by the resume property test: an odd bin count passed the config and failed mid-run."""
    with pytest.raises(ConfigError, match=r"refine\.bins_2d"):
        load_config(_cfg(tmp_path, "refine: {bins_2d: 3}\n"))
