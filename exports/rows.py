"""The record types of the export stages' outputs under `work/` (`core/schema.py`): the rows each export
stage keeps beside the files it publishes, as its `writes` declares them. Field order is the writer's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from hardneg.core.records import content_id
from hardneg.core.schema import Output

Json = dict[str, Any]


@dataclass(slots=True, kw_only=True)
class PhrasesRow:
    """A positive's noun chunks tied to its path's nodes (`{"text", "start", "end", "node"}` each) and how
    many chunks the parser found."""

    id: int
    phrases: list[Json]
    chunks: int


@dataclass(slots=True, kw_only=True)
class TricdPairRow:
    """One TRICD pair: the positive image (`positive_id` None) or a negative one, with the caption's
    phrases and their boxes (none on a negative)."""

    id: int
    image: str | None  # run-relative, None without source images (a shard's row: the file, `ExportFolder.source`)
    image_id: str
    width: int
    height: int
    phrases: dict[str, list[list[int]]]
    positive_id: int | None
    negative: str | None  # "distractor" or "image_edit"
    certificate: Json | None
    caption: str
    phrase_text: dict[str, str]
    phrase_span: dict[str, list[int]]
    phrase_node: dict[str, int]
    subset: str
    split: str
    sample_id: int
    level: int
    path: Json


@dataclass(slots=True, kw_only=True)
class ImageCodeSetRow:
    """One ImageCoDe set of ten: the positive's image, its verified edits and its certified corpus images,
    `target` the positive's index."""

    id: int
    set: str
    images: list[str]  # run-relative (a shard's row: the files, `ExportFolder.source`)
    target: int
    description: str
    split: str
    positive_id: int
    image_id: str
    is_video: bool
    tuple_type: str
    level: int
    path: Json
    edits: list[Json]
    distractors: list[Json]  # the corpus images, each with its certificate


@dataclass(slots=True, kw_only=True)
class ProbeRRow:
    """One Probe-R comparison on one image: the `correct` prompt against the `swapped` one."""

    split: str
    positive_id: int
    triple: list[str]
    kind: str  # "probe_r/predicate", "probe_r/subject", "probe_r/subject_only", "probe_r/swapped_subject"
    image_id: str
    correct: str
    swapped: str
    swap: Json | None = None  # the predicate and subject swaps
    plausibility: Json | None = None  # the predicate swaps: how often the corpus shows the swapped triple
    certificate: Json
    id: int
    image: str | None  # run-relative, None without source images (None in a shard's rows: `finish` places it)

    @classmethod
    def made(cls, **fields: Any) -> ProbeRRow:
        """A probe as the search found it (its kind's fields and its option's), with its id: one per kind,
        image and prompts (two cups on one table ask one thing)."""
        key = (fields["kind"], fields["image_id"], fields["correct"], fields["swapped"])
        return cls(**fields, id=content_id("probe", *key), image=None)

    def to_row(self) -> Json:
        """The keys a row of its kind has, in the order they have always been written: an image set's
        (subject-only, swapped-subject) names its image after the prompts and has no swap."""
        head = {"split": self.split, "positive_id": self.positive_id, "triple": self.triple, "kind": self.kind}
        prompts = {"correct": self.correct, "swapped": self.swapped}
        if self.kind in IMAGE_SET_KINDS:
            return {**head, **prompts, "image_id": self.image_id, "certificate": self.certificate, "id": self.id,
                    "image": self.image}  # fmt: skip
        out = {**head, "image_id": self.image_id, **prompts, "swap": self.swap}
        if self.kind == "probe_r/predicate":
            out["plausibility"] = self.plausibility
        return {**out, "certificate": self.certificate, "id": self.id, "image": self.image}


IMAGE_SET_KINDS = frozenset({"probe_r/subject_only", "probe_r/swapped_subject"})


@dataclass(slots=True, kw_only=True)
class ProbeRSetRow:
    """One triple's Probe-R set with every part certified: what the paper's own record holds."""

    split: str
    positive_id: int
    triple: list[str]
    image_id: str
    correct: str
    predicate: Json  # the chosen predicate swap's option
    subject: Json  # the chosen subject swap's option
    subject_only_ids: list[str]
    swapped_subject_ids: list[str]


@dataclass(slots=True, kw_only=True)
class ProbeCRow:
    """One Probe-C group: 2 images x 2 prompts, prompt i true of image i and false of the other."""

    split: str
    positive_id: int
    image_ids: list[str]
    kind: str  # "probe_c/composition" or "probe_c/object"
    category: str | None = None  # composition: the swapped attribute's category
    swap: Json
    prompts: list[str]
    certificate: Json
    id: int
    images: list[str | None]  # as Probe-R's `image`

    @classmethod
    def made(cls, **fields: Any) -> ProbeCRow:
        """A group as the search found it, with its id: one per kind, images and prompts."""
        key = (fields["kind"], *fields["image_ids"], *fields["prompts"])
        return cls(**fields, id=content_id("probe", *key), images=[None] * len(fields["image_ids"]))

    def to_row(self) -> Json:
        """Every field, `category` a composition group's only."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if self.kind != "probe_c/composition":
            del out["category"]
        return out


@dataclass(slots=True, kw_only=True)
class ProbeBGroupRow:
    """One Probe-B group: an image's target, the names certainly absent, and the images made of it."""

    id: int
    image_id: str
    split: str
    target: Json
    objects: list[str]
    present: list[str]
    absent: list[str]
    prompts: Json
    images: Json
    fillers: list[str]
    background_fraction: float
    patch_box: list[int]
    scene_image_id: str | None
    scene_names: list[str]


# The export stages' outputs as typed handles (`core/schema.py: Output`; the pipeline's are in
# `core/rows.py`).
PHRASES = Output("phrases", "phrases", PhrasesRow)
TRICD_PAIRS = Output("tricd", "pairs", TricdPairRow)
IMAGECODE_SETS = Output("imagecode", "sets", ImageCodeSetRow)
PROBE_R = Output("probes", "probe_r", ProbeRRow)
PROBE_C = Output("probes", "probe_c", ProbeCRow)
PROBE_R_SETS = Output("probes", "sets", ProbeRSetRow)
PROBE_B_GROUPS = Output("probe_b", "groups", ProbeBGroupRow)
