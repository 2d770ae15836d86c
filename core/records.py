"""Typed records shared by every stage.

Scene graphs mirror GQA's `*_sceneGraphs.json`; paths mirror the path form every sample carries and
serialise to exactly that JSON.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson


class Relation(NamedTuple):
    """An edge stored on its subject: `subject name object`. A named tuple, not a frozen dataclass: the
    exports read over a million graphs of dozens of edges a GQA run, and with tuples a read takes a quarter
    less time."""

    name: str
    object: str


@dataclass(slots=True)
class SceneObject:
    id: str
    name: str
    x: int
    y: int
    w: int
    h: int
    attributes: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()

    @property
    def box(self) -> tuple[int, int, int, int]:
        """xywh in pixels of the image."""
        return (self.x, self.y, self.w, self.h)

    @property
    def area(self) -> int:
        return self.w * self.h

    def to_gqa(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "x": self.x,
            "y": self.y,
            "w": self.w,
            "h": self.h,
            "attributes": list(self.attributes),
            "relations": [{"name": r.name, "object": r.object} for r in self.relations],
        }


@dataclass(slots=True)
class SceneGraph:
    image_id: str
    width: int
    height: int
    objects: dict[str, SceneObject]
    location: str | None = None
    weather: str | None = None

    @classmethod
    def from_gqa(cls, image_id: str, raw: dict[str, Any]) -> SceneGraph:
        """The graph `to_gqa` wrote, as it is: no check, no repair (`core/gqa/loader.validate_graph` is what
        reads a graph from outside the run)."""
        objects = {
            oid: SceneObject(
                oid, o["name"], o["x"], o["y"], o["w"], o["h"], tuple(o.get("attributes", ())),
                tuple([Relation(r["name"], r["object"]) for r in o.get("relations", ())]),
            )
            for oid, o in raw["objects"].items()
        }  # fmt: skip
        return cls(image_id, raw["width"], raw["height"], objects, raw.get("location"), raw.get("weather"))

    def to_gqa(self) -> dict[str, Any]:
        """The value GQA stores under this image's id."""
        out: dict[str, Any] = {"width": self.width, "height": self.height}
        if self.location is not None:
            out["location"] = self.location
        if self.weather is not None:
            out["weather"] = self.weather
        out["objects"] = {oid: obj.to_gqa() for oid, obj in self.objects.items()}
        return out


@dataclass(slots=True, frozen=True)
class TextChange:
    """What a text negative altered in its positive's path: the nodes (`PathNode.nodes()` indices), the word
    replaced or the first swapped attribute (`word`), its replacement, the second swapped attribute (`other`),
    the relation's index on its node (`edge`). A record stores it as `to_json()` (`change`)."""

    nodes: tuple[int, ...]
    word: str | None = None
    replacement: str | None = None
    other: str | None = None
    edge: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": list(self.nodes)}
        for key, value in (("from", self.word), ("to", self.replacement), ("with", self.other), ("edge", self.edge)):
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TextChange:
        return cls(tuple(data["nodes"]), data.get("from"), data.get("to"), data.get("with"), data.get("edge"))


@dataclass(slots=True, frozen=True)
class RiskReason:
    """One thing a positive's graph (or its photo) cannot rule out: the rule's `kind`, `why` in words, and
    its `weight` in the positive's risk. A record stores them as `to_json()` (`risk_reasons`)."""

    kind: str
    why: str
    weight: float

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "why": self.why, "weight": self.weight}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RiskReason:
        return cls(data["kind"], data["why"], data["weight"])


@dataclass(slots=True, frozen=True)
class PathEdge:
    """A relation child of a path node: the node's object `name` the child's object."""

    name: str
    object: PathNode


@dataclass(slots=True, frozen=True)
class SameEdge:
    """A `same` child: the node shares an attribute of `category` with the child's object."""

    category: str
    object: PathNode


@dataclass(slots=True, frozen=True)
class PathNode:
    """One node of a referring path. `id` names the grounded object, if any."""

    name: str
    attributes: tuple[str, ...] = ()
    relations: tuple[PathEdge, ...] = ()
    same: tuple[SameEdge, ...] = ()
    id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "attributes": list(self.attributes)}
        if self.id is not None:
            out["id"] = self.id
        out["relations"] = [{"name": e.name, "object": e.object.to_json()} for e in self.relations]
        out["same"] = [{"category": s.category, "object": s.object.to_json()} for s in self.same]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathNode:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise ValueError(f"path node needs a string 'name': {data!r}")
        attrs = data.get("attributes", [])
        if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
            raise ValueError(f"path node 'attributes' must be a list of strings: {attrs!r}")
        node_id = data.get("id")
        if node_id is not None and not isinstance(node_id, str):
            raise ValueError(f"path node 'id' must be a string: {node_id!r}")
        return cls(
            name=data["name"],
            attributes=tuple(attrs),
            relations=tuple(
                PathEdge(name=r["name"], object=cls.from_json(r["object"])) for r in data.get("relations", [])
            ),
            same=tuple(
                SameEdge(category=s["category"], object=cls.from_json(s["object"])) for s in data.get("same", [])
            ),
            id=node_id,
        )

    def nodes(self) -> list[PathNode]:
        """All nodes, depth first, this one first."""
        out = [self]
        for e in self.relations:
            out.extend(e.object.nodes())
        for s in self.same:
            out.extend(s.object.nodes())
        return out

    def without_ids(self) -> PathNode:
        """The path with no node grounded; itself when none is (a path is frozen: nothing to copy)."""
        if self.id is None and not self.relations and not self.same:
            return self
        objects = [e.object.without_ids() for e in self.relations]
        sames = [s.object.without_ids() for s in self.same]
        if (
            self.id is None
            and all(a is e.object for a, e in zip(objects, self.relations, strict=True))
            and all(b is s.object for b, s in zip(sames, self.same, strict=True))
        ):
            return self
        return PathNode(
            name=self.name,
            attributes=self.attributes,
            relations=tuple(PathEdge(e.name, o) for e, o in zip(self.relations, objects, strict=True)),
            same=tuple(SameEdge(s.category, o) for s, o in zip(self.same, sames, strict=True)),
        )

    def meaning(self) -> tuple:
        """What the path says, order aside: two paths with equal meanings state the same facts ("left of a
        white banana and left of a yellow banana" is "left of a yellow banana and left of a white banana")."""
        return (
            self.name,
            tuple(sorted(self.attributes)),
            tuple(sorted((e.name, e.object.meaning()) for e in self.relations)),
            tuple(sorted((s.category, s.object.meaning()) for s in self.same)),
        )

    def canonical(self) -> bytes:
        """Deterministic bytes of the path (sorted keys), for ids and dedup."""
        return orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)


@dataclass(slots=True)
class Reject:
    """A dropped candidate and why: a reject is data (a row of `rejects.jsonl`), not a log line."""

    stage: str
    reason: str
    image_id: str | None = None
    sample_id: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "reason": self.reason}
        if self.image_id is not None:
            out["image_id"] = self.image_id
        if self.sample_id is not None:
            out["sample_id"] = self.sample_id
        if self.detail:
            out["detail"] = self.detail
        return out


def keyed_seed(*parts: object) -> int:
    """A cheap deterministic seed from parts, for `random.Random` (a str seed costs it a SHA-512):
    every random choice is keyed by what it is about, so sharding and order never change output."""
    return zlib.crc32(":".join(map(str, parts)).encode())


def content_id(*parts: str | bytes) -> int:
    """A stable id from content: the first 52 bits of a SHA-1 (exact in JSON and float64)."""
    h = hashlib.sha1()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8"))
        h.update(b"\x00")
    return int(h.hexdigest()[:13], 16)


def triples(path: PathNode) -> list[list[str]]:
    """The scene-graph facts a path uses, as [subject, predicate, object], depth first (FineCops `tuple`)."""
    out: list[list[str]] = []
    _triples(path, out)
    return out


def _triples(node: PathNode, out: list[list[str]]) -> None:
    for a in node.attributes:
        out.append([node.name, "has attribute", a])
    for e in node.relations:
        out.append([node.name, e.name, e.object.name])
        _triples(e.object, out)
    for s in node.same:
        out.append([node.name, f"same {s.category} as", s.object.name])
        _triples(s.object, out)
