"""The Filter contract: score first, decide later (NeMo Curator's `score_document` / `keep_document`,
dolma's versioned taggers).

Every scorer is one `Filter` subclass in its own file in `filters/scorers/`, registered under its name by
the decorator `@FILTERS.add("name")` (`core/plugins.py`):

- `name`, set by the decorator, is its config key (`filters.scorers.<name>`, `filters.thresholds.<name>`);
- `version` labels every score it stores (`"ssim@v1"`): scores made by another version are never
  re-decided as if they were this one's;
- `targets` says what it scores: `"positive"` (a referring expression and its target), `"text_negative"`
  (a negative expression against its positive's image), `"image_candidate"` (one candidate image of an
  image negative against its source), `"text"` (expressions alone: SugarCREPE's blind scorers);
- `Options` (pydantic) is what it runs with: model ids, batch sizes. It is part of the filters stage's
  fingerprint, so changing it re-scores;
- `Thresholds` (pydantic) is what decides: `hardneg split` may change it and never re-scores;
- `score(items)` returns one dict of named floats per item (`{"similarity": 0.93}`), `{}` when the
  filter does not apply to that item (realism of a flip: no pixel was generated);
- `keep(scores, thresholds)` is a pure function of one item's scores: `(True, None)` or
  `(False, reason)`. Missing scores keep (the filter did not apply);
- `rank`, when set, names the score that picks the best of an image negative's candidates (FineCops-Ref:
  the most similar to the original among those that pass);
- `legend` says what its scores mean to a reader, a `ScoreLine` each (a name ending in "_" covers a
  family): the report's legend line, the `Thresholds` key the report draws on the score's histogram and
  which side of it passes, and, for the review queue (`review/priority.py`), how likely the score makes
  it that a human rejects the sample.

A filter that scores samples (any target but `"text"`) and is not configured is listed as "not configured"
in stats.md, never silently absent.

Models load once per worker process (`hardneg.backends.models.shared`), lazily, never at import: a
filter module imports no torch at module level, so `hardneg split` re-decides without loading any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from PIL import Image
from pydantic import BaseModel, ConfigDict

from hardneg.backends.requirements import Requirement
from hardneg.core.errors import ConfigError, MissingDependency
from hardneg.core.records import SceneGraph
from hardneg.core.rows import ImageNegativeRow, Json, PositiveRow, SaysPath, TextNegativeRow

Box = tuple[int, int, int, int]  # xywh pixels
Target = Literal["positive", "text_negative", "image_candidate", "text"]
Scores = dict[str, float]
Side = Literal["above", "below"]
T = TypeVar("T")


class Settings(BaseModel):
    """Base of every filter's `Options` and `Thresholds`: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(Settings):
    pass


class NoThresholds(Settings):
    pass


@dataclass(frozen=True, slots=True)
class ScoreLine:
    """What one score a filter stores means to a reader (`Filter.legend`)."""

    name: str  # the score's name, or a family's prefix ending in "_" ("recolor_")
    text: str  # what it measures and which way is better: the report's legend line
    threshold: str | None = None  # its key in the filter's `Thresholds`: the line on the report's histogram
    passes: Side = "above"  # which side of the threshold passes
    risk: Callable[[float], float] | None = None  # the chance in [0, 1] that a human rejects the sample


@dataclass(slots=True, frozen=True)
class TextClaim(SaysPath):
    """What a blind text scorer (target `"text"`) reads of the samples that say one text: the text and the
    path it says (JSON), not a whole record."""

    expression: str
    path: Json


Sample = PositiveRow | TextNegativeRow | ImageNegativeRow | TextClaim  # what an `Item` is about


@dataclass(slots=True)
class Item:
    """What a filter sees of one sample (or one candidate image of an image negative)."""

    id: int  # the sample's id (an image candidate: its negative's id)
    target: Target
    record: Sample  # the sample's record as stored (a text scorer's: the text and its path)
    text: str  # the positive expression (for a negative: its positive's)
    image: Image.Image | None = None  # the source image, RGB; None when the run has no images
    negative_text: str | None = None  # text negatives: the negative expression
    candidate: Image.Image | None = None  # image candidates: the edited image
    boxes: tuple[Box, ...] = ()  # image candidates: the boxes whose pixels changed (none for a flip)
    graph: SceneGraph | None = None  # the source image's scene graph
    extra: dict[str, Any] = field(default_factory=dict)


class Filter:
    """Base class; see the module docstring for the contract."""

    name: ClassVar[str]
    version: ClassVar[str]
    targets: ClassVar[frozenset[str]]
    needs_images: ClassVar[bool] = True  # False: scores text alone and runs without an images folder
    rank: ClassVar[str | None] = None
    Options: ClassVar[type[Settings]] = NoOptions
    Thresholds: ClassVar[type[Settings]] = NoThresholds
    legend: ClassVar[tuple[ScoreLine, ...]] = ()

    def __init__(self, options: Settings | None = None, batch_size: int = 16) -> None:
        self.options = options if options is not None else self.Options()
        self.batch_size = batch_size

    def requirements(self, role: str) -> list[Requirement]:
        """What the filter needs beyond hardneg's own install, checked before a run starts
        (`backends/requirements.py`; `role` is where the config turns it on): the packages and weights of its
        model. None for a classical filter."""
        return []

    @property
    def identity(self) -> str:
        """What produced the scores, for the manifest: the version plus the options that matter."""
        opts = self.options.model_dump(exclude_defaults=True)
        return self.version + (f" {opts}" if opts else "")

    def score(self, items: Sequence[Item]) -> list[Scores]:
        raise NotImplementedError

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        return True, None

    @classmethod
    def scores_samples(cls) -> bool:
        """Whether it decides samples (a positive, a negative, an image candidate), not text alone."""
        return bool(cls.targets - {"text"})

    def configured(self, make: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`make(*args, **kwargs)`: the scorer this filter's options build. `Options` checks their types and
        the scorer its own ranges (it is used without a config too), so what it refuses is the config's to
        fix. Scorers load their models later, on first use (`hardneg.backends.models.loading`)."""
        try:
            return make(*args, **kwargs)
        except ValueError as e:
            raise ConfigError(f"{self.name} options: {e}") from None


def probability(v: float) -> float:
    """A score that is a probability of the sample being wrong is its own risk (clamped to [0, 1])."""
    return min(1.0, max(0.0, v))


def require_skimage() -> Any:
    try:
        import skimage.filters
        import skimage.metrics
    except ImportError as e:
        raise MissingDependency("this filter needs scikit-image: pip install 'scikit-image>=0.22'") from e
    return skimage


def check_same_size(a: Image.Image, b: Image.Image, what: str) -> None:
    if a.size != b.size:
        raise ValueError(f"{what}: original is {a.size[0]}x{a.size[1]} but candidate is {b.size[0]}x{b.size[1]}")
