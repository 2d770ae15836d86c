"""The `exports` config section: the other benchmark shapes a run emits from its decided samples.
Each shape has its own keys; `hardneg split` may change the keys of the decision stages
(tricd, probes, imagecode), not Probe-B's (it generates images).

Defined here, beside `core/config.py` (which names it once), so the export keys live in one place.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Filler = Literal["black", "gray", "noise", "scene"]
FILLERS: tuple[str, ...] = ("black", "gray", "noise", "scene")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TricdExport(_Strict):
    """TRICD contextual phrase detection pairs (the TRICD paper)."""

    enabled: bool = True
    distractors: int = Field(1, ge=0, le=10)  # corpus images per positive in which the expression is false
    # about this many images sampled per positive (the target's name, the expression's relations, the scene's
    # rarest names) before they are ranked by how confusable they are with the positive image
    candidates: int = Field(200, ge=1)
    checked: int = Field(20, ge=1)  # the most confusable of them checked by the certificate, in rank order
    image_negatives: bool = True  # the run's chosen edited images are negative pairs too


class ProbesExport(_Strict):
    """Probe-R and Probe-C (the probing paper), from the decided positives."""

    enabled: bool = True
    # Probe-R subject-only and swapped-subject images per triple (the paper: 10; its script averages
    # exactly 10, so its layout repeats a smaller set in turn); 0 leaves both sets, and the paper's file, out
    subject_only_images: int = Field(10, ge=0, le=10)
    candidates: int = Field(10, ge=1)  # corpus images certified per search (second image; image sets: 3 x theirs)
    max_category_share: float = Field(0.4, gt=0.0, le=1.0)  # Probe-C composition: no attribute category above it
    class_min_count: int = Field(5, ge=1)  # Probe-B's class list: corpus names seen at least this often


class ProbeBExport(_Strict):
    """Probe-B: backgrounds replaced by fillers (BMR keeps every object, BR only the target)."""

    enabled: bool = True
    splits: list[Literal["train", "val", "test"]] = Field(default_factory=lambda: ["test"])
    fillers: list[Filler] = Field(default_factory=lambda: list(FILLERS))
    absent_prompts: int = Field(3, ge=1, le=20)  # names absent from the image, scored against the target's
    patch_frac: float = Field(0.1, gt=0.0, lt=0.5)  # the control patch's share of the image
    min_background: float = Field(0.2, ge=0.0, lt=1.0)  # share of the image the fillers must replace
    max_overlap: float = Field(0.25, ge=0.0, le=1.0)  # BR: another object's box may lie this much in the target's
    max_images: int | None = Field(None, ge=1)  # per shard; None = every eligible image

    @field_validator("fillers")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError("fillers must be a non-empty list without repeats")
        return v


class ImageCodeExport(_Strict):
    """ImageCoDe retrieval sets (the ImageCoDe paper): the original and between `min_edits` and `edits`
    edited images, one per distinct edit, at most `max_sets_per_image` sets per source image."""

    enabled: bool = True
    edits: int = Field(9, ge=1, le=63)  # the paper: 9 (10 images a set); the most distinct edits a set holds
    min_edits: int = Field(5, ge=1)  # the fewest; a positive with fewer distinct edits gets no set
    max_sets_per_image: int = Field(1, ge=1)  # so that the sets spread over the corpus's images

    @model_validator(mode="before")
    @classmethod
    def _min_follows_edits(cls, data: Any) -> Any:
        """A config that asks for fewer `edits` than the default minimum and names no minimum asks for
        sets of exactly that many edits: `edits: 3` alone is a valid config, not a clash with the default."""
        if isinstance(data, dict) and "min_edits" not in data and isinstance(data.get("edits"), int):
            default = cls.model_fields["min_edits"].default
            return {**data, "min_edits": min(default, data["edits"])}
        return data

    @model_validator(mode="after")
    def _min_at_most_edits(self) -> ImageCodeExport:
        if self.min_edits > self.edits:
            raise ValueError(f"min_edits ({self.min_edits}) must be at most edits ({self.edits})")
        return self


class ExportsConfig(_Strict):
    tricd: TricdExport = TricdExport()
    probes: ProbesExport = ProbesExport()
    probe_b: ProbeBExport = ProbeBExport()
    imagecode: ImageCodeExport = ImageCodeExport()
