"""hardneg: hard-negative vision-language benchmarks from GQA scene graphs (FineCops-Ref method).

The import name of the whole application. Its layers are the repository's top-level folders, mapped in
by `pyproject.toml` (`hardneg.core` is `core/`, `hardneg.generators` is `generators/`, ...), lowest first:

    core -> backends -> generators -> filters -> flows -> hardneg.cli

A layer imports only from layers to its left (tests/test_layers.py checks it).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hardneg")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
