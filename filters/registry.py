"""Filters by name. Each filter class registers itself (`@FILTERS.add("clip")` in its file under
`filters/scorers/`); a name is the config key (`filters.scorers.<name>`, `filters.thresholds.<name>`, or a
`kind` under `refine.scorers`), and its class says what it scores.

The scorer modules are imported on the first lookup, and none imports torch at import time, so deciding
from stored scores (`hardneg split`) never loads a model.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from hardneg.core.config_files import describe_errors
from hardneg.core.errors import ConfigError
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Settings


def filter_class(name: str) -> type[Filter]:
    return FILTERS.get(name)


def _settings(model: type[Settings], values: dict[str, Any] | None, where: str) -> Settings:
    try:
        return model.model_validate(values or {})
    except ValidationError as e:
        said = describe_errors(e, model).replace("(did you mean ", f"(did you mean {where}.")
        raise ConfigError(f"config {where}.{said}") from None


def build(name: str, options: dict[str, Any] | None, batch_size: int = 16, where: str = "") -> Filter:
    cls = filter_class(name)
    return cls(_settings(cls.Options, options, where or f"filters.scorers.{name}"), batch_size)


def thresholds(name: str, values: dict[str, Any] | None) -> Settings:
    return _settings(filter_class(name).Thresholds, values, f"filters.thresholds.{name}")
