"""Scene-graph hygiene before any path: a stage of its own, every change counted with a reason.

Scene graphs are annotated by people, fast. Two kinds of error make positives that a person cannot use
and are visible from the graph alone:

- **one object annotated twice**: two boxes of one kind of object (the same name, a synonym, a plural
  form: `Words.same_kind`) that overlap by `hygiene.merge_iou` or more are one physical object ("the pole
  left of the metal tower and left of a tower" for a single tower). They are merged into the first by id:
  attributes united, edges redirected, self-edges dropped;
- **spatial edges the boxes contradict**: a stored "A to the left of B" where the boxes put A right of B
  by the geometric rule (`core/geometry.py`) is dropped.

GQA's graphs carry a spatial layer: "to the left of" / "to the right of", both ways, between objects that
stand side by side. Graphs without it (Visual Genome's raw graphs, a corpus reduced to names and a few
relations, a maintainer's own) get it from their boxes by the bounds that select only pairs GQA relates
(`core.geometry.side_by_side`; `hygiene.spatial_from_boxes`): on GQA's own graphs it adds nothing.

And one kind of fact a benchmark does not state: a colour, skin, ethnicity or body word on a person ("the
white man": a race, or a white shirt?) is dropped from person nouns (`hygiene.drop_person_attributes`).

Relations written another way than GQA writes them (Visual Genome's raw "wears", "is on", "sits on") are
respelled in GQA's form ("wearing", "on", "sitting on": `Words.relation_form`), so templates read "the man
wearing the backpack", never "the man that is wears the backpack"; respellings are counted, not rejected.

Crowd and background names (trees, windows, grass) are not changed here; the path rules refuse them as
targets and anchors (`generators/paths/targets.py`), by the word tables (`core/words/table.py`).

Each shard's cleaned graphs are also counted here, as they are cleaned (`tallies`: the plausibility stage's
`Tally`), so the corpus statistics need no second read of every graph: the plausibility stage sums them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from hardneg.core.geometry import BAND, REACH, SIDE_OVERLAP, contradicted, direction, iou, side_by_side
from hardneg.core.gqa.ingest import graph_to_row
from hardneg.core.gqa.plausibility import TALLY, Tally
from hardneg.core.records import Reject, Relation, SceneGraph, SceneObject
from hardneg.core.rows import HYGIENE_GRAPHS, HYGIENE_TALLIES, INGEST_GRAPHS
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.table import Words, words_digest

# each kind of change hygiene makes, as stats.md names it after its count
CHANGES = {
    "merged_duplicate": "duplicate annotations merged",
    "dropped_contradicted_edge": "edges the boxes contradict dropped",
    "dropped_person_attribute": "person nouns cleared of a colour, skin or body word",
    "respelled_relation": "relations respelled as GQA writes them",
    "added_side_by_side": "pairs side by side given GQA's left/right edges (graphs without them for the pair)",
}


def _overlapping(graph: SceneGraph, ids: list[str], min_iou: float) -> np.ndarray:
    """Bool matrix over `ids`: the pairs whose IoU may reach `min_iou`, from every pair's IoU at once.

    Every pair of an image is compared (up to `inputs.max_objects` squared, a million), so the comparison
    is one vectorised pass; only the pairs near the threshold are then looked at one by one. The margin
    keeps every pair `iou` itself would accept."""
    x, y, w, h = np.array([graph.objects[i].box for i in ids], dtype=np.float64).reshape(-1, 4).T
    inter = np.clip(np.minimum.outer(x + w, x + w) - np.maximum.outer(x, x), 0, None)
    inter *= np.clip(np.minimum.outer(y + h, y + h) - np.maximum.outer(y, y), 0, None)
    area = w * h
    union = np.add.outer(area, area)
    union -= inter
    union *= min_iou - 1e-9
    return inter >= union


def duplicates(graph: SceneGraph, words: Words, min_iou: float) -> dict[str, tuple[str, float]]:
    """object id -> (the id it duplicates, their IoU), for every annotation of an object already annotated
    under a lower id. Chains resolve to the first: a duplicate of a duplicate points at the original."""
    ids = sorted(graph.objects, key=lambda i: (len(i), i))
    near = _overlapping(graph, ids, min_iou)
    into: dict[str, tuple[str, float]] = {}
    for k, a in enumerate(ids):
        if a in into:
            continue
        oa = graph.objects[a]
        for j in (np.flatnonzero(near[k, k + 1 :]) + k + 1).tolist():
            b = ids[j]
            if b in into:
                continue
            ob = graph.objects[b]
            if not (oa.name == ob.name or words.same_kind(oa.name, ob.name)):
                continue
            v = iou(oa.box, ob.box)
            if v >= min_iou:
                into[b] = (a, v)
    return into


@dataclass(frozen=True, slots=True)
class GraphChange:
    """One change cleaning made to a graph: its kind (`CHANGES`), why, the objects it is about."""

    kind: str
    reason: str
    objects: tuple[str, ...] = ()


def clean(
    graph: SceneGraph,
    words: Words,
    min_iou: float,
    drop_spatial: bool,
    drop_person_attributes: bool = True,
    spatial_from_boxes: bool = True,
) -> tuple[SceneGraph, list[GraphChange]]:
    """The cleaned graph and what changed."""
    changes: list[GraphChange] = []
    if drop_person_attributes:
        graph = _without_person_attributes(graph, words, changes)
    into = duplicates(graph, words, min_iou)
    for dup, (kept, v) in sorted(into.items()):
        a, b = graph.objects[kept], graph.objects[dup]
        why = f"'{b.name}' {dup} is the same object as '{a.name}' {kept} (IoU {v:.2f})"
        changes.append(GraphChange("merged_duplicate", why, (kept, dup)))

    def target(oid: str) -> str:
        return into[oid][0] if oid in into else oid

    merged: dict[str, SceneObject] = {}
    for oid, o in graph.objects.items():
        k = target(oid)
        base = merged.get(k) or replace(graph.objects[k], attributes=(), relations=())
        attrs = tuple(dict.fromkeys((*base.attributes, *o.attributes)))
        merged[k] = replace(base, attributes=attrs, relations=(*base.relations, *o.relations))
    objects: dict[str, SceneObject] = {}
    for oid in graph.objects:
        if oid not in merged:
            continue
        o = merged[oid]
        rels: list[Relation] = []
        seen: set[tuple[str, str]] = set()
        for r in o.relations:
            other = target(r.object)
            name = words.relation_form(r.name) or r.name
            if other == oid or (name, other) in seen or other not in graph.objects:
                continue
            if name != r.name:
                changes.append(GraphChange("respelled_relation", f"'{r.name}' -> '{name}'"))
            if drop_spatial and contradicted(name, o.box, graph.objects[other].box):
                why = f"'{o.name}' {oid} {name} '{graph.objects[other].name}' {other}: the boxes say the opposite"
                changes.append(GraphChange("dropped_contradicted_edge", why, (oid, other)))
                continue
            seen.add((name, other))
            rels.append(Relation(name, other))
        objects[oid] = replace(o, relations=tuple(rels))
    cleaned = replace(graph, objects=objects)
    return (_with_side_by_side(cleaned, changes) if spatial_from_boxes else cleaned), changes


def clean_by(graph: SceneGraph, words: Words, hygiene: Any) -> tuple[SceneGraph, list[GraphChange]]:
    """`clean` with a config's `hygiene` settings (`core.config.HygieneConfig`)."""
    h = hygiene
    return clean(graph, words, h.merge_iou, h.drop_contradicted_spatial, h.drop_person_attributes, h.spatial_from_boxes)


def related_across(graph: SceneGraph) -> set[frozenset[str]]:
    """The pairs of objects the graph relates left or right, either way (any spelling)."""
    return {
        frozenset((oid, r.object))
        for oid, o in graph.objects.items()
        for r in o.relations
        if direction(r.name) in ("left", "right")
    }


LEFT, RIGHT = "to the left of", "to the right of"
# GQA relates one object left or right to at most 16 others (100 real graphs); the nearest are kept first, so
# a graph of a thousand boxes in a row gains at most this many edges per object, not a million in all
MAX_SIDE = 16


def _side_by_side_pairs(graph: SceneGraph, ids: list[str]) -> list[tuple[int, int]]:
    """The pairs (i, j), i < j, of `ids` that stand side by side (`core.geometry.side_by_side`, the same
    arithmetic on every pair at once: a graph may hold `inputs.max_objects` objects), nearest first."""
    x, y, w, h = np.array([graph.objects[i].box for i in ids], dtype=np.float64).reshape(-1, 4).T
    across = np.minimum.outer(x + w, x + w) - np.maximum.outer(x, x)
    band = np.minimum.outer(y + h, y + h) - np.maximum.outer(y, y)
    ok = (across <= SIDE_OVERLAP * np.minimum.outer(w, w)) & (-across <= REACH * graph.width)
    ok &= band >= BAND * np.minimum.outer(h, h)
    ok &= np.minimum.outer(np.minimum(w, h), np.minimum(w, h)) > 0
    i, j = np.nonzero(np.triu(ok, 1))
    order = np.lexsort((j, i, -across[i, j]))  # the smallest gap first; ties in the graph's order
    return list(zip(i[order].tolist(), j[order].tolist(), strict=True))


def _with_side_by_side(graph: SceneGraph, changes: list[GraphChange]) -> SceneGraph:
    """`graph` with GQA's left/right edges, both ways, between the pairs of objects side by side that it
    relates neither left nor right (`core.geometry.side_by_side`), nearest first and at most `MAX_SIDE`
    added per object; each pair counted as one change."""
    ids = list(graph.objects)
    if len(ids) < 2:
        return graph
    stored = related_across(graph)
    added: dict[str, list[Relation]] = {}
    for i, j in _side_by_side_pairs(graph, ids):
        a, b = ids[i], ids[j]
        if len(added.get(a, ())) >= MAX_SIDE or len(added.get(b, ())) >= MAX_SIDE or frozenset((a, b)) in stored:
            continue
        side = side_by_side(graph.objects[a].box, graph.objects[b].box, graph.width)
        left, right = (a, b) if side == "left" else (b, a)
        added.setdefault(left, []).append(Relation(LEFT, right))
        added.setdefault(right, []).append(Relation(RIGHT, left))
        changes.append(GraphChange("added_side_by_side", f"{left} {LEFT} {right}", (left, right)))
    if not added:
        return graph
    at = {oid: k for k, oid in enumerate(ids)}  # an object's new edges in the graph's order of their partners
    objects = {
        oid: replace(o, relations=(*o.relations, *sorted(added[oid], key=lambda r: at[r.object])))
        if oid in added
        else o
        for oid, o in graph.objects.items()
    }
    return replace(graph, objects=objects)


def _without_person_attributes(graph: SceneGraph, words: Words, changes: list[GraphChange]) -> SceneGraph:
    """`graph` with no colour, skin, ethnicity or body word on a person (`Words.is_person_attribute`): "the
    white walking man" says a race or a shirt, nobody can tell which, and a benchmark describes no one by
    their skin or body."""
    objects = dict(graph.objects)
    for oid, o in graph.objects.items():
        if not o.attributes or not words.is_person(o.name) or o.name in words.nouns.homonyms:
            continue  # a pitcher may be a jug
        dropped = [a for a in o.attributes if words.is_person_attribute(a)]
        if dropped:
            objects[oid] = replace(o, attributes=tuple(a for a in o.attributes if a not in dropped))
            why = "; ".join(f"'{a}' ({words.person_attribute_reason(a)})" for a in dropped)
            changes.append(
                GraphChange("dropped_person_attribute", f"'{o.name}' {oid}: not said of a person: {why}", (oid,))
            )
    return graph if objects == graph.objects else replace(graph, objects=objects)


class HygieneStage(Stage):
    name = "hygiene"
    version = f"hygiene@v6+{TALLY}"  # v2: the box rule reads every spelling of a direction ("to left of"); v3:
    # GQA's spelling of every relation; v4: no colour, skin, ethnicity or body word on a person; v5: the shard's tally;
    # v6: GQA's left/right edges between objects side by side where a graph stores none for the pair
    reads = ("ingest",)
    writes = outputs(HYGIENE_GRAPHS, HYGIENE_TALLIES)
    config = ("hygiene",)

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def run(self, unit: Unit) -> None:
        h = unit.cfg.hygiene
        words = Words.load()
        rows = []
        tally = Tally()  # the plausibility stage's counts of the cleaned graphs, while they are at hand
        for row in unit.records(INGEST_GRAPHS):
            unit.items_in += 1
            graph, changes = clean_by(row.scene_graph(), words, h)
            for c in changes:
                unit.stats[c.kind] += 1
                if c.kind in ("respelled_relation", "added_side_by_side"):
                    continue  # the same fact spelled as GQA spells it; a fact GQA's graphs state
                unit.reject(Reject("hygiene", c.reason, graph.image_id, detail={"objects": list(c.objects)}))
            rows.append(graph_to_row(graph))
            tally.add(graph, words)
        unit.write("graphs", rows)
        unit.write("tallies", tally.rows())
