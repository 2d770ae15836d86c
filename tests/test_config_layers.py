"""Config files extend a base key by key (`core/config_files.py`): a one-line file changes one key of the
demo config, `configs/gqa.yaml` is complete on its own, and a misspelt key or base says what was meant.
Before config layers, a one-line `seed: 3` file silently replaced the whole demo config."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg.core.config import RunConfig, load_config
from hardneg.core.config_files import diff_tree, merge
from hardneg.core.errors import ConfigError


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_one_line_file_changes_one_key_of_the_demo_config(tmp_path: Path):
    demo = load_config(None)
    mine = load_config(_write(tmp_path, "seed.yaml", "seed: 3\n"))
    assert mine.seed == 3
    assert mine.model_dump(exclude={"seed"}) == demo.model_dump(exclude={"seed"})
    assert mine.shard_size == 16 and mine.images.candidates == 4  # the demo's, not core/config.py's


def test_nested_keys_merge_and_lists_replace(tmp_path: Path):
    cfg = load_config(_write(tmp_path, "c.yaml", "balance: {per_relation: 5}\npaths: {types: [0_hop]}\n"))
    assert cfg.balance.per_relation == 5 and cfg.balance.per_type_level == 40  # the demo's other caps stay
    assert cfg.paths.types == ["0_hop"]


def test_gqa_is_complete_on_its_own_and_a_file_may_extend_it(tmp_path: Path):
    gqa = load_config("configs/gqa.yaml")
    assert gqa == load_config("gqa")
    assert gqa.images.candidates == RunConfig().images.candidates == 10  # not the demo's 4
    assert gqa.balance.per_type_level == 15000 and gqa.shard_size == 2500
    mine = load_config(_write(tmp_path, "weekly.yaml", "base: gqa\nseed: 9\n"))
    assert mine.model_dump(exclude={"seed"}) == gqa.model_dump(exclude={"seed"}) and mine.seed == 9


def test_base_null_starts_from_the_code_defaults_and_bases_chain_through_files(tmp_path: Path):
    assert load_config(_write(tmp_path, "bare.yaml", "base: null\n")) == RunConfig()
    _write(tmp_path, "team.yaml", "base: gqa\nworkers: 3\n")
    mine = load_config(_write(tmp_path, "me.yaml", "base: team.yaml\nseed: 4\n"))  # relative to me.yaml
    assert (mine.workers, mine.seed, mine.shard_size) == (3, 4, 2500)


def test_openai_config_is_the_demo_with_another_backend():
    demo, openai = load_config(None), load_config("openai")
    assert openai.language.backend == "openai"
    assert openai.model_dump(exclude={"language"}) == demo.model_dump(exclude={"language"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seeed: 3\n", "seeed: unknown key (did you mean seed?)"),
        ("paths: {tyeps: [0_hop]}\n", "paths.tyeps: unknown key (did you mean paths.types?)"),
        ("images: {candidate: 3}\n", "images.candidate: unknown key (did you mean images.candidates?)"),
        ("base: dmeo\n", "did you mean 'demo'?"),
        ("base: [demo]\n", "base must be a config name or file"),
        ("seed: [\n", "is not valid YAML at line"),
        ("- a\n", "must be a mapping of keys"),
    ],
)
def test_config_errors_are_one_line_and_say_what_was_meant(tmp_path: Path, text: str, message: str):
    with pytest.raises(ConfigError) as e:
        load_config(_write(tmp_path, "bad.yaml", text))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_base_cycle_is_named(tmp_path: Path):
    _write(tmp_path, "a.yaml", "base: b.yaml\n")
    _write(tmp_path, "b.yaml", "base: a.yaml\n")
    with pytest.raises(ConfigError, match=r"cycle \(a.yaml -> b.yaml -> a.yaml\)"):
        load_config(tmp_path / "a.yaml")


def test_unreadable_and_missing_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ConfigError, match=r"config file not found: .*did you mean 'gqa'"):
        load_config("gqaa")
    with pytest.raises(ConfigError, match="is a folder, not a file"):
        load_config(tmp_path)
    p = _write(tmp_path, "locked.yaml", "seed: 1\n")
    real = Path.read_text

    def read_text(self: Path, *a, **k) -> str:  # chmod cannot stop root, who runs CI
        if self == p:
            raise PermissionError(13, "Permission denied")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", read_text)
    with pytest.raises(ConfigError, match=r"cannot read config .*locked\.yaml: Permission denied"):
        load_config(p)


def test_diff_tree_gives_back_the_target():
    base = {"a": 1, "b": {"c": 2, "d": 3}, "e": {"x": {}, "y": {}}}
    target = {"a": 1, "b": {"c": 5, "d": 3}, "e": {}}
    d = diff_tree(base, target)
    assert d == {"b": {"c": 5}, "e": {}}
    merged = {"a": 1, "b": {"c": 2, "d": 3}}  # a mapping that lost keys comes whole: merged onto a base without it
    merge(merged, d)
    assert merged == target


def test_a_relative_data_path_names_the_file_where_the_config_was_read(tmp_path: Path, monkeypatch):
    """The stored config must name the same file for a `hardneg split` run from another folder (or a remote
    worker): a relative data path is made absolute when the config is read; bundled data stays relative."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    cfg = load_config(None, {"inputs": {"scene_graphs": "data/x.json"}})
    monkeypatch.chdir(tmp_path / "b")
    stored = RunConfig.model_validate(cfg.model_dump(mode="json"))
    assert stored.resolve(stored.inputs.scene_graphs) == tmp_path / "a" / "data" / "x.json"
    assert str(stored.language.lexicon).startswith("templates/")
