"""Streaming loader for GQA scene graphs, with per-image validation.

GQA's `train_sceneGraphs.json` is ONE JSON object mapping 74,942 image ids to graphs, hundreds of MB.
We never hold it whole: the file is read in binary chunks, a numpy scanner finds the byte span of each
top-level `"image_id": {...}` member, and orjson parses one member at a time, so memory stays bounded
by the chunk size plus one image's graph whatever the file size.

Two kinds of defect, handled differently:
- File-level (top level not an object, invalid JSON, a truncated file, trailing garbage): once the
  syntax is broken no later boundary can be trusted (one unbalanced quote shifts every member after
  it), so `iter_raw_graphs` first yields every complete image before the defect and then raises an
  `InputError` naming the file and byte offset. The caller sees all good data and still fails loudly:
  a truncated download must not pass for a smaller dataset.
- Image-level (a malformed graph): `validate_graph` rejects the image with a reason, or repairs it
  where the repair is obvious and counts the repair; the run goes on, and the rejects are data.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.stream import (
    DEFAULT_CHUNK,
    DEFAULT_LIMITS,
    DEFAULT_MAX_MEMBER,
    GraphLimits,
    RawDefect,
    graph_files,
    iter_raw_graphs,
    over_limit,
)
from hardneg.core.ids import id_problem
from hardneg.core.records import Relation, SceneGraph, SceneObject

# The byte scanner lives in core/gqa/stream.py; this module stays the public home of its names.
__all__ = [
    "DEFAULT_CHUNK",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_MEMBER",
    "MAX_PIXEL",
    "MAX_TEXT",
    "GraphCheck",
    "GraphLimits",
    "RawDefect",
    "graph_files",
    "iter_raw_graphs",
    "load_graphs",
    "validate_graph",
]

log = logging.getLogger(__name__)

MAX_TEXT = 100  # characters in a name, attribute or relation; GQA's longest is ~30, longer is not a word
MAX_PIXEL = 100_000  # a size or coordinate past this is no pixel value: GQA's images are ~500 px a side
_UNLIMITED = GraphLimits(max_objects=1 << 62, max_relations=1 << 62, max_attributes=1 << 62)  # counts unchecked
_SPACE_RUN = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class GraphCheck:
    """The outcome of validating one image: a graph (maybe repaired) or a reject reason."""

    image_id: str
    graph: SceneGraph | None
    reason: str | None = None
    repairs: dict[str, int] = field(default_factory=dict)  # repair kind -> count

    @property
    def ok(self) -> bool:
        return self.graph is not None


class _Invalid(Exception):
    """Internal: the image is rejected with this message."""


def _kind(value: Any) -> str:
    """JSON type name of a parsed value, for reasons."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _as_int(value: Any, what: str) -> int:
    """Ints and integral floats (12.0) are accepted; bools, fractions and other types are not."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Invalid(f"{what} must be an integer, got {orjson.dumps(value).decode()[:40]}")


def _text(value: Any, what: str, repairs: Counter[str]) -> str:
    """Slow path for a word: type errors and control characters reject; whitespace is repaired."""
    if not isinstance(value, str):
        raise _Invalid(f"{what} must be a string, got {_kind(value)}")
    stripped = value.strip()
    if stripped != value:
        repairs["stripped_whitespace"] += 1
    if not stripped:
        raise _Invalid(f"{what} is empty")
    if not stripped.isprintable():  # a newline, tab or odd space inside is one space; anything else rejects
        bad = next((c for c in stripped if not c.isprintable() and not c.isspace()), None)
        if bad is not None:
            raise _Invalid(f"{what} contains the control character U+{ord(bad):04X}")
        stripped = _SPACE_RUN.sub(" ", stripped)
        repairs["collapsed_whitespace"] += 1
    if len(stripped) > MAX_TEXT:
        raise _Invalid(f"{what} is {len(stripped)} characters long (at most {MAX_TEXT})")
    return stripped


def _clean(s: Any) -> bool:
    """The fast path's test: a non-empty printable string of at most MAX_TEXT without outer spaces."""
    return type(s) is str and 0 < len(s) <= MAX_TEXT and s.isprintable() and s.strip() == s


def _attributes(raw: Any, oid: str, repairs: Counter[str]) -> tuple[str, ...]:
    if type(raw) is not list:
        raise _Invalid(f"object {oid}: 'attributes' must be a list of strings, got {_kind(raw)}")
    attrs = tuple(raw)
    for a in attrs:  # fast path: clean strings, no repeats
        if not _clean(a):
            break
    else:
        if len(set(attrs)) == len(attrs):
            return attrs
    if not all(isinstance(a, str) for a in attrs):
        raise _Invalid(f"object {oid}: 'attributes' must be a list of strings")
    out: dict[str, None] = {}
    for a in attrs:
        a = _text(a, f"object {oid}: attribute", repairs)
        if a in out:
            repairs["dropped_duplicate_attribute"] += 1
        out[a] = None
    return tuple(out)


def _relation_fields(r: Any, oid: str, i: int, repairs: Counter[str]) -> tuple[str, str]:
    """Slow path for one relation: type errors reject, fixable forms are repaired and counted."""
    if not isinstance(r, dict) or "name" not in r or "object" not in r:
        raise _Invalid(f"object {oid}: relation {i} must be {{name, object}}")
    name = _text(r["name"], f"object {oid}: relation {i} 'name'", repairs)
    target = r["object"]
    if type(target) is int:  # a malformed file may write the id as a number
        target = str(target)
        repairs["stringified_id"] += 1
    elif not isinstance(target, str):
        raise _Invalid(f"object {oid}: relation {i} 'object' must be an id string, got {_kind(target)}")
    return name, target


def _relation_count(raw_objects: dict[str, Any]) -> int:
    """Relations listed in the graph (the reason for a graph past `max_relations`)."""
    lists = (o.get("relations") for o in raw_objects.values() if type(o) is dict)
    return sum(len(r) for r in lists if type(r) is list)


def _not_a_pixel(oid: str, obj: dict[str, Any]) -> str:
    """The reason for a box whose coordinate or size lies past `MAX_PIXEL`: no image is that large, so the
    value is garbage, not a box outside the image."""
    key = next(k for k in "xywh" if abs(obj[k]) > MAX_PIXEL)
    return f"object {oid}: '{key}' is {orjson.dumps(obj[key]).decode()}, not a pixel value (beyond ±{MAX_PIXEL:,})"


def _build(image_id: str, raw: Any, repairs: Counter[str], limits: GraphLimits) -> SceneGraph:
    if type(raw) is not dict:
        raise _Invalid(f"graph must be an object, got {_kind(raw)}")
    size: list[int] = []
    for key in ("width", "height"):
        if key not in raw:
            raise _Invalid(f"missing key '{key}'")
        value = raw[key]
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is not int or value <= 0:
            raise _Invalid(f"{key} must be a positive integer, got {orjson.dumps(raw[key]).decode()[:40]}")
        if value > MAX_PIXEL:
            raise _Invalid(f"{key} is {value:,} px, not an image size (at most {MAX_PIXEL:,})")
        size.append(value)
    width, height = size
    extras: list[str | None] = []
    for key in ("location", "weather"):
        value = raw.get(key)
        if value is not None and type(value) is not str:
            raise _Invalid(f"{key} must be a string, got {_kind(value)}")
        extras.append(value)
    if "objects" not in raw:
        raise _Invalid("missing key 'objects'")
    raw_objects = raw["objects"]
    if type(raw_objects) is not dict:
        raise _Invalid(f"objects must be an object of id -> object, got {_kind(raw_objects)}")
    if len(raw_objects) > limits.max_objects:
        raise _Invalid(over_limit(f"{len(raw_objects):,} objects", limits.max_objects, "max_objects"))
    relations = 0

    # Reject the whole image rather than drop a bad object: a dropped object could make a path look
    # unique (a path is kept only if it picks out exactly one object) when it is not.
    objects: dict[str, SceneObject] = {}
    for oid, obj in raw_objects.items():
        if type(obj) is not dict:
            raise _Invalid(f"object {oid}: must be an object, got {_kind(obj)}")
        try:
            name, x, y, w, h = obj["name"], obj["x"], obj["y"], obj["w"], obj["h"]
        except KeyError as e:
            raise _Invalid(f"object {oid}: missing key '{e.args[0]}'") from None
        if not _clean(name):
            name = _text(name, f"object {oid}: 'name'", repairs)
        if type(x) is not int or type(y) is not int or type(w) is not int or type(h) is not int:
            x, y, w, h = (_as_int(obj[k], f"object {oid}: '{k}'") for k in "xywh")
        if w <= 0 or h <= 0:
            raise _Invalid(f"object {oid}: non-positive size w={w} h={h}")
        x1, y1 = x + w, y + h
        if x < 0 or y < 0 or x1 > width or y1 > height:  # inside the image every value is below MAX_PIXEL
            if max(abs(x), abs(y), w, h) > MAX_PIXEL:
                raise _Invalid(_not_a_pixel(oid, obj))
            x, y, x1, y1 = max(x, 0), max(y, 0), min(x1, width), min(y1, height)
            if x1 <= x or y1 <= y:
                raise _Invalid(f"object {oid}: box lies entirely outside the image")
            repairs["clipped_box"] += 1
        raw_attrs = obj.get("attributes", [])
        if type(raw_attrs) is list and len(raw_attrs) > limits.max_attributes:
            found = f"object {oid}: {len(raw_attrs):,} attributes"
            raise _Invalid(over_limit(found, limits.max_attributes, "max_attributes"))
        attrs = _attributes(raw_attrs, oid, repairs)
        raw_rels = obj.get("relations", [])
        if type(raw_rels) is not list:
            hint = " (the GQA web page's dict form is not the file format)" if type(raw_rels) is dict else ""
            raise _Invalid(f"object {oid}: 'relations' must be a list of {{name, object}}, got {_kind(raw_rels)}{hint}")
        relations += len(raw_rels)
        if relations > limits.max_relations:
            found = f"{_relation_count(raw_objects):,} relations"
            raise _Invalid(over_limit(found, limits.max_relations, "max_relations"))
        kept: dict[tuple[str, str], Relation] = {}  # insertion-ordered: duplicates drop in place
        for i, r in enumerate(raw_rels):
            if type(r) is dict and len(r) == 2:
                rname, target = r.get("name"), r.get("object")
            else:
                rname = target = None
            if type(target) is not str or not _clean(rname):
                rname, target = _relation_fields(r, oid, i, repairs)
            key = (rname, target)
            if target == oid:
                repairs["dropped_self_relation"] += 1
            elif target not in raw_objects:
                repairs["dropped_dangling_relation"] += 1
            elif key in kept:
                repairs["dropped_duplicate_relation"] += 1
            else:
                kept[key] = Relation(rname, target)
        objects[oid] = SceneObject(oid, name, x, y, x1 - x, y1 - y, attrs, tuple(kept.values()))
    return SceneGraph(image_id, width, height, objects, extras[0], extras[1])


def validate_graph(image_id: str, raw: Any, limits: GraphLimits | None = None) -> GraphCheck:
    """Check one image's raw GQA value; reject it with a reason or return the (repaired) graph.

    Rejected: an image id that cannot name a file (`core.ids.id_problem`), a graph with a duplicate
    object id or key or a value orjson refuses (`RawDefect`), a value or field of the wrong type,
    missing width/height/objects or name/x/y/w/h, a non-positive image or box size, a box entirely
    outside the image, malformed attributes or relations, a name, attribute or relation name with a
    control character or longer than MAX_TEXT. Repaired and counted in `repairs`: boxes clipped to the
    image (`clipped_box`), relations to unknown ids (`dropped_dangling_relation`), self-relations
    (`dropped_self_relation`), exact duplicate relations (`dropped_duplicate_relation`) and attributes
    (`dropped_duplicate_attribute`), names/attributes/relations with surrounding whitespace
    (`stripped_whitespace`) or newlines, tabs and odd spaces inside (`collapsed_whitespace`: one space),
    integer relation targets (`stringified_id`). A missing `attributes` or `relations` key means none.
    A size or coordinate past `MAX_PIXEL` is rejected as no pixel value. `limits`: the count limits
    (`GraphLimits`: objects, relations, attributes of an object), which ingest applies; a graph re-read
    from a run's work files passed them there.
    """
    if (why := id_problem(image_id)) is not None:
        return GraphCheck(image_id, None, f"unusable image id: {why}", {})
    if isinstance(raw, RawDefect):
        return GraphCheck(image_id, None, raw.reason, {})
    repairs: Counter[str] = Counter()
    try:
        graph = _build(image_id, raw, repairs, limits or _UNLIMITED)
    except _Invalid as e:
        return GraphCheck(image_id, None, str(e), {})
    return GraphCheck(image_id, graph, None, dict(repairs))


def load_graphs(
    path: str | Path,
    chunk_size: int = DEFAULT_CHUNK,
    *,
    max_member_bytes: int = DEFAULT_MAX_MEMBER,
    limits: GraphLimits = DEFAULT_LIMITS,
) -> Iterator[GraphCheck]:
    """Stream `validate_graph` over `iter_raw_graphs(path)`; file-level errors raise as there. An image
    past one of `limits` is rejected with the limit named (`inputs.max_*`), and the stream goes on.

    A repeated image id (within or across files) is rejected: the first occurrence is kept, because
    ids key every sample and split assignment downstream. The set of ids seen is the only state that
    grows with the input (about 100 bytes an image, ~7 MB for GQA train).
    """
    seen: set[str] = set()
    n = rejected = 0
    repairs: Counter[str] = Counter()
    for image_id, raw in iter_raw_graphs(path, chunk_size, max_member_bytes=max_member_bytes, limits=limits):
        n += 1
        if image_id in seen:
            check = GraphCheck(image_id, None, "duplicate image id; the first occurrence was kept", {})
        else:
            seen.add(image_id)
            check = validate_graph(image_id, raw, limits)
        rejected += check.graph is None
        repairs.update(check.repairs)
        yield check
    log.info("%s: %d images, %d rejected, repairs %s", path, n, rejected, dict(repairs))
