"""Config files and their layers: which file a `--config` names, what it extends, and errors that say
what to type instead.

A config file overrides its *base* key by key (nested mappings merge; lists and scalars replace):

    base: demo            # a bundled config (demo, gqa, openai), a file relative to this one, or null
    seed: 3

`base` defaults to `demo`, the bundled demo config, so a one-line file changes one key of the demo and
nothing else. `base: null` starts from the defaults in `core/config.py` alone: `configs/gqa.yaml` does
that, so it is complete on its own. The bundled `demo.yaml` is the root of the default chain.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from hardneg.core.errors import ConfigError
from hardneg.core.resources import bundled_config, bundled_dir, is_bundled
from hardneg.core.words.common import load_yaml_text

BASE_KEY = "base"
DEFAULT_BASE = "demo"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir("configs").glob("*.yaml"))


def find_config(name: str | Path, relative_to: Path | None = None) -> Path:
    """The file a config reference names: a bundled config's name (`gqa`: no folder, no suffix), a file
    (relative to `relative_to`, or the working directory), or a bundled path (`configs/gqa.yaml`)."""
    bundled = bundled_config(str(name))
    if bundled is not None:
        return bundled
    p = Path(name).expanduser()
    if relative_to is not None and not p.is_absolute():
        p = relative_to / p
    if p.is_file():
        return p
    if p.exists():  # a folder, or a pipe (read twice when Prefect runs the flow: not supported)
        raise ConfigError(f"config {name} is {'a folder' if p.is_dir() else 'not a regular file'}, not a file")
    parts = Path(name).parts
    if len(parts) == 2 and parts[0] == "configs" and (b := bundled_config(Path(name).stem)) is not None:
        return b  # `configs/gqa.yaml` from any working directory
    names = bundled_names()
    close = difflib.get_close_matches(Path(name).stem, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"config file not found: {name} (bundled configs: {', '.join(names)}){hint}")


def read_layers(path: Path) -> tuple[dict[str, Any], list[Path]]:
    """The merged raw mapping of `path` over its bases, and the chain of files (base first)."""
    return _read(path, [])


def _read(path: Path, seen: list[Path]) -> tuple[dict[str, Any], list[Path]]:
    real = path.resolve()
    if real in seen:
        cycle = " -> ".join(p.name for p in [*seen, real])
        raise ConfigError(f"config {path}: its bases form a cycle ({cycle})")
    raw = read_mapping(path)
    is_root = real == (bundled_dir("configs") / f"{DEFAULT_BASE}.yaml").resolve()
    base = raw.pop(BASE_KEY, None if is_root else DEFAULT_BASE)
    if base is None or (isinstance(base, str) and base.lower() in ("none", "null", "")):
        return raw, [path]
    if not isinstance(base, str):
        raise ConfigError(f"config {path}: base must be a config name or file, got {base!r}")
    try:
        base_path = find_config(base, relative_to=path.parent)
    except ConfigError as e:
        raise ConfigError(f"config {path}: base {base!r}: {e}") from None
    merged, chain = _read(base_path, [*seen, real])
    merge(merged, raw)
    return merged, [*chain, path]


def read_mapping(path: Path) -> dict[str, Any]:
    """One YAML file as a mapping, every way it can fail as one line."""
    try:
        raw = load_yaml_text(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read config {path}: {getattr(e, 'strerror', None) or e}") from None
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise ConfigError(f"config {path} is not valid YAML{at}: {getattr(e, 'problem', None) or e}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path} must be a mapping of keys, got {type(raw).__name__}")
    return raw


def merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    """`extra` over `base`, in place: nested mappings merge key by key, anything else replaces."""
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v


def describe_errors(e: ValidationError, model: type[BaseModel]) -> str:
    """A pydantic error as one line: `where: what` per problem, an unknown key with the closest known
    key of its section (`seeed: unknown key (did you mean seed?)`)."""
    parts = []
    for err in e.errors():
        loc = [str(x) for x in err["loc"]]
        where = ".".join(loc) or "(top level)"
        if err["type"] == "extra_forbidden":
            known = _fields_at(model, loc[:-1])
            close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6) if loc else []
            prefix = ".".join(loc[:-1] + close[:1])
            parts.append(f"{where}: unknown key" + (f" (did you mean {prefix}?)" if close else ""))
        else:
            parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _fields_at(model: type[BaseModel], loc: list[str]) -> list[str]:
    """The field names of the (nested) model at `loc`; empty when `loc` is not a model section. A section
    whose keys are registered plugins (`exports`) names the model that holds them (`fields_model`)."""
    current: Any = model
    for part in loc:
        field = current.model_fields.get(part) if isinstance(current, type) else None
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return []
        current = field.annotation
        if hasattr(current, "fields_model"):
            current = current.fields_model()
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def diff_tree(base: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """The nested keys of `target` that differ from `base`, so that `merge(base, diff_tree(base, target))`
    gives `target`; a mapping that lost keys comes whole (merging cannot remove a key)."""
    out: dict[str, Any] = {}
    for k, v in target.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict) and set(base[k]) <= set(v):
            sub = diff_tree(base[k], v)
            if sub:
                out[k] = sub
        elif k not in base or base[k] != v:
            out[k] = v
    return out


class Strict(BaseModel):
    """Base of every config section: unknown keys are errors, values strict and frozen, paths resolved."""

    # strict: `shard_size: "16"` or `true` is an error, not 16 or 1; a float key takes an int (0 is 0.0)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _paths_from_strings(cls, v: Any, info: ValidationInfo) -> Any:
        """YAML has no path type: a string is a path where a path is expected (JSON mode does this itself)."""
        if isinstance(v, str) and info.mode == "python" and info.field_name is not None:
            ann = cls.model_fields[info.field_name].annotation
            if ann is Path or Path in get_args(ann):
                return Path(v)
        return v

    @field_validator("*", mode="after")
    @classmethod
    def _paths_from_here(cls, v: Any) -> Any:
        """A relative data path means the working directory's file *when the config is read*: made absolute
        here, so the stored config names the same file for `hardneg split` from another folder or a remote
        worker. Bundled data (`templates/...`) stays relative: it is found in the installed package."""
        if isinstance(v, Path) and not v.is_absolute() and not is_bundled(v):
            return Path.cwd() / v
        return v


def leaf_keys(tree: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys of the leaves of a nested mapping: {"filters": {"thresholds": {"seam": {"max": 1}}}}
    gives ["filters.thresholds.seam.max"]."""
    out: list[str] = []
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.extend(leaf_keys(v, key + "."))
        else:
            out.append(key)
    return out


def dotted_value(tree: dict[str, Any], dotted: str, what: str = "tree") -> Any:
    """The value at a dotted key of a nested mapping; KeyError naming the key when there is none."""
    value: Any = tree
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(f"{what} has no key {dotted!r}")
        value = value[part]
    return value
