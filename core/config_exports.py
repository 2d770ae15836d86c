"""The `exports` config section: the other benchmark shapes a run emits from its decided samples.

One key per registered export stage that has options (`exports/base.py`: `ExportStage.Options`, defined
beside the stage), in the registry's order; `hardneg split` may change the keys of the decision stages
(tricd, probes, imagecode), not Probe-B's (it generates images). The section is validated on use, not
when this module is imported: the export modules import the config.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from hardneg.core.plugins import EXPORTS


class ExportOptions(BaseModel):
    """Base of every export's options: unknown keys are errors, values are strict and frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def sections_model() -> type[BaseModel]:
    """The section as a model: a field per registered export with options, defaulting to its defaults."""
    fields: dict[str, Any] = {
        name: (cls.Options, Field(default_factory=cls.Options)) for name, cls in EXPORTS.items() if cls.Options
    }
    return create_model("ExportSections", __base__=ExportOptions, **fields)


class ExportsConfig(BaseModel):
    """`exports.<name>`: each registered export's options (`cfg.exports.tricd.distractors`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _sections(cls, data: Any) -> Any:
        """Each section validated by its export's options; an unknown export is an unknown key."""
        if isinstance(data, BaseModel):
            data = data.model_dump()
        return dict(sections_model().model_validate({} if data is None else data))

    @classmethod
    def fields_model(cls) -> type[BaseModel]:
        """The model whose fields are this section's keys (for "did you mean" in config errors)."""
        return sections_model()
