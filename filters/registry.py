"""Every filter by name: one line each. A name is the config key (`filters.scorers.<name>`,
`filters.thresholds.<name>`, or a `kind` under `refine.scorers`); its class says what it scores.

Modules are imported on first use, and none imports torch at import time, so deciding from stored
scores (`hardneg split`) never loads a model.
"""

from __future__ import annotations

import difflib
from importlib import import_module
from typing import Any

from pydantic import ValidationError

from hardneg.core.errors import ConfigError
from hardneg.filters.base import Filter, Settings

REGISTRY: dict[str, str] = {
    "clip": "hardneg.filters.scorers.clip:ClipFilter",
    "ssim": "hardneg.filters.scorers.ssim:SSIMFilter",
    "dinov2": "hardneg.filters.scorers.dinov2:Dinov2Filter",
    "seam": "hardneg.filters.scorers.seam:SeamFilter",
    "dire": "hardneg.filters.scorers.dire:DireFilter",
    "sharpness": "hardneg.filters.scorers.sharpness:SharpnessFilter",
    "edits": "hardneg.filters.scorers.edit_check:EditCheckFilter",
    "detector": "hardneg.filters.scorers.detector:DetectorFilter",
    "ngram": "hardneg.filters.scorers.text:NGramFilter",
    "grammar": "hardneg.filters.scorers.text:GrammarFilter",
    "plausibility": "hardneg.filters.scorers.plausibility:PlausibilityFilter",
    "transformers": "hardneg.filters.scorers.text:TransformersTextFilter",
}


def filter_class(name: str) -> type[Filter]:
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown filter {name!r}{hint}; known: {', '.join(sorted(REGISTRY))}")
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(import_module(module), cls)


def _settings(model: type[Settings], values: dict[str, Any] | None, where: str) -> Settings:
    try:
        return model.model_validate(values or {})
    except ValidationError as e:
        first = e.errors()[0]
        key = ".".join(str(x) for x in first["loc"])
        msg = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
        raise ConfigError(f"config {where}{'.' + key if key else ''}: {msg}") from None


def build(name: str, options: dict[str, Any] | None, batch_size: int = 16, where: str = "") -> Filter:
    cls = filter_class(name)
    return cls(_settings(cls.Options, options, where or f"filters.scorers.{name}"), batch_size)


def thresholds(name: str, values: dict[str, Any] | None) -> Settings:
    return _settings(filter_class(name).Thresholds, values, f"filters.thresholds.{name}")
