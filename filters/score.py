"""The filters stage: every configured filter scores what it targets; nothing is decided here.

Per shard, the stored rows are (scores keyed by each filter's versioned name, so a score is never read
as another version's):

    {"id": N, "target": "positive" | "text_negative", "scores": {"clip@v1": {"clip_margin": 0.12}}}
    {"id": N, "target": "image_negative", "candidates": [{"ssim@v1": {"similarity": 0.93}, ...}, ...]}

Work is grouped by source image and scored in chunks of images, so a shard never holds more than a
chunk's decoded images, and each source image is decoded once for all its samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from PIL import Image

from hardneg.core.config import RunConfig
from hardneg.core.errors import ConfigError
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.records import SceneGraph
from hardneg.core.rows import (
    FILTER_SCORES,
    HYGIENE_GRAPHS,
    IMAGE_NEGATIVES,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    FilterScoreRow,
    ImageNegativeRow,
    Json,
    PositiveRow,
    TextNegativeRow,
)
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.filters.base import Filter, Item, Sample, Target
from hardneg.filters.registry import build, filter_class

SCORE_TARGETS = ("positive", "text_negative", "image_candidate")


def configured_filters(cfg: RunConfig) -> list[Filter]:
    """The sample filters `filters.scorers` asks for, built (options checked), in config order."""
    out = []
    for name, options in cfg.filters.scorers.items():
        f = build(name, options, cfg.filters.batch_size)
        if not f.targets & set(SCORE_TARGETS):
            raise ConfigError(f"filters.scorers.{name}: scores {sorted(f.targets)}, not samples; use refine.scorers")
        out.append(f)
    return out


def open_rgb(path: Any) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGB")


class FiltersStage(Stage):
    name = "filters"
    version = "filters@v1"
    reads = ("hygiene", "language", "images")
    writes = outputs(FILTER_SCORES)
    config = ("filters.scorers", "filters.batch_size")
    gpu = True

    def validate(self, cfg: RunConfig) -> None:
        configured_filters(cfg)

    def extra_fingerprint(self, run: Run) -> Any:
        """Each filter's version: scores are stored under it, and a new version must score again (decide
        would find no scores under the new one and keep everything)."""
        return {name: filter_class(name).version for name in run.cfg.filters.scorers}

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        filters = configured_filters(cfg)
        images = unit.images
        positives = {r.id: r for r in unit.records(LANGUAGE_POSITIVES)}
        text_negs = list(unit.records(LANGUAGE_NEGATIVES))
        image_negs = list(unit.records(IMAGE_NEGATIVES))
        unit.items_in = len(positives) + len(text_negs) + len(image_negs)
        wants = {t for f in filters for t in f.targets}
        runnable = [f for f in filters if images is not None or not f.needs_images]
        for f in filters:
            if f not in runnable:
                unit.stats[f"not_run:{f.name}:no images"] += 1
        graphs: dict[str, SceneGraph] = {}
        if wants & {"positive", "text_negative"}:
            graphs = {r.image_id: r.scene_graph() for r in unit.records(HYGIENE_GRAPHS)}

        by_image: dict[str, list[tuple[Target, Sample]]] = defaultdict(list)
        if "positive" in wants:
            for p in positives.values():
                by_image[p.image_id].append(("positive", p))
        if "text_negative" in wants:
            for t in text_negs:
                by_image[t.image_id].append(("text_negative", t))
        if "image_candidate" in wants:
            for i in image_negs:
                by_image[i.source_image_id].append(("image_candidate", i))

        rows: dict[int, FilterScoreRow] = {}
        for chunk in _chunks(sorted(by_image), max(4, cfg.filters.batch_size)):
            items: list[Item] = []
            for image_id in chunk:
                source = open_rgb(image_file(images, image_id)) if images is not None else None
                for target, r in by_image[image_id]:
                    if isinstance(r, PositiveRow):
                        rows[r.id] = FilterScoreRow(id=r.id, target="positive")
                        items.append(Item(r.id, target, r, r.expression, source, graph=graphs.get(image_id)))
                    elif isinstance(r, TextNegativeRow):
                        rows[r.id] = FilterScoreRow(id=r.id, target="text_negative")
                        text = positives[r.positive_id].expression
                        items.append(Item(r.id, target, r, text, source, negative_text=r.expression,
                                          graph=graphs.get(image_id)))  # fmt: skip
                    elif isinstance(r, ImageNegativeRow):
                        cands: list[dict[str, Json]] = [{} for _ in r.candidates]
                        rows[r.id] = FilterScoreRow(id=r.id, target="image_negative", candidates=cands)
                        text = positives[r.positive_id].expression
                        boxes = tuple(tuple(b) for b in r.edit_boxes)
                        for k, f in enumerate(r.candidates):
                            candidate = open_rgb(unit.root / f)
                            items.append(Item(r.id, target, r, text, source, candidate=candidate, boxes=boxes,
                                              extra={"candidate": k}))  # fmt: skip
            for f in runnable:
                mine = [it for it in items if it.target in f.targets]
                if not mine:
                    continue
                for it, scores in zip(mine, f.score(mine), strict=True):
                    if not scores:
                        continue
                    row = rows[it.id]
                    where = row.candidates[it.extra["candidate"]] if it.target == "image_candidate" else row.scores
                    where[f.version] = scores
                    unit.stats[f"scored:{f.name}:{it.target}"] += 1
        unit.meta["filters"] = {f.name: f.identity for f in runnable}
        unit.write("scores", [rows[k] for k in sorted(rows)])

    def summarize(self, run: Any, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Which filters ran (a filter that needs images runs nowhere without them) and what each was."""
        ran: dict[str, str] = {}
        for u in units:
            ran.update(u["meta"].get("filters", {}))
        return {"filters_ran": sorted(ran), "identities": dict(sorted(ran.items()))}


def _chunks(keys: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(keys), size):
        yield keys[i : i + size]
