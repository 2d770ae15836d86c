"""hardneg: hard-negative vision-language benchmarks from GQA scene graphs (FineCops-Ref method).

The import name of the whole application. Its layers are the repository's top-level folders, mapped in
by `pyproject.toml` (`hardneg.core` is `core/`, `hardneg.generators` is `generators/`, ...), lowest first:

    core -> backends -> generators -> exports -> filters -> review -> flows -> hardneg.cli

The package's own modules (this one, the CLI) live in `src/hardneg/`, not in a `hardneg/` folder at the
repository root: run from there, such a folder would be imported in place of the installed package while
its layers came from wherever that is installed (another checkout's, mixed with this one's).

A layer imports only from layers to its left (tests/test_layers.py checks it). A layer is only ever
imported by its full name: run from the repository root, `import core` would find the folder and load a
second copy of every module (two `Stage` classes, two registries), so each layer's `__init__` refuses it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hardneg")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"


def require_full_name(module_name: str) -> None:
    """Refuse a layer imported by its folder name (`import core`) instead of `hardneg.core`."""
    if module_name.split(".")[0] != "hardneg":
        layer = module_name.split(".")[0]
        raise ImportError(
            f"import hardneg.{layer}, not {layer}: the repository's top-level folders are layers of the one "
            f"package `hardneg`, and a second name would load a second copy of every module"
        )
