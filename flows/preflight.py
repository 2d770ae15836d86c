"""Before the first stage: every model role the run will use is there, or the run stops in seconds.

The roles a config turns on: the language backend (`language.backend`: the server, for `openai`), the
inpainting backend (`images.backend`: the libraries and weights, for `diffusers`; each backend lists its own
in `requirements`), and each filter with a model (`filters.scorers.*`,
`refine.scorers[*]`: CLIP, DINOv2, DIRE, the detector, a transformers text classifier). Each lists its
`Requirement`s (`backends/requirements.py`); a role whose stage is already done for this config is not asked
(a resumed run needs only what it has left to do). The first problem found stops the run: one line naming
the role, the missing piece and how to get it, exit 2, before any folder is made.
"""

from __future__ import annotations

from hardneg.backends.requirements import Requirement, check
from hardneg.core.config import RunConfig
from hardneg.core.errors import HardnegError
from hardneg.core.plugins import INPAINT_BACKENDS, LANGUAGE_BACKENDS
from hardneg.core.runner.stage import Run


class MissingRequirement(HardnegError):
    """A model role the config turns on cannot work here; the message says what to install or provide."""


def requirements(cfg: RunConfig, pending: set[str]) -> list[Requirement]:
    """What the stages in `pending` need, role by role, in stage order."""
    from hardneg.filters.registry import build

    out: list[Requirement] = []
    if "language" in pending:
        out += LANGUAGE_BACKENDS.get(cfg.language.backend, "language.backend").requirements(cfg)
    if "images" in pending and cfg.images.enabled:
        out += INPAINT_BACKENDS.get(cfg.images.backend, "images.backend").requirements(cfg)
    if "filters" in pending:
        for name, options in cfg.filters.scorers.items():
            f = build(name, options, where=f"filters.scorers.{name}")
            out += f.requirements(f"filters.scorers.{name}")
    if "refine" in pending and cfg.refine.enabled:
        for i, spec in enumerate(cfg.refine.scorers):
            role = f"refine.scorers[{i}] ({spec['kind']})"
            out += build(spec["kind"], {k: v for k, v in spec.items() if k != "kind"}, where=role).requirements(role)
    return out


def preflight(run: Run) -> None:
    """Raise `MissingRequirement` for the first role of a pending stage that cannot work here."""
    pending = {name for name in run.order if not run.is_complete(name)}
    problems = [why for req in requirements(run.cfg, pending) if (why := check(req))]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise MissingRequirement(problems[0] + more)
