"""The plugin points: the kinds of thing a run's config names, each a `Registry` filled by the classes of
one package, so adding one is a new file there (docs/extending.md).

Declared here, in core, so that every layer can look a name up (the config validates against them, the
report and the review app read their labels); each package is imported on the first lookup, never when
this module is, so core imports nothing above it at import time.
"""

from __future__ import annotations

from typing import Any

from hardneg.core.registry import Registry

# `language.negative_types`: `generators/text/types.py` (`TextNegativeType`)
TEXT_NEGATIVES: Registry[Any] = Registry("text negative type", "hardneg.generators.text")
# `images.types`: `generators/images/types.py` (`ImageType`)
IMAGE_NEGATIVES: Registry[Any] = Registry("negative image type", "hardneg.generators.images")
# `filters.scorers`, `filters.thresholds`, `refine.scorers`: `filters/base.py` (`Filter`)
FILTERS: Registry[Any] = Registry("filter", "hardneg.filters.scorers")
# the stages after the write stage, and the `exports` config section: `exports/base.py` (`ExportStage`)
EXPORTS: Registry[Any] = Registry("export", "hardneg.exports")
