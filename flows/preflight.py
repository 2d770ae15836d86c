"""Before the first stage: every model role the run will use is there, or the run stops in seconds.

The roles a config turns on: the language server (`language.backend: openai`), the diffusers inpainting
backend (`images.backend: diffusers`), and each filter with a model (`filters.scorers.*`,
`refine.scorers[*]`: CLIP, DINOv2, DIRE, the detector, a transformers text classifier). Each lists its
`Requirement`s (`backends/requirements.py`); a role whose stage is already done for this config is not asked
(a resumed run needs only what it has left to do). The first problem found stops the run: one line naming
the role, the missing piece and how to get it, exit 2, before any folder is made.
"""

from __future__ import annotations

import os

from hardneg.backends.requirements import Requirement, Server, Weights, check
from hardneg.core.config import RunConfig
from hardneg.core.errors import ConfigError, HardnegError
from hardneg.core.runner.stage import Run


class MissingRequirement(HardnegError):
    """A model role the config turns on cannot work here; the message says what to install or provide."""


def requirements(cfg: RunConfig, pending: set[str]) -> list[Requirement]:
    """What the stages in `pending` need, role by role, in stage order."""
    from hardneg.backends.inpaint_diffusers import INSTALL_HINT
    from hardneg.filters.registry import build

    out: list[Requirement] = []
    if "language" in pending and cfg.language.backend == "openai":
        o = cfg.language.openai
        base_url = o.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ConfigError(
                "language.backend is openai but language.openai.base_url is null and $OPENAI_BASE_URL is not set; "
                "set one (https://api.openai.com/v1 for OpenAI)"
            )
        out.append(Requirement("language.backend openai", server=Server(base_url, o.api_key_env or None)))
    if "images" in pending and cfg.images.enabled and cfg.images.backend == "diffusers":
        weights = (Weights(cfg.images.diffusers.model, "model_index.json"),)
        out.append(
            Requirement("images.backend diffusers", ("torch", "diffusers", "transformers"), INSTALL_HINT, weights)
        )
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
