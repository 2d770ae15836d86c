"""ImageCoDe: retrieval accuracy of the target image among the (10) minimally different images of a set.

Implements the evaluation of "Image Retrieval from Contextual Descriptions" (the ImageCoDe paper, Krojer et
al., ImageCoDe): the model scores every image of a set against the description
and is right when the target scores highest. As the paper reports it, accuracy is given for all sets and
separately for video-frame and static-picture sets when the sets say which they are.

Inputs: `ImageSet(id, scores, target, is_video=None)`: one score per image of the set (any real scale; higher
means a better match), the index of the target in `scores`, and whether the set is made of video frames. Dict
form: the same keys. ImageCoDe sets have 10 images (chance 10%); hardneg's sets (the original and its edits) may
have fewer when edits were filtered out, so any size >= 2 is accepted and the result reports the chance level.

Ties: when the target shares the top score with k - 1 other images, it earns 1/k, the expected accuracy of a
random pick among them, so a constant scorer sits exactly at chance.

ImageCoDe's own layout (what its official scripts read, and what hardneg's export writes): a folder of image
sets, `image-sets/<set>/img<k>.jpg`, and per split a JSON object `{set: {"k": description}}` (`train_data.json`,
`valid_data.json`, `test_data.json`; `test_data_unlabeled.json` holds `{set: [description, ...]}`). The
scripts glob a set's `*.jpg`, sort by the number after `img`, and take `k` as a position in that order; a set
is static pictures when its name holds `open-images`, else video frames. `read_official` reads that layout
into the rows `imagecode_accuracy` takes (add a model's `scores`); `prediction_accuracy` scores predictions in
the leaderboard's form, `{set: [k, ...]}`, one index per description in the file's order.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardneg.evaluation.numbers import finite_numbers

OFFICIAL_FILES = {"train": "train_data.json", "val": "valid_data.json", "test": "test_data.json"}
UNLABELED_FILE = "test_data_unlabeled.json"  # the test split without targets, as ImageCoDe hands it out
IMAGE_SETS = "image-sets"
STATIC_MARK = "open-images"  # the official scripts' only sign of a static picture set (else: video frames)


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
    values = finite_numbers(scores, f"set {sid!r}: each score")
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


def image_files(set_dir: Path) -> list[Path]:
    """A set's images in the official order: every `img<k>.jpg`, sorted by `k` (the scripts' own sort), so
    that a description's key is a position in this list."""
    return sorted(set_dir.glob("*.jpg"), key=lambda f: int(f.stem[3:]))


def read_official(folder: Path, split: str) -> list[dict[str, Any]]:
    """One row per description of `<folder>/<split's file>` in ImageCoDe's layout: `id` "<set>/<k>", `set`,
    `images` (paths, official order), `target` (k), `description`, `is_video` (by the name, as the scripts
    decide it). A row plus a model's `scores` reads into `imagecode_accuracy`."""
    data = json.loads((folder / OFFICIAL_FILES[split]).read_text(encoding="utf-8"))
    rows = []
    for name, texts in data.items():
        images = [str(f) for f in image_files(folder / IMAGE_SETS / name)]
        for k, text in texts.items():
            rows.append({"id": f"{name}/{k}", "set": name, "images": images, "target": int(k),
                         "description": text, "is_video": STATIC_MARK not in name})  # fmt: skip
    return rows


def prediction_accuracy(predictions: Mapping[str, Sequence[int]], rows: Sequence[Mapping[str, Any]]) -> dict:
    """Accuracy of leaderboard-form predictions, `{set: [k, ...]}` (one image index per description of the
    set, in the order `read_official` gives them), against `rows`; a prediction is right when it is the
    target, as in the official scripts. Same result form as `imagecode_accuracy`."""
    by_set: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_set.setdefault(r["set"], []).append(r)
    if missing := sorted(by_set.keys() - predictions.keys()):
        raise ValueError(f"no prediction for {len(missing)} set(s), e.g. {missing[0]!r}")
    scored = []
    for name, group in by_set.items():
        picks = predictions[name]
        if len(picks) != len(group):
            raise ValueError(f"set {name!r}: {len(group)} description(s), {len(picks)} prediction(s)")
        for r, k in zip(group, picks, strict=True):
            n = len(r["images"])
            if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < n:
                raise ValueError(f"set {name!r}: a prediction must be an index in 0..{n - 1}, got {k!r}")
            scored.append({**r, "scores": [float(i == k) for i in range(n)]})
    return imagecode_accuracy(scored)
