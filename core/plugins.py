"""The plugin points: the kinds of thing a run's config names, each a `Registry` filled by the classes of
one package, so adding one is a new file there (docs/extending.md).

Declared here, in core, so that every layer can look a name up (the config validates against them, the
report and the review app read their labels); each package is imported on the first lookup, never when
this module is, so core imports nothing above it at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hardneg.core.registry import Registry

# `language.negative_types`: `generators/text/types.py` (`TextNegativeType`)
TEXT_NEGATIVES: Registry[Any] = Registry("text negative type", "hardneg.generators.text")
# `images.types`: `generators/images/types.py` (`ImageType`)
IMAGE_NEGATIVES: Registry[Any] = Registry("negative image type", "hardneg.generators.images")
# `language.backend`: `backends/` (`backends/language.py`'s `LanguageBackend`, built by its `from_config`)
LANGUAGE_BACKENDS: Registry[Any] = Registry("language backend", "hardneg.backends")
# `images.backend`: `backends/` (`backends/inpaint.py`'s `InpaintBackend`, built by its `from_config`)
INPAINT_BACKENDS: Registry[Any] = Registry("inpainting backend", "hardneg.backends")
# `filters.scorers`, `filters.thresholds`, `refine.scorers`: `filters/base.py` (`Filter`)
FILTERS: Registry[Any] = Registry("filter", "hardneg.filters.scorers")
# the stages after the write stage, and the `exports` config section: `exports/base.py` (`ExportStage`)
EXPORTS: Registry[Any] = Registry("export", "hardneg.exports")


def known(registry: Registry[Any]) -> Callable[[Any, Any], Any]:
    """A config field validator (`field_validator("backend")(known(LANGUAGE_BACKENDS))`):
    the value, a name or a list of names, names registered plugins; an unknown one names the closest known."""

    def check(cls: Any, value: Any) -> Any:
        for name in value if isinstance(value, list) else [value]:
            registry.get(name)
        return value

    return check
