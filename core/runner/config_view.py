"""The config as one stage may read it: only the keys its fingerprint holds.

A stage's fingerprint hashes the config keys it declares (`Stage.config`, `Stage.data`); a key it reads
without declaring changes its output without redoing it, and a resumed run then differs from a fresh one.
So `Unit.cfg` is a `ConfigView`: reading a declared key, or anything under one, gives the value itself;
reading a section a declared key lies in ("targets" for "targets.min_area_frac") gives a view of that
section; reading anything else raises `UndeclaredConfig`, naming the stage and the key, the first time the
code path runs (as `Unit.read` does for an undeclared stage).

    cfg = ConfigView(run_config, ("seed", "targets.min_area_frac"), "language")
    cfg.seed                     # 0
    cfg.targets.min_area_frac    # 0.001
    cfg.targets.min_side         # UndeclaredConfig: stage language reads config 'targets.min_side' ...

A view answers the config's own methods that read no key (`resolve`); every other method (a dump, a
fingerprint) reads keys the view cannot account for, and raises too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

KEY_FREE = frozenset({"resolve"})  # methods of a config section that read none of its keys


class UndeclaredConfig(RuntimeError):
    """A stage read a config key its fingerprint does not hold."""


class ConfigView:
    """`cfg` (a config section at `prefix`) as a stage that declares `declared` (dotted keys) may read it."""

    __slots__ = ("_cfg", "_declared", "_prefix", "_stage")

    def __init__(self, cfg: BaseModel, declared: Iterable[str], stage: str, prefix: str = "") -> None:
        self._cfg = cfg
        self._declared = frozenset(declared)
        self._stage = stage
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # its own slots (unset while a copy is made), never a config key
            raise AttributeError(name)
        value = getattr(self._cfg, name)
        key = f"{self._prefix}{name}"
        if name not in type(self._cfg).model_fields and name not in (self._cfg.model_extra or {}):
            if name in KEY_FREE:
                return value
            raise UndeclaredConfig(
                f"stage {self._stage} calls config{'.' + self._prefix.rstrip('.') if self._prefix else ''}.{name}(), "
                "which reads keys it does not declare in `config`; read the declared keys themselves"
            )
        if any(key == d or key.startswith(f"{d}.") for d in self._declared):
            return value
        if isinstance(value, BaseModel) and any(d.startswith(f"{key}.") for d in self._declared):
            return ConfigView(value, self._declared, self._stage, f"{key}.")
        raise UndeclaredConfig(
            f"stage {self._stage} reads config {key!r} without declaring it in `config`: its fingerprint would "
            "not change with it, and a resumed run would keep output made under another value"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__slots__:
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"stage {self._stage}: the config is read-only")

    def __repr__(self) -> str:
        return f"<config of stage {self._stage}{' at ' + self._prefix.rstrip('.') if self._prefix else ''}>"


class SeenBy:
    """A run whose `cfg` is one stage's view of the config (`Run.seen_by`): the run as that stage's hooks
    (`prepare`, `finish`, `summarize`, `shards_per_unit`, `stale`) see it; all else is the run's."""

    def __init__(self, run: Any, name: str) -> None:
        self._run = run
        self.cfg = run.stage_cfg(name)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_run":  # a copy being made: not the run's
            raise AttributeError(attr)
        return getattr(self._run, attr)
