"""The record types of the pipeline's stage outputs, ingest to decide (`core/schema.py` says what a record
type is; the export stages' are in `exports/rows.py`).

Each dataclass is one output kind's row as stored (JSON Lines under `work/<stage>/`): its fields are
the row's keys in the order the writer puts them, and a field with a default is one a row may leave
out (or, where a record type has a `to_row`, what it says a row holds). A sample is made as its row
(`PositiveRow.made`, `TextNegativeRow.made`, `ImageNegativeRow.made`) and read and written as it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hardneg.core.gqa.loader import validate_graph
from hardneg.core.records import PathNode, SceneGraph, content_id, triples
from hardneg.core.schema import Output

Json = dict[str, Any]
R = TypeVar("R")


class SaysPath:
    """A record that says a referring path (`path`: `PathNode.to_json()`)."""

    __slots__ = ()
    path: Json

    def node(self) -> PathNode:  # the path, read
        return PathNode.from_json(self.path)


def extended(record: Any, as_type: type[R], **extra: Any) -> R:
    """`record` as `as_type`, a record type that adds `extra`'s fields to `record`'s."""
    return as_type(**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)}, **extra)


@dataclass(slots=True, kw_only=True)
class GraphRow:
    """One image's scene graph (ingest: as loaded and validated; hygiene: cleaned)."""

    image_id: str
    graph: Json  # GQA's value for the image: width, height, objects, ...
    image_digest: str | None = None  # ingest, when the run has images: a digest of the bytes it checked

    def scene_graph(self) -> SceneGraph:
        """The graph as a stage wrote it: ingest validated and repaired it, hygiene cleaned it, so it is read
        back as it is (`SceneGraph.from_gqa`), not validated again on every read (over half of what reading
        a graph cost the exports, which read hundreds of thousands). A row not of that form is a corrupt
        shard, and says why."""
        try:
            return SceneGraph.from_gqa(self.image_id, self.graph)
        except (KeyError, TypeError, AttributeError) as e:
            check = validate_graph(self.image_id, self.graph)
            why = check.reason or f"{type(e).__name__}: {e}"
            raise ValueError(f"work shard holds an invalid graph {self.image_id}: {why}") from None


@dataclass(slots=True, kw_only=True)
class PhotoRow:
    """One image ingest looked at (`core/gqa/inputs.py`): what it read, to tell on resume whether it changed."""

    image_id: str
    digest: str | None  # of the bytes it read; None when it could read none (missing, unreadable)
    stat: list[int] | None  # size, mtime, ctime, inode before the read (a cache key); None: no regular file


@dataclass(slots=True, kw_only=True)
class CountRow:
    """One corpus count of the plausibility stage (`Counts.rows`, `AnnotationStats.rows`)."""

    kind: str  # what is counted: "names", "triples", ...
    key: str
    n: int


@dataclass(slots=True, kw_only=True)
class PriorRow:
    """One table of the prior of real graphs as pseudo-counts (`core/gqa/prior.py`): `kind` is
    "counts:<table>" or "notes:<table>", `keys` its keys and `n` their counts scaled to the prior's weight."""

    kind: str
    keys: list[Any]
    n: list[float]


@dataclass(slots=True, kw_only=True)
class TallyRow:
    """One table of a shard's counts, made as the hygiene stage cleans the shard's graphs and summed by the
    plausibility stage (`core/gqa/plausibility.py: Tally`): `kind` is "counts:<table>" (of the half of the
    corpus `fold`) or "notes:<table>" (`fold` None), `keys` its keys and `n` their counts."""

    kind: str
    keys: list[Any]
    n: list[int]
    fold: int | None = None


@dataclass(slots=True, kw_only=True)
class FoldCountRow:
    """A count over one half of the corpus (`fold`: 0 or 1), for the cross-fit scorers."""

    kind: str
    key: str
    n: int
    fold: int


@dataclass(slots=True, kw_only=True)
class BalanceRow:
    """What the select stage balances a candidate positive by (`generators/paths/select.py`), written beside
    it by the paths stage so that balancing reads a few fields, not every candidate whole."""

    id: int
    image_id: str
    expression: str  # for the reject line of a candidate balancing drops
    tuple_type: str
    level: int
    target: str  # the target's name
    relations: list[str]  # distinct relation names on the path
    swappable: bool  # two objects of the path carry different attributes of one category
    unalterable: bool  # nothing a text negative may change: a bare part of things


@dataclass(slots=True, kw_only=True)
class PositiveRow(SaysPath):
    """A referring expression that picks out exactly one object (FineCops-Ref positive): `path` names the
    target (its `id`) and the related objects, `objects_id` their ids and `tuple` the facts it uses;
    `bbox` is the target's xywh, `distractors` the other objects of the image with its name, `template`
    "<type>@<templates version>#<index>", `risk_reasons` what the graph cannot rule out. The language stage
    adds its rewrites (`template_expression` None: none were asked)."""

    id: int
    image_id: str
    objects_id: list[str]
    tuple: list[list[str]]
    tuple_type: str
    level: int
    spatial: bool
    attribute: bool
    expression: str
    path: Json  # `PathNode.to_json()`
    bbox: list[int]
    width: int
    height: int
    distractors: int
    template: str
    generator: str
    risk_reasons: list[Json]
    template_expression: str | None = None  # rewritten: the template's text
    rewrites: list[str] = field(default_factory=list)
    expression_source: str = "template"  # or "rewrite#k"
    rewrite_backend: str | None = None

    @staticmethod
    def make_id(image_id: str, path: PathNode) -> int:
        return content_id("positive", image_id, path.canonical())

    @classmethod
    def made(cls, *, path: PathNode, bbox: Sequence[int], **fields: Any) -> PositiveRow:
        """A new positive saying `path`: the objects it names and the facts it uses follow from it."""
        objects = [n.id for n in path.nodes() if n.id is not None]
        return cls(objects_id=objects, tuple=triples(path), path=path.to_json(), bbox=list(bbox), **fields)

    def to_row(self) -> Json:
        """Every field, the rewrites' only where they were asked for."""
        out = {f: getattr(self, f) for f in _POSITIVE_FIELDS}
        if self.template_expression is not None:
            out.update(template_expression=self.template_expression, rewrites=self.rewrites,
                       expression_source=self.expression_source)  # fmt: skip
            if self.rewrite_backend is not None:
                out["rewrite_backend"] = self.rewrite_backend
        return out


_REWRITE_FIELDS = ("template_expression", "rewrites", "expression_source", "rewrite_backend")
_POSITIVE_FIELDS = tuple(f.name for f in dataclasses.fields(PositiveRow) if f.name not in _REWRITE_FIELDS)


@dataclass(slots=True, kw_only=True)
class KeptRow:
    """A positive the select stage keeps."""

    id: int


@dataclass(slots=True, kw_only=True)
class TextNegativeRow(SaysPath):
    """An expression that matches nothing in its positive's image (FineCops-Ref negative, cate "text").

    `path` is the altered path (no ids: it grounds nothing); `change` says what was altered, with node
    indices in `PathNode.nodes()` order; `shuffle_index` lists those indices (FineCops-Ref's key);
    `template_expression` is the template's text and `expression_source` says whether `expression` is it
    ("template") or worded like the positive's rewrite k ("rewrite#k"); `bbox` is the positive's target box
    (the negative itself has none). `rewrites` and `rewrite_backend` are set where the negatives' rewrites
    were asked for (`rewrites` None: not asked).
    """

    id: int
    image_id: str
    positive_id: int
    negative_level: int
    negative_type: str
    shuffle_index: list[int]
    ori_type: str
    negative_cate: str
    tuple_type: str
    level: int
    expression: str
    template_expression: str
    expression_source: str
    path: Json
    change: Json
    bbox: list[int]
    width: int
    height: int
    template: str
    generator: str
    backend: str
    rewrites: list[str] | None = None
    rewrite_backend: str | None = None

    @staticmethod
    def make_id(positive_id: int, negative_type: str, path: PathNode) -> int:
        return content_id("negative-text", str(positive_id), negative_type, path.canonical())

    @classmethod
    def made(
        cls,
        *,
        ori_type: str,
        path: PathNode,
        bbox: Sequence[int],
        expression: str,
        template_expression: str | None = None,
        expression_source: str = "template",
        **fields: Any,
    ) -> TextNegativeRow:
        """A new text negative saying `path`: its kind and type follow from the rest; worded as its template
        unless told otherwise."""
        return cls(ori_type=ori_type, negative_cate="text", tuple_type=ori_type, path=path.to_json(), bbox=list(bbox),
                   expression=expression, template_expression=template_expression or expression,
                   expression_source=expression_source, **fields)  # fmt: skip

    def to_row(self) -> Json:
        """Every field, the rewrites' only where they were asked for."""
        out = {f: getattr(self, f) for f in _TEXT_NEGATIVE_FIELDS}
        if self.rewrites is not None:
            out["rewrites"] = self.rewrites
        if self.rewrite_backend is not None:
            out["rewrite_backend"] = self.rewrite_backend
        return out


_TEXT_NEGATIVE_FIELDS = tuple(f.name for f in dataclasses.fields(TextNegativeRow) if not f.name.startswith("rewrite"))


@dataclass(slots=True, kw_only=True)
class ImageNegativeRow(SaysPath):
    """An edited image in which its positive's expression matches nothing (FineCops-Ref negative, cate
    "image"). `edit` is the scene-graph change that re-checks the claim, `edit_boxes` where pixels changed
    (none for a flip); `candidates` are the N images the backend made (run-relative paths), `file_name` the
    one the filters chose; `bbox` the target's box in the edited image. The rest is its positive's."""

    id: int
    image_id: str
    source_image_id: str
    positive_id: int
    negative_level: int
    negative_type: str
    shuffle_index: list[int]
    ori_type: str
    negative_cate: str
    tuple_type: str
    level: int
    expression: str
    path: Json
    edit: Json
    edit_boxes: list[list[int]]
    file_name: str
    candidates: list[str]
    bbox: list[int]
    width: int
    height: int
    generator: str
    backend: str

    @staticmethod
    def make_id(positive_id: int, negative_type: str, edit: Json) -> int:
        return content_id("negative-image", str(positive_id), negative_type, repr(sorted(edit.items())))

    @classmethod
    def made(
        cls, *, id: int, source_image_id: str, ori_type: str, candidates: list[str], **fields: Any
    ) -> ImageNegativeRow:
        """A new image negative (FineCops-Ref negative, cate "image"): its image id, kind, type and file follow
        from the rest (`file_name` is candidate 0, the one the filters chose once they have)."""
        return cls(id=id, image_id=f"{source_image_id}_{id:x}", source_image_id=source_image_id, ori_type=ori_type,
                   negative_cate="image", tuple_type=ori_type, file_name=candidates[0], candidates=candidates,
                   **fields)  # fmt: skip


@dataclass(slots=True, kw_only=True)
class FilterScoreRow:
    """The filters stage's scores of one sample, by filter version: `scores` for a positive or a text
    negative, `candidates` (one dict per candidate image) for an image negative."""

    id: int
    target: str  # "positive", "text_negative" or "image_negative"
    scores: dict[str, Json] = field(default_factory=dict)
    candidates: list[dict[str, Json]] = field(default_factory=list)

    def to_row(self) -> Json:
        """An image negative's row holds its candidates' scores, any other's its own."""
        if self.target == "image_negative":
            return {"id": self.id, "target": self.target, "candidates": self.candidates}
        return {"id": self.id, "target": self.target, "scores": self.scores}


@dataclass(slots=True, kw_only=True)
class RefineScoreRow:
    """One text negative's blind scores, (positive, negative) per scorer, and the group it is balanced in."""

    id: int
    group: str  # "<negative type>/L<level>"
    s1: list[float]
    s2: list[float]
    positive: int | None = None  # the positive it negates (rows of refine-scores@v3 and before have none)


@dataclass(slots=True, kw_only=True)
class PixelPositiveRow:
    """What the photo says about one positive (`core/pixels/claims.py`): the rules that had something to
    judge, the findings (`{"rule", "reason", "objects"}`), and why the graph's twin doubt is settled."""

    id: int
    checked: list[str]
    findings: list[Json] = field(default_factory=list)
    resolved: str | None = None


@dataclass(slots=True, kw_only=True)
class PixelNegativeRow:
    """A colour text negative checked in the photo: its finding when the photo shows the new colour."""

    id: int
    finding: Json | None = None


@dataclass(slots=True, kw_only=True)
class PositiveDecisionRow:
    """Whether a positive is kept, why not, its flattened scores and its risk reasons."""

    id: int
    keep: bool
    reason: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    risk_reasons: list[Json] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class NegativeDecisionRow:
    """Whether a negative is kept and why not; an image negative's chosen `candidate` and the candidates
    every filter keeps (`passed`). A negative dropped before it was scored (its positive dropped, a filter,
    the mix) has no `scores`; one the human filter dropped keeps what it had."""

    id: int
    keep: bool
    candidate: int | None = None
    scores: dict[str, float] | None = None
    passed: list[int] = field(default_factory=list)
    reason: str | None = None

    def to_row(self) -> Json:
        """The fields it has, in order: `passed` with a `candidate` (decide@v2 rows have neither)."""
        out: Json = {"id": self.id, "keep": self.keep}
        if self.candidate is not None:
            out["candidate"] = self.candidate
        if self.scores is not None:
            out["scores"] = self.scores
        if self.candidate is not None:
            out["passed"] = self.passed
        if self.reason is not None:
            out["reason"] = self.reason
        return out


# -- every output of the pipeline's stages, ingest to decide, as a typed handle -------------------------
# (`core/schema.py: Output`): a stage declares what it writes with its handles (`writes =
# outputs(LANGUAGE_NEGATIVES, LANGUAGE_POSITIVES)`) and a reader names the one it reads
# (`unit.records(LANGUAGE_POSITIVES)` gives `PositiveRow`s). The exports' are in `exports/rows.py`.

INGEST_GRAPHS = Output("ingest", "graphs", GraphRow)  # as loaded and validated, one file per shard
INGEST_PHOTOS = Output("ingest", "photos", PhotoRow)
HYGIENE_GRAPHS = Output("hygiene", "graphs", GraphRow)  # cleaned: what every later stage reads
HYGIENE_TALLIES = Output("hygiene", "tallies", TallyRow)
PLAUSIBILITY_COUNTS = Output("plausibility", "counts", CountRow)
PLAUSIBILITY_FOLDCOUNTS = Output("plausibility", "foldcounts", FoldCountRow)
PLAUSIBILITY_ANNOTATIONS = Output("plausibility", "annotations", CountRow)
PLAUSIBILITY_PRIOR = Output("plausibility", "prior", PriorRow)
PATHS_POSITIVES = Output("paths", "positives", PositiveRow)  # the candidates
PATHS_BALANCE = Output("paths", "balance", BalanceRow)
SELECT_KEPT = Output("select", "kept", KeptRow)
LANGUAGE_NEGATIVES = Output("language", "negatives", TextNegativeRow)
LANGUAGE_POSITIVES = Output("language", "positives", PositiveRow)  # the kept candidates, rewritten and checked
IMAGE_NEGATIVES = Output("images", "image-negatives", ImageNegativeRow)
PIXELS_POSITIVES = Output("pixels", "positives", PixelPositiveRow)
PIXELS_NEGATIVES = Output("pixels", "negatives", PixelNegativeRow)
FILTER_SCORES = Output("filters", "scores", FilterScoreRow)
REFINE_SCORES = Output("refine", "scores", RefineScoreRow)
DECIDED_POSITIVES = Output("decide", "positives", PositiveDecisionRow)
DECIDED_NEGATIVES = Output("decide", "negatives", NegativeDecisionRow)
