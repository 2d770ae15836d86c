"""The export stages: the other benchmark shapes a run emits from its decided samples, after the write
stage (FineCops-Ref's own layout, `exports/finecops.py`), and the stages they need.

Each is an `ExportStage` registered under its name (`@EXPORTS.add("tricd", order=30)`), which is at once
its stage name, its config section (`exports.<name>`, validated by its `Options` when it has any) and, when
it has a `title`, its output folder `RUN/<name>/`, whose `summary.json` (counts per split) stats.md, the
dataset card (`exports/summary.py`) and the report (`review/report/exports.py`) show under that title.
The runner runs each after the stages it reads (`reads`), and otherwise in their order, which is also where
their sections go in stats.md and the report:

    10 phrases    the noun phrases of each positive (for TRICD)
    20 probe_b    Probe-B's filler images (for the probes)
    30 tricd      TRICD contextual phrase detection pairs            RUN/tricd/
    40 probes     Probe-R, Probe-C and Probe-B                       RUN/probes/
    50 imagecode  ImageCoDe retrieval sets                           RUN/imagecode/

Adding one is a file in `exports/` with its class, and a test (docs/extending.md).
"""

from __future__ import annotations

from typing import ClassVar

from hardneg.core.config_exports import ExportOptions
from hardneg.core.runner.stage import Stage


class ExportStage(Stage):
    """A stage after the write stage; see the module docstring."""

    Options: ClassVar[type[ExportOptions] | None] = None  # its `exports.<name>` config section
    title: ClassVar[str | None] = None  # its folder's heading in stats.md and the card; None: no folder
    about: ClassVar[str] = ""  # what the folder holds, under the heading
