"""What a probe's options make when they win: each adds its fields to its probe's fixed ones (`Candidates`),
and a Probe-R set keeps its chosen swaps as they are written (`SwapOption.to_json`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SwapOption:
    """A prompt with one word swapped ("a cup under a table"), which word for which, and its certificate; a
    predicate swap also says how often the corpus shows the swapped triple (`plausibility`)."""

    swapped: str
    part: str  # what was swapped: "relation" or "subject"
    old: str
    new: str
    certificate: Json
    plausibility: Json | None = None

    def to_json(self) -> Json:
        out: Json = {"swapped": self.swapped, "swap": {self.part: [self.old, self.new]}}
        if self.plausibility is not None:
            out["plausibility"] = self.plausibility
        out["certificate"] = self.certificate
        return out

    @classmethod
    def from_json(cls, data: Json) -> SwapOption:
        [(part, (old, new))] = data["swap"].items()
        return cls(data["swapped"], part, old, new, data["certificate"], data.get("plausibility"))


@dataclass(frozen=True, slots=True)
class ImageOption:
    """An image of a Probe-R image set, with the certificate it passed."""

    image_id: str
    certificate: Json

    def to_json(self) -> Json:
        return {"image_id": self.image_id, "certificate": self.certificate}


@dataclass(frozen=True, slots=True)
class GroupOption:
    """A Probe-C group's second image and both prompts: prompt i true of image i, false of the other."""

    image_ids: list[str]
    swap: Json
    prompts: list[str]
    certificate: Json

    def to_json(self) -> Json:
        return {
            "image_ids": self.image_ids,
            "swap": self.swap,
            "prompts": self.prompts,
            "certificate": self.certificate,
        }
