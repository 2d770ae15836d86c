"""The review app's view of a run: every sample as an item with its queue position and boxes."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.plugins import IMAGE_NEGATIVES, TEXT_NEGATIVES
from hardneg.filters.human.labels import kind_of, labels_for
from hardneg.review.boxes import Box, box_source, edit_boxes, has_flip, path_boxes, wanted_objects
from hardneg.review.priority import in_default_queue, priority_key, risk
from hardneg.review.rundata import ImageGraph, RunData

log = logging.getLogger(__name__)

BLIND_KEYS = ("scores", "risk", "risk_reasons", "reason")  # what an audit's item view leaves out


def negative_types() -> dict[str, dict[str, dict[str, str]]]:
    """The label and description of every registered kind of negative, by item kind and name: the review
    app shows these beside the bare names (`generators/text/types.py`, `generators/images/types.py`)."""
    registries = (("text_negative", TEXT_NEGATIVES), ("image_negative", IMAGE_NEGATIVES))
    return {
        kind: {name: {"label": cls.label, "description": cls.description} for name, cls in registry.items()}
        for kind, registry in registries
    }


@dataclass(frozen=True, slots=True)
class Item:
    """What the queue filters on, plus the record itself."""

    id: int
    kind: str
    split: str
    tuple_type: str
    negative_type: str
    level: int
    default: bool  # in the default queue (what the paper sent to humans)
    record: dict[str, Any]


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


class ReviewData:
    """Items in review order, with the graphs their boxes need (read once, at start)."""

    def __init__(self, run: RunData, audit: Sequence[int] | None = None):
        """`audit`: serve only these ids, in this order (the audit's random order, never the scores'), all
        in the default queue, and blind: item views carry no score, risk or reason."""
        t0 = time.perf_counter()
        self.run = run
        self.blind = audit is not None
        if audit is None:
            records = sorted((*run.positives, *run.negatives), key=priority_key)
        else:
            rank = {i: k for k, i in enumerate(audit)}
            records = sorted((r for r in (*run.positives, *run.negatives) if r.get("id") in rank),
                             key=lambda r: rank[r["id"]])  # fmt: skip
        self.items: list[Item] = [
            Item(
                id=r["id"],
                kind=kind_of(r),
                split=str(r.get("split", "")),
                tuple_type=str(r.get("tuple_type", r.get("ori_type", ""))),
                negative_type=str(r.get("negative_type", "")),
                level=_int(r.get("level")),
                default=self.blind or in_default_queue(r),
                record=r,
            )
            for r in records
        ]
        self.by_id = {it.id: it for it in self.items}
        self._positives = {r["id"]: r for r in run.positives}
        sources = [box_source(it.record, self._positive(it)) for it in self.items]
        self.graphs: dict[str, ImageGraph] = run.graphs(wanted_objects(sources))
        log.info("review: %d items, %d graphs, in %.1fs", len(self.items), len(self.graphs), time.perf_counter() - t0)

    def _positive(self, it: Item) -> dict[str, Any] | None:
        pid = it.record.get("positive_id")
        return self._positives.get(pid) if it.kind != "positive" and isinstance(pid, int) else None

    @cached_property
    def _facets(self) -> dict[str, list[Any]]:
        return {
            "kind": sorted({it.kind for it in self.items}),
            "type": sorted({it.tuple_type for it in self.items if it.tuple_type}),
            "negative_type": sorted({it.negative_type for it in self.items if it.negative_type}),
            "level": sorted({it.level for it in self.items}),
            "split": [s for s in self.run.splits if any(it.split == s for it in self.items)],
        }

    def facets(self) -> dict[str, list[Any]]:
        """The values each filter can take (kinds, path types, negative types, levels, splits)."""
        return self._facets

    def image_file(self, it: Item) -> Path | None:
        """The picture the annotator judges: the edited image for an image negative, else the source."""
        if it.kind == "image_negative":
            return self.run.run_file(it.record.get("file_name"))
        return self.source_file(it)

    def source_file(self, it: Item) -> Path | None:
        image_id, _ = box_source(it.record, self._positive(it))
        return self.run.source_image(image_id) if image_id is not None else None

    def boxes(self, it: Item) -> list[Box]:
        image_id, rec = box_source(it.record, self._positive(it))
        graph = self.graphs.get(image_id) if image_id is not None else None
        flipped = it.kind == "image_negative" and has_flip(it.record.get("edit"))
        return path_boxes(rec, graph, flipped=flipped)

    def source_boxes(self, it: Item) -> list[Box]:
        image_id, rec = box_source(it.record, self._positive(it))
        return path_boxes(rec, self.graphs.get(image_id) if image_id is not None else None)

    def view(self, it: Item, mine: str | None) -> dict[str, Any]:
        """The JSON the app shows for one item (other annotators' labels are left out: no anchoring)."""
        r = it.record
        positive = self._positive(it)
        labels = labels_for(it.kind)
        out: dict[str, Any] = {
            "id": str(it.id),  # as text: JavaScript numbers are exact only to 2**53
            "kind": it.kind,
            "split": it.split,
            "tuple_type": it.tuple_type,
            "level": it.level,
            "negative_type": it.negative_type or None,
            "negative_level": r.get("negative_level"),
            "expression": str(r.get("expression", "")),
            "image": f"api/items/{it.id}/image",
            "source": f"api/items/{it.id}/source" if it.kind == "image_negative" else None,
            "boxes": [b.to_json() for b in self.boxes(it)],
            "source_boxes": [b.to_json() for b in self.source_boxes(it)] if it.kind == "image_negative" else [],
            "edit_boxes": [b.to_json() for b in edit_boxes(r)],
            "edit": r.get("edit"),
            "change": r.get("change"),
            "rewrites": r.get("rewrites") if isinstance(r.get("rewrites"), list) else [],
            "positive": None
            if positive is None
            else {"id": str(positive["id"]), "expression": positive.get("expression")},
            "scores": r.get("scores") if isinstance(r.get("scores"), dict) else {},
            "risk": risk(r),
            "labels": [{"label": k, "text": t, "key": key} for k, (t, key) in labels.items()],
            "mine": mine,
        }
        # what the page shows, as a short digest: a label names the view it was given on, so the server
        # can check that it lands on the item that was on screen
        shown = orjson.dumps([out["id"], out["expression"], out["image"], out["source"]])
        out["view"] = hashlib.blake2b(shown, digest_size=8).hexdigest()
        if self.blind:  # the audit: a label that saw the scores would measure the scores, not the sample
            for key in BLIND_KEYS:
                out.pop(key, None)
        return out

    def select(
        self,
        *,
        scope: str = "default",
        kind: str | None = None,
        tuple_type: str | None = None,
        negative_type: str | None = None,
        level: int | None = None,
        split: str | None = None,
    ) -> list[Item]:
        return [
            it
            for it in self.items
            if (scope == "all" or it.default)
            and (kind is None or it.kind == kind)
            and (tuple_type is None or it.tuple_type == tuple_type)
            and (negative_type is None or it.negative_type == negative_type)
            and (level is None or it.level == level)
            and (split is None or it.split == split)
        ]
