"""ImageCoDe: retrieval accuracy of the target image among the (10) minimally different images of a set.

Implements the evaluation of "Image Retrieval from Contextual Descriptions" (the ImageCoDe paper, Krojer et
al., ImageCoDe): the model scores every image of a set against the description
and is right when the target scores highest. Like the paper's Table 5, accuracy is reported for all sets and
separately for video-frame and static-picture sets when the sets say which they are.

Inputs: `ImageSet(id, scores, target, is_video=None)`: one score per image of the set (any real scale; higher
means a better match), the index of the target in `scores`, and whether the set is made of video frames. Dict
form: the same keys. ImageCoDe sets have 10 images (chance 10%); hardneg's sets (the original and its edits) may
have fewer when edits were filtered out, so any size >= 2 is accepted and the result reports the chance level.

Ties: when the target shares the top score with k - 1 other images, it earns 1/k, the expected accuracy of a
random pick among them, so a constant scorer sits exactly at chance.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ImageSet:
    """A description's image set: one model score per image and the target's index."""

    id: Hashable
    scores: tuple[float, ...]
    target: int
    is_video: bool | None = None  # None: unknown, counted in "all" only


def _coerce(obj: ImageSet | Mapping[str, Any]) -> ImageSet:
    if isinstance(obj, ImageSet):
        sid, scores, target, is_video = obj.id, obj.scores, obj.target, obj.is_video
    elif isinstance(obj, Mapping) and {"id", "scores", "target"} <= obj.keys():
        sid, scores, target, is_video = obj["id"], obj["scores"], obj["target"], obj.get("is_video")
    else:
        raise ValueError(f"image set: id, scores, target expected, got {obj!r:.200}")
    if not isinstance(scores, Sequence) or len(scores) < 2:
        raise ValueError(f"set {sid!r}: scores must list at least 2 images, got {scores!r}")
    try:
        values = tuple(float(s) for s in scores)
    except (TypeError, ValueError):
        raise ValueError(f"set {sid!r}: scores must be numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"set {sid!r}: scores must be finite")
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(values):
        raise ValueError(f"set {sid!r}: target must be an index in 0..{len(values) - 1}, got {target!r}")
    if is_video is not None and not isinstance(is_video, bool):
        raise ValueError(f"set {sid!r}: is_video must be true, false or absent, got {is_video!r}")
    return ImageSet(sid, values, target, is_video)


def set_credit(scores: Sequence[float], target: int) -> float:
    """1 when the target alone scores highest, 1/k when it ties with k - 1 others at the top, else 0."""
    top = max(scores)
    if scores[target] != top:
        return 0.0
    return 1.0 / sum(1 for s in scores if s == top)


def imagecode_accuracy(sets: Iterable[ImageSet | Mapping[str, Any]]) -> dict[str, Any]:
    """Accuracy over `sets`: `{"all": cell, "video": cell, "static": cell}` with cell = `{"accuracy", "chance",
    "count"}` (None when empty); "video" and "static" appear only when some set carries `is_video`."""
    rows = [_coerce(s) for s in sets]

    def cell(group: list[ImageSet]) -> dict[str, Any]:
        n = len(group)
        return {
            "accuracy": sum(set_credit(s.scores, s.target) for s in group) / n if n else None,
            "chance": sum(1 / len(s.scores) for s in group) / n if n else None,
            "count": n,
        }

    out = {"all": cell(rows)}
    if any(s.is_video is not None for s in rows):
        out["video"] = cell([s for s in rows if s.is_video is True])
        out["static"] = cell([s for s in rows if s.is_video is False])
    return out
