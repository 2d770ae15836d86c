"""Which boxes to draw on a sample, in the colours FineCops-Ref's human filter shows its annotators.

The target is red; the related objects of the path are green, then blue, in path order (depth first,
relations before `same`, as `PathNode.nodes()` numbers them). Boxes come from the scene graph through
the ids on the positive's path; an image negative made by a flip gets them mirrored. A region an image
edit repainted is drawn in orange.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hardneg.review.rundata import ImageGraph

TARGET = "#ff2020"
RELATED = ("#20d020", "#2f6bff", "#00c8c8", "#c040ff")  # green, blue, then more for longer paths
EDIT = "#ff9900"


@dataclass(frozen=True, slots=True)
class Box:
    x: float
    y: float
    w: float
    h: float
    color: str
    role: str  # "target", "related" or "edit"
    label: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def path_nodes(path: Any) -> list[tuple[str | None, str]]:
    """(object id or None, name) for each node of a path dict, depth first, relations before `same`."""
    if not isinstance(path, dict):
        return []
    node_id = path.get("id")
    out: list[tuple[str | None, str]] = [(node_id if isinstance(node_id, str) else None, str(path.get("name", "")))]
    for key in ("relations", "same"):
        for edge in path.get(key) or []:
            if isinstance(edge, dict):
                out.extend(path_nodes(edge.get("object")))
    return out


def has_flip(edit: Any) -> bool:
    if not isinstance(edit, dict):
        return False
    if edit.get("op") == "flip":
        return True
    return edit.get("op") == "sequence" and sum(has_flip(e) for e in edit.get("edits") or []) % 2 == 1


def _xywh(v: Any) -> tuple[float, float, float, float] | None:
    if isinstance(v, list | tuple) and len(v) == 4 and all(isinstance(n, int | float) for n in v):
        return float(v[0]), float(v[1]), float(v[2]), float(v[3])
    return None


def path_boxes(record: dict[str, Any], graph: ImageGraph | None, *, flipped: bool = False) -> list[Box]:
    """The target (red) and related objects (green, blue) of a record whose `path` carries ids.

    Without the graph only the target is drawn, from the record's `bbox` (already in the record's image).
    """
    nodes = path_nodes(record.get("path"))
    boxes: list[Box] = []
    related = 0
    for i, (oid, name) in enumerate(nodes):
        obj = graph.objects.get(oid) if graph is not None and oid is not None else None
        if obj is not None:
            x = graph.width - obj.x - obj.w if flipped and graph is not None else obj.x
            xywh: tuple[float, float, float, float] | None = (x, obj.y, obj.w, obj.h)
        elif i == 0:
            xywh = _xywh(record.get("bbox"))
        else:
            xywh = None
        if i > 0:
            related += 1
        if xywh is None:
            continue
        color = TARGET if i == 0 else RELATED[min(related, len(RELATED)) - 1]
        boxes.append(Box(*xywh, color=color, role="target" if i == 0 else "related", label=name))
    return boxes


def edit_boxes(record: dict[str, Any]) -> list[Box]:
    return [
        Box(*b, color=EDIT, role="edit", label="edited")
        for b in (_xywh(v) for v in record.get("edit_boxes") or [])
        if b is not None
    ]


def box_source(record: dict[str, Any], positive: dict[str, Any] | None) -> tuple[str | None, dict[str, Any]]:
    """(GQA image id, record whose path has ids) for drawing a sample's path boxes.

    A text negative's path is the altered one, without ids: its positive's path is drawn instead.
    """
    if "positive_id" in record and record.get("negative_cate") != "image" and positive is not None:
        return _str(positive.get("image_id")), positive
    return _str(record.get("source_image_id", record.get("image_id"))), record


def _str(v: Any) -> str | None:
    return str(v) if isinstance(v, str | int) and not isinstance(v, bool) else None


def wanted_objects(pairs: list[tuple[str | None, dict[str, Any]]]) -> dict[str, set[str] | None]:
    """image id -> object ids named on the paths, for `RunData.graphs`."""
    out: dict[str, set[str] | None] = {}
    for image_id, rec in pairs:
        if image_id is None:
            continue
        ids = out.setdefault(image_id, set())
        ids.update(oid for oid, _ in path_nodes(rec.get("path")) if oid is not None)  # type: ignore[union-attr]
    return out
