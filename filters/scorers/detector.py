"""An open-vocabulary detector that finds what the scene graph missed, score first, decide later.

A graph's "the pole" is unique only among the *annotated* poles. OWL-ViT / OWLv2 (transformers'
`OwlViTForObjectDetection`, `Owlv2ForObjectDetection`; a hub id or a local directory) looks for the
target's name in the image:

- `detector_twin` (positives): the best detection of the target's name that no annotated object of that
  kind explains: an unannotated second pole, so the expression is ambiguous;
- `detector_target` (positives): the best detection the target's own box explains: low when the box does
  not look like its name (a label error: "the men" for one rider);
- `detector_replacement` (replace_object text negatives): the best detection of the replacement name
  anywhere: the "missing" object may be in plain view, so the negative may be true.

A detection is explained by a box when half of it lies inside the box or their IoU is at least 0.3 (real
detectors return object-sized boxes, a patch grid returns cells: both read right). Batched over images,
fp16 on a GPU, the model loaded once per worker; thresholds decide in `keep` (`hardneg split` can change
them).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hardneg.backends.models import MODELS_HINT, loading, resolve_device_dtype, shared, transformers_model
from hardneg.backends.requirements import Requirement
from hardneg.core.errors import MissingDependency
from hardneg.core.geometry import intersection, iou
from hardneg.core.plugins import FILTERS
from hardneg.core.records import SceneGraph, TextChange
from hardneg.core.rows import TextNegativeRow
from hardneg.filters.base import Box, Filter, Item, ScoreLine, Scores, Settings, probability

log = logging.getLogger(__name__)

EXPLAINED_INSIDE = 0.5  # share of a detection inside an annotated box that explains it
EXPLAINED_IOU = 0.3


class DetectorOptions(Settings):
    model: str  # hub id or local dir of an OWL-ViT or OWLv2 detector and its processor
    device: str | None = None
    dtype: str | None = None
    min_score: float = 0.01  # detections below this are not kept at all


class DetectorThresholds(Settings):
    max_twin: float = 0.3  # an unannotated detection of the target's name above this: ambiguous
    min_target: float = 0.0  # the target's box must be detected as its name at least this well (0: off)
    max_replacement: float = 0.3  # a replacement object detected above this may be there: negative dropped


def explained(det: Box, box: Box) -> bool:
    area = det[2] * det[3]
    return (area > 0 and intersection(det, box) / area >= EXPLAINED_INSIDE) or iou(det, box) >= EXPLAINED_IOU


def query(name: str) -> str:
    return f"a photo of {'an' if name[:1] in 'aeiou' else 'a'} {name}"


@FILTERS.add("detector", order=80)
class DetectorFilter(Filter):
    version = "detector@v1"
    targets = frozenset({"positive", "text_negative"})
    Options = DetectorOptions
    Thresholds = DetectorThresholds
    legend = (
        ScoreLine(
            "detector_twin",
            "detector's confidence that another object still matches the edited one; below passes",
            "max_twin",
            "below",
            probability,  # an unannotated twin of the target: the positive is ambiguous
        ),
    )

    @property
    def identity(self) -> str:
        return f"{self.version} {self.options.model}"  # type: ignore[attr-defined]

    def requirements(self, role: str) -> list[Requirement]:
        return [transformers_model(role, self.options.model)]  # type: ignore[attr-defined]

    def _load(self) -> tuple[Any, Any, Any]:
        o: DetectorOptions = self.options  # type: ignore[assignment]

        def build() -> tuple[Any, Any, Any]:
            with loading(o.model):
                try:
                    import torch
                    from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
                except ImportError as e:
                    raise MissingDependency(f"the detector filter needs torch and transformers: {MODELS_HINT}") from e
                device, dtype = resolve_device_dtype(torch, o.device, o.dtype)
                processor = AutoProcessor.from_pretrained(o.model)
                model = AutoModelForZeroShotObjectDetection.from_pretrained(o.model, dtype=dtype).to(device).eval()
                if model.config.model_type not in ("owlvit", "owlv2"):
                    raise ValueError(
                        f"{o.model}: an OWL-ViT or OWLv2 detector is needed, got {model.config.model_type}"
                    )
                log.info("detector: loaded %s on %s %s", o.model, device, dtype)
            return torch, processor, model

        return shared(("detector", o.model, o.device, o.dtype), build)

    def detect(self, images: Sequence[Any], queries: Sequence[Sequence[str]]) -> list[list[tuple[str, float, Box]]]:
        """Per image: (name, score, xywh box) for every detection of its names, in batches."""
        torch, processor, model = self._load()
        out: list[list[tuple[str, float, Box]]] = []
        for start in range(0, len(images), self.batch_size):
            ims = list(images[start : start + self.batch_size])
            names = [list(q) for q in queries[start : start + self.batch_size]]
            width = max(len(q) for q in names)
            texts = [[query(n) for n in q] + [" "] * (width - len(q)) for q in names]
            inputs = processor(text=texts, images=ims, return_tensors="pt").to(model.device)
            inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
            with torch.inference_mode():
                outputs = model(**inputs)
            square = model.config.model_type == "owlv2"  # OWLv2 pads to a square before resizing
            sizes = [(max(im.size),) * 2 if square else (im.size[1], im.size[0]) for im in ims]
            results = processor.post_process_grounded_object_detection(
                outputs=outputs,
                threshold=self.options.min_score,
                target_sizes=sizes,  # type: ignore[attr-defined]
            )
            for q, res in zip(names, results, strict=True):
                dets = []
                for label, score, box in zip(
                    res["labels"].tolist(), res["scores"].tolist(), res["boxes"].tolist(), strict=True
                ):
                    if label < len(q):
                        x0, y0, x1, y1 = box
                        dets.append((q[label], float(score), (x0, y0, x1 - x0, y1 - y0)))
                out.append(dets)
        return out

    def score(self, items: Sequence[Item]) -> list[Scores]:
        groups: dict[int, list[int]] = {}
        for k, it in enumerate(items):
            groups.setdefault(id(it.image), []).append(k)
        order = list(groups.values())
        wanted = [sorted({n for k in ks for n in self._names(items[k])}) for ks in order]
        detections = self.detect([items[ks[0]].image for ks in order], wanted)
        out: list[Scores] = [{} for _ in items]
        for ks, dets in zip(order, detections, strict=True):
            for k in ks:
                out[k] = self._item_scores(items[k], dets)
        return out

    @staticmethod
    def _names(it: Item) -> list[str]:
        r = it.record
        if it.target == "positive":
            return [r.node().name]
        if isinstance(r, TextNegativeRow) and r.negative_type == "replace_object":
            change = TextChange.from_json(r.change)
            return [change.replacement] if change.replacement is not None else []
        return []

    def _item_scores(self, it: Item, dets: list[tuple[str, float, Box]]) -> Scores:
        names = self._names(it)
        if not names:
            return {}
        mine = [(s, b) for n, s, b in dets if n == names[0]]
        if it.target == "text_negative":
            return {"detector_replacement": max((s for s, _ in mine), default=0.0)}
        graph: SceneGraph | None = it.graph
        target_id = it.record.node().id
        annotated = [o.box for o in graph.objects.values() if o.name == names[0]] if graph is not None else []
        target_box = graph.objects[target_id].box if graph is not None and target_id in graph.objects else None
        twin = max((s for s, b in mine if not any(explained(b, a) for a in annotated)), default=0.0)
        target = max((s for s, b in mine if target_box is not None and explained(b, target_box)), default=0.0)
        return {"detector_twin": twin, "detector_target": target}

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        t: DetectorThresholds = thresholds  # type: ignore[assignment]
        if (v := scores.get("detector_twin")) is not None and v > t.max_twin:
            return False, f"an unannotated object of the target's name is detected ({v:.3f} > {t.max_twin}): ambiguous"
        if (v := scores.get("detector_target")) is not None and v < t.min_target:
            return False, f"the target's box is not detected as its name ({v:.3f} < {t.min_target}): a label error?"
        if (v := scores.get("detector_replacement")) is not None and v > t.max_replacement:
            return False, f"the replacement object is detected in the image ({v:.3f} > {t.max_replacement})"
        return True, None
