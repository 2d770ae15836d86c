"""Data that ships with hardneg: `templates/`, `prompts/` and `configs/`, installed as package data.

Read through `importlib.resources`, so the same code works from a source checkout (editable install) and
from a wheel in any site-packages. A config names bundled data by its repository path
(`templates/lexicon.v1.yaml`); `data_path` turns that into a real file.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

BUNDLED = ("templates", "prompts", "configs")


def bundled_dir(name: str) -> Path:
    """The folder of one bundled data package (`templates`, `prompts` or `configs`)."""
    if name not in BUNDLED:
        raise ValueError(f"{name!r} is not bundled data: one of {', '.join(BUNDLED)}")
    return Path(str(files(f"hardneg.{name}")))


def data_path(p: str | Path) -> Path:
    """A data path from a config: absolute stays; `templates/...`, `prompts/...`, `configs/...` name the
    bundled files; any other relative path is relative to the working directory."""
    p = Path(p)
    if p.is_absolute():
        return p
    if is_bundled(p):
        return bundled_dir(p.parts[0]).joinpath(*p.parts[1:])
    return Path.cwd() / p


def is_bundled(p: Path) -> bool:
    """A relative path into the bundled data (`templates/...`, `prompts/...`, `configs/...`)."""
    return not p.is_absolute() and bool(p.parts) and p.parts[0] in BUNDLED


def bundled_config(name: str) -> Path | None:
    """`configs/<name>.yaml` when `name` is a bundled config's name (`demo`, `gqa`, `openai`), else None."""
    if "/" in name or "\\" in name or name.endswith((".yaml", ".yml")):
        return None
    p = bundled_dir("configs") / f"{name}.yaml"
    return p if p.is_file() else None
