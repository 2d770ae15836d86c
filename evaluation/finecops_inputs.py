"""FineCops-Ref's inputs: the samples of a hardneg COCO file and a model's predictions, validated.

`load_coco` and `load_predictions` read the two formats the metrics module's docstring defines
(`evaluation/finecops.py`, which re-exports every public name here) into `Sample` and `Prediction`
records, raising `ValueError` on anything malformed. Parsing is apart from the metrics so those read
as the paper's definitions over clean records.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hardneg.evaluation.boxes import check_box
from hardneg.evaluation.numbers import finite_numbers

NEGATIVE_KEYS = ("negative_type", "negative_level", "positive_id", "negative_cate")

SampleId = Hashable


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample of the COCO file: its target box and labels (negatives: what they negate)."""

    id: SampleId
    box: tuple[float, float, float, float]
    level: int
    tuple_type: str | None = None
    negative_type: str | None = None
    negative_level: int | None = None
    positive_id: SampleId | None = None
    negative_cate: str | None = None

    @property
    def is_negative(self) -> bool:
        return self.negative_type is not None


@dataclass(frozen=True, slots=True)
class Prediction:
    """A model's boxes (xywh) for one sample, with one confidence per box."""

    id: SampleId
    boxes: tuple[tuple[float, float, float, float], ...] = ()
    scores: tuple[float, ...] = ()

    @property
    def max_score(self) -> float:
        return max(self.scores) if self.scores else -math.inf  # no box: the lowest possible confidence


def _read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_coco(coco: str | Path | Mapping[str, Any]) -> dict[SampleId, Sample]:
    """The samples of a hardneg COCO file (a path or the loaded dict), keyed by sample id."""
    data = _read_json(coco) if isinstance(coco, str | Path) else coco
    for key in ("images", "annotations"):
        if not isinstance(data.get(key), list):
            raise ValueError(f"COCO file: '{key}' must be a list")
    if any(not isinstance(img, Mapping) or "id" not in img for img in data["images"]):
        raise ValueError("COCO file: every image entry needs an 'id'")
    if any(not isinstance(ann, Mapping) or "image_id" not in ann for ann in data["annotations"]):
        raise ValueError("COCO file: every annotation needs an 'image_id'")
    image_ids = [img["id"] for img in data["images"]]
    if len(set(image_ids)) != len(image_ids):
        raise ValueError("COCO file: duplicate image ids")
    anns: dict[SampleId, list[dict[str, Any]]] = defaultdict(list)
    for ann in data["annotations"]:
        anns[ann["image_id"]].append(ann)
    unknown = set(anns) - set(image_ids)
    if unknown:
        raise ValueError(f"COCO file: annotations for unknown image ids {sorted(map(str, unknown))[:5]}")
    samples: dict[SampleId, Sample] = {}
    for sid in image_ids:
        found = anns.get(sid, [])
        if len(found) != 1:
            raise ValueError(f"COCO file: image {sid!r} has {len(found)} annotations, expected exactly 1")
        ann = found[0]
        if "level" not in ann:
            raise ValueError(f"COCO file: annotation of image {sid!r} has no 'level'")
        negative = "negative_type" in ann
        if negative:
            missing = [k for k in NEGATIVE_KEYS if k not in ann]
            if missing:
                raise ValueError(f"COCO file: negative {sid!r} lacks {missing}")
        samples[sid] = Sample(
            id=sid,
            box=check_box(ann.get("bbox"), f"COCO annotation of image {sid!r}"),
            level=ann["level"],
            tuple_type=ann.get("tuple_type"),
            negative_type=ann["negative_type"] if negative else None,
            negative_level=ann["negative_level"] if negative else None,
            positive_id=ann["positive_id"] if negative else None,
            negative_cate=ann["negative_cate"] if negative else None,
        )
    for s in samples.values():
        if not s.is_negative:
            continue
        pos = samples.get(s.positive_id)
        if pos is None:
            raise ValueError(f"COCO file: negative {s.id!r} names positive_id {s.positive_id!r}, not in the file")
        if pos.is_negative:
            raise ValueError(f"COCO file: negative {s.id!r} names positive_id {s.positive_id!r}, itself a negative")
    return samples


def parse_prediction(entry: Mapping[str, Any]) -> Prediction:
    """One prediction object (see the module docstring), validated."""
    if not isinstance(entry, Mapping) or "id" not in entry:
        raise ValueError(f"prediction: an object with 'id', 'boxes' and 'scores' expected, got {entry!r:.200}")
    sid = entry["id"]
    boxes = entry.get("boxes", [])
    scores = entry.get("scores", [])
    if not isinstance(boxes, Sequence) or not isinstance(scores, Sequence):
        raise ValueError(f"prediction {sid!r}: 'boxes' and 'scores' must be lists")
    if len(boxes) != len(scores):
        raise ValueError(f"prediction {sid!r}: {len(boxes)} boxes but {len(scores)} scores")
    checked = tuple(check_box(b, f"prediction {sid!r}") for b in boxes)
    values = finite_numbers(scores, f"prediction {sid!r}: each score")
    return Prediction(sid, checked, values)


def load_predictions(source: str | Path | Iterable[Mapping[str, Any]]) -> dict[SampleId, Prediction]:
    """Predictions keyed by sample id, from a list of objects, a JSON array file or a JSON Lines file."""
    if isinstance(source, str | Path):
        text = Path(source).read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            entries = json.loads(text)
        else:
            entries = []
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        entries.append(json.loads(line))
                    except json.JSONDecodeError as e:
                        raise ValueError(f"{source}: line {n} is not JSON ({e.msg})") from None
    else:
        entries = list(source)
    out: dict[SampleId, Prediction] = {}
    for entry in entries:
        p = parse_prediction(entry)
        if p.id in out:
            raise ValueError(f"prediction {p.id!r} appears twice")
        out[p.id] = p
    return out
