"""Referring paths: enumerate, keep the unique ones, grade them, render them (SPEC 1.1-1.3).

The search follows CLEVR-Ref+'s generator in spirit, deterministically:
- per image, indexes are built once (`GraphIndex`), and every related-node description's match set is
  computed once by the executor;
- a candidate is a target-attribute subset plus root "elements" (relation or `same` edges with their
  sub-paths). Each piece is summarised as a bitmask of the same-name distractors it fails to exclude, so
  uniqueness of a combination is an AND of masks, and partial combinations that cannot be unique or that
  carry a useless hop are pruned without building a path;
- the search order is a shuffle keyed by (seed, image, target, type), bounded by a count
  (`paths.max_candidates`), never by wall clock, so sharding and timing never change the output;
- every kept path is re-executed through the executor, the single source of truth for "unique".
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from core.attributes import AttributeTable
from core.config import RunConfig
from core.executor import GraphIndex, execute, matches_exactly
from core.records import PathEdge, PathNode, Positive, Reject, SameEdge, SceneGraph, SceneObject
from core.vocab import English, PoorReferents, RelationVocab
from generators.expressions import Renderer, Templates, ordered_attributes

GENERATOR = "paths@v1"


@dataclass(slots=True, frozen=True)
class PathResources:
    """Everything a path shard needs, loaded once per task."""

    table: AttributeTable
    poor: PoorReferents
    relations: RelationVocab
    english: English
    renderer: Renderer

    @classmethod
    def load(cls, cfg: RunConfig) -> PathResources:
        table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
        relations = RelationVocab.load(cfg.resolve(cfg.paths.relations))
        english = English.load(cfg.resolve(cfg.paths.english))
        templates = Templates.load(cfg.resolve(cfg.paths.templates))
        return cls(
            table=table,
            poor=PoorReferents.load(cfg.resolve(cfg.targets.poor_referents)),
            relations=relations,
            english=english,
            renderer=Renderer(templates, english, relations, table),
        )

    def versions(self) -> dict[str, str]:
        return {
            "generator": GENERATOR,
            "templates": f"templates@{self.renderer.templates.version}",
            "attribute_table": self.table.version,
            "poor_referents": self.poor.version,
            "relations": self.relations.version,
            "english": self.english.version,
        }


def keyed_seed(*parts: object) -> int:
    """A cheap deterministic seed from parts (str seeds cost Random a SHA-512 each)."""
    return zlib.crc32(":".join(map(str, parts)).encode())


# --------------------------------------------------------------------------------------------------
# Filtering targets and related objects


def box_reason(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, as_target: bool) -> str | None:
    t = cfg.targets
    image_area = graph.width * graph.height
    if obj.w < t.min_side or obj.h < t.min_side:
        return f"box side below {t.min_side}px ({obj.w}x{obj.h})"
    if obj.area < t.min_area_frac * image_area:
        return f"box area {obj.area / image_area:.4f} of the image is below {t.min_area_frac}"
    if as_target and obj.area > t.max_area_frac * image_area:
        return f"box covers {obj.area / image_area:.2f} of the image, above {t.max_area_frac}"
    return None


def target_reason(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, res: PathResources) -> str | None:
    if obj.name in res.poor.reasons:
        return f"poor referent name {obj.name!r} ({res.poor.reasons[obj.name]})"
    return box_reason(obj, graph, cfg, as_target=True)


def related_ok(obj: SceneObject, graph: SceneGraph, cfg: RunConfig, res: PathResources) -> bool:
    return obj.name not in res.poor.never_related and box_reason(obj, graph, cfg, as_target=False) is None


# --------------------------------------------------------------------------------------------------
# Elements: the pieces a path is made of, each with its distractor mask


@dataclass(slots=True, frozen=True)
class Element:
    """A root edge of a path: a relation (`category` None) or a `same` edge, with its child sub-path.

    `mask` has bit i set when distractor i also satisfies this edge; `inner_mask` is the mask with the
    child's own hop removed (2-hop elements), used to prune a degenerate inner hop.
    """

    relation: str | None
    category: str | None
    child: PathNode
    mask: int
    inner_mask: int | None
    hops: int  # 1 for a direct edge, 2 when the child has a relation of its own


def _attr_subsets(
    attrs: tuple[str, ...], table: AttributeTable, max_size: int, exclude_category: str | None = None
) -> list[tuple[str, ...]]:
    """Subsets with at most one attribute per category ("the red white ball" is not English)."""
    usable = [a for a in attrs if exclude_category is None or table.category(a) != exclude_category]
    out: list[tuple[str, ...]] = []
    for k in range(0, min(max_size, len(usable)) + 1):
        for combo in itertools.combinations(usable, k):
            cats = [table.category(a) or f"_{a}" for a in combo]
            if len(set(cats)) == len(cats):
                out.append(combo)
    return out


class _ImageSearch:
    """Per-image state: the index, the usable related objects and memoised match sets."""

    def __init__(self, graph: SceneGraph, cfg: RunConfig, res: PathResources):
        self.graph = graph
        self.cfg = cfg
        self.res = res
        self.index = GraphIndex(graph, res.table)
        self.related = {oid for oid, obj in graph.objects.items() if related_ok(obj, graph, cfg, res)}
        self._desc_cache: dict[tuple[str, tuple[str, ...]], PathNode] = {}
        self._subset_cache: dict[tuple[str, int, str | None], list[tuple[str, ...]]] = {}

    def subsets(self, oid: str, max_size: int, exclude_category: str | None = None) -> list[tuple[str, ...]]:
        """A fresh list (callers shuffle it) of the object's usable attribute subsets, memoised."""
        key = (oid, max_size, exclude_category)
        got = self._subset_cache.get(key)
        if got is None:
            got = _attr_subsets(self.graph.objects[oid].attributes, self.res.table, max_size, exclude_category)
            self._subset_cache[key] = got
        return list(got)

    def node(self, oid: str, attrs: tuple[str, ...]) -> PathNode:
        key = (oid, attrs)
        n = self._desc_cache.get(key)
        if n is None:
            obj = self.graph.objects[oid]
            n = PathNode(
                name=obj.name,
                attributes=ordered_attributes(attrs, self.res.table, self.res.english),
                id=oid,
            )
            self._desc_cache[key] = n
        return n

    def edges(self, oid: str, exclude: frozenset[str]) -> list[tuple[str, str]]:
        """Usable out-edges (relation, object) of an object, deduplicated, in a stable order."""
        skip = self.res.relations.skip
        out: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        for rel in self.graph.objects[oid].relations:
            key = (rel.name, rel.object)
            if key in seen or rel.name in skip or rel.object not in self.related or rel.object in exclude:
                continue
            seen.add(key)
            out.append(key)
        return out


def _mask_relation(search: _ImageSearch, distractors: list[str], relation: str, child: PathNode) -> int:
    matched = execute(child, search.index)
    out = search.index.out
    mask = 0
    for i, d in enumerate(distractors):
        if not matched.isdisjoint(out[d].get(relation, ())):
            mask |= 1 << i
    return mask


def _mask_same(search: _ImageSearch, distractors: list[str], category: str, child: PathNode) -> int:
    matched = execute(child, search.index)
    cat_attrs = search.index.cat_attrs
    mask = 0
    for i, d in enumerate(distractors):
        mine = cat_attrs[d].get(category)
        if not mine:
            continue
        for y in matched:
            if y != d and (theirs := cat_attrs[y].get(category)) and not mine.isdisjoint(theirs):
                mask |= 1 << i
                break
    return mask


def _mask_attrs(search: _ImageSearch, distractors: list[str], attrs: tuple[str, ...]) -> int:
    need = frozenset(attrs)
    mask = 0
    for i, d in enumerate(distractors):
        if need <= search.index.attrs[d]:
            mask |= 1 << i
    return mask


def _second_hops(search: _ImageSearch, target: str, child: PathNode, rng: random.Random) -> Iterator[PathNode]:
    """`child` extended by one of its own relations (the second hop of a 2-hop path), in keyed order."""
    inner = search.edges(child.id, exclude=frozenset({target, child.id}))  # type: ignore[arg-type]
    rng.shuffle(inner)
    for rel2, oid2 in inner:
        subsets2 = search.subsets(oid2, search.cfg.paths.max_related_attributes)
        attrs2 = subsets2[rng.randrange(len(subsets2))]
        yield PathNode(child.name, child.attributes, (PathEdge(rel2, search.node(oid2, attrs2)),), (), child.id)


def _relation_elements(
    search: _ImageSearch, target: str, distractors: list[str], two_hop: bool, rng: random.Random
) -> Iterator[Element]:
    """Relation edges from the target, lazily, in a keyed random order."""
    p = search.cfg.paths
    edges = search.edges(target, exclude=frozenset({target}))
    rng.shuffle(edges)
    for rel, oid in edges:
        subsets = search.subsets(oid, p.max_related_attributes)
        rng.shuffle(subsets)
        for attrs in subsets:
            child = search.node(oid, attrs)
            if not two_hop:
                yield Element(rel, None, child, _mask_relation(search, distractors, rel, child), None, 1)
                continue
            inner_mask = _mask_relation(search, distractors, rel, child)
            for deep in _second_hops(search, target, child, rng):
                yield Element(rel, None, deep, _mask_relation(search, distractors, rel, deep), inner_mask, 2)


def _same_elements(
    search: _ImageSearch, target: str, distractors: list[str], two_hop: bool, rng: random.Random
) -> Iterator[Element]:
    """`same` edges: another object (of another name) sharing an attribute category with the target."""
    p = search.cfg.paths
    idx = search.index
    tobj = search.graph.objects[target]
    pairs: list[tuple[str, str]] = []
    for cat in p.same_categories:
        mine = idx.cat_attrs[target].get(cat)
        if not mine:
            continue
        for oid in sorted(search.related):
            other = search.graph.objects[oid]
            if oid == target or other.name == tobj.name:
                continue
            theirs = idx.cat_attrs[oid].get(cat)
            if theirs and not mine.isdisjoint(theirs):
                pairs.append((cat, oid))
    rng.shuffle(pairs)
    for cat, oid in pairs:
        # The shared attribute itself stays out of the child, or the expression gives the answer away.
        subsets = search.subsets(oid, p.max_related_attributes, exclude_category=cat)
        attrs = subsets[rng.randrange(len(subsets))]
        child = search.node(oid, attrs)
        if not two_hop:
            yield Element(None, cat, child, _mask_same(search, distractors, cat, child), None, 1)
            continue
        inner_mask = _mask_same(search, distractors, cat, child)
        for deep in _second_hops(search, target, child, rng):
            yield Element(None, cat, deep, _mask_same(search, distractors, cat, deep), inner_mask, 2)


def _build(search: _ImageSearch, target: str, attrs: tuple[str, ...], elements: tuple[Element, ...]) -> PathNode:
    relations = tuple(PathEdge(e.relation, e.child) for e in elements if e.relation is not None)
    same = tuple(SameEdge(e.category, e.child) for e in elements if e.category is not None)
    base = search.node(target, attrs)
    return PathNode(base.name, base.attributes, relations, same, target)


def _valid(attr_mask: int, elements: tuple[Element, ...], has_distractors: bool) -> bool:
    """Unique, and (when the name alone is not unique) without a degenerate hop."""
    full = attr_mask
    for e in elements:
        full &= e.mask
    if full:
        return False
    if not has_distractors:
        return True
    for i, e in enumerate(elements):
        rest = attr_mask
        for j, o in enumerate(elements):
            if j != i:
                rest &= o.mask
        if rest == 0:
            return False  # dropping this hop leaves the result unchanged
        if e.inner_mask is not None and rest & e.inner_mask == 0:
            return False  # the child's own hop changes nothing
    return True


def candidate_paths(search: _ImageSearch, target: str, ptype: str, rng: random.Random) -> Iterator[PathNode]:
    """Unique, non-degenerate paths of one type for one target, in keyed random order, bounded."""
    p = search.cfg.paths
    idx = search.index
    tobj = search.graph.objects[target]
    distractors = sorted(d for d in idx.by_name[tobj.name] if d != target)
    has_d = bool(distractors)
    budget = p.max_candidates

    def attr_options(exclude_category: str | None = None) -> list[tuple[tuple[str, ...], int]]:
        subsets = search.subsets(target, p.max_target_attributes, exclude_category)
        rng.shuffle(subsets)
        return [(a, _mask_attrs(search, distractors, a)) for a in subsets]

    if ptype == "0_hop":
        for attrs, m in attr_options():
            budget -= 1
            if budget < 0:
                return
            if _valid(m, (), has_d):
                yield _build(search, target, attrs, ())
        return

    if ptype in ("1_hop", "2_hop", "same_attr", "same_attr_2hop"):
        two = ptype.endswith("2hop") or ptype == "2_hop"
        make = _same_elements if ptype.startswith("same") else _relation_elements
        options_by_cat: dict[str | None, list[tuple[tuple[str, ...], int]]] = {}
        for el in make(search, target, distractors, two, rng):
            key = el.category
            if key not in options_by_cat:
                options_by_cat[key] = attr_options(exclude_category=key)
            for attrs, m in options_by_cat[key]:
                budget -= 1
                if budget < 0:
                    return
                if _valid(m, (el,), has_d):
                    yield _build(search, target, attrs, (el,))
        return

    if ptype == "and":
        elements = list(itertools.islice(_relation_elements(search, target, distractors, False, rng), p.max_candidates))
        options = attr_options()
        for i, j in itertools.combinations(range(len(elements)), 2):
            e1, e2 = elements[i], elements[j]
            if e1.child.id == e2.child.id:
                continue  # two facts about one object read as a 2-object "and"
            for attrs, m in options:
                budget -= 1
                if budget < 0:
                    return
                if _valid(m, (e1, e2), has_d):
                    yield _build(search, target, attrs, (e1, e2))
        return
    raise ValueError(f"unknown path type {ptype!r}")


# --------------------------------------------------------------------------------------------------
# Levels


def path_level(path: PathNode, index: GraphIndex) -> int:
    """SPEC 1.2, from the smallest unique sub-path: 1 = the name alone, 2 = one attribute or one bare
    relation/same edge, 3 = at least two pieces needed. Re-executes sub-paths; needs no search state."""
    if len(execute(PathNode(path.name), index)) == 1:
        return 1
    singles = [PathNode(path.name, (a,)) for a in path.attributes]
    singles += [PathNode(path.name, relations=(PathEdge(e.name, PathNode(e.object.name)),)) for e in path.relations]
    singles += [PathNode(path.name, same=(SameEdge(s.category, PathNode(s.object.name)),)) for s in path.same]
    if any(len(execute(s, index)) == 1 for s in singles):
        return 2
    return 3


def path_type(path: PathNode) -> str:
    """The structure of a path, recomputed from its shape (used to re-check emitted samples)."""
    r, s = path.relations, path.same
    if not r and not s:
        return "0_hop"
    if s and not r and len(s) == 1:
        return "same_attr_2hop" if s[0].object.relations else "same_attr"
    if len(r) == 1 and not s:
        return "2_hop" if r[0].object.relations else "1_hop"
    if len(r) == 2 and not s and not any(e.object.relations for e in r):
        return "and"
    raise ValueError("path has no known structure")


def is_spatial(path: PathNode, relations: RelationVocab) -> bool:
    return any(e.name in relations.spatial for n in path.nodes() for e in n.relations)


def has_attribute(path: PathNode) -> bool:
    return any(n.attributes or n.same for n in path.nodes())


# --------------------------------------------------------------------------------------------------
# One image


def generate_positives(
    graph: SceneGraph, cfg: RunConfig, res: PathResources
) -> tuple[list[Positive], list[Reject], Counter]:
    """All positives of one image (before global balancing), the rejected candidates, and counts."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    search = _ImageSearch(graph, cfg, res)
    kept: list[Positive] = []
    for tid in sorted(graph.objects):
        obj = graph.objects[tid]
        why = target_reason(obj, graph, cfg, res)
        if why is not None:
            stats["targets_filtered"] += 1
            rejects.append(Reject("targets", why, graph.image_id, detail={"object": tid, "name": obj.name}))
            continue
        stats["targets"] += 1
        for ptype in cfg.paths.types:
            rng = random.Random(keyed_seed(cfg.seed, graph.image_id, tid, ptype))
            found = 0
            for path in candidate_paths(search, tid, ptype, rng):
                if not matches_exactly(path, search.index, tid):
                    # The masks and the executor disagree: a bug, never a silent keep.
                    raise AssertionError(f"image {graph.image_id}: mask search kept a non-unique path")
                kept.append(_Candidate(path, ptype, path_level(path, search.index)))
                found += 1
                if found >= cfg.paths.per_target_type:
                    break
            stats[f"found:{ptype}"] += found
            if not found:
                stats[f"none:{ptype}"] += 1
    if len(kept) > cfg.paths.max_per_image:
        kept, dropped = _cap_image(kept, cfg, graph.image_id)
        for c in dropped:
            rejects.append(
                Reject(
                    "paths",
                    f"max_per_image {cfg.paths.max_per_image}",
                    graph.image_id,
                    Positive.make_id(graph.image_id, c.path),
                    detail={"object": c.path.id, "tuple_type": c.ptype, "level": c.level},
                )
            )
        stats["dropped_max_per_image"] += len(dropped)
    # Rendering is the costly part of a sample: only the ones kept are rendered.
    return [_positive(graph, c, search, res) for c in kept], rejects, stats


@dataclass(slots=True, frozen=True)
class _Candidate:
    path: PathNode
    ptype: str
    level: int


def _positive(graph: SceneGraph, c: _Candidate, search: _ImageSearch, res: PathResources) -> Positive:
    path, ptype = c.path, c.ptype
    sid = Positive.make_id(graph.image_id, path)
    expression, template = res.renderer.render(path, ptype, sid, search.index)
    target = graph.objects[path.id]  # type: ignore[index]
    return Positive(
        id=sid,
        image_id=graph.image_id,
        width=graph.width,
        height=graph.height,
        path=path,
        tuple_type=ptype,
        level=c.level,
        expression=expression,
        template=template,
        bbox=target.box,
        distractors=search.index.name_count(target.name) - 1,
        generator=GENERATOR,
        spatial=is_spatial(path, res.relations),
        attribute=has_attribute(path),
    )


def _cap_image(kept: list[_Candidate], cfg: RunConfig, image_id: str) -> tuple[list[_Candidate], list[_Candidate]]:
    """Keep `max_per_image`, round-robin over (type, level) groups in a keyed order, for variety."""
    rng = random.Random(f"{cfg.seed}:cap:{image_id}")
    groups: dict[tuple[str, int], list[int]] = {}
    for i, c in enumerate(kept):
        groups.setdefault((c.ptype, c.level), []).append(i)
    order = sorted(groups)
    rng.shuffle(order)
    for k in order:
        rng.shuffle(groups[k])
    chosen: set[int] = set()
    while len(chosen) < cfg.paths.max_per_image:
        for k in order:
            if groups[k] and len(chosen) < cfg.paths.max_per_image:
                chosen.add(groups[k].pop())
    return [c for i, c in enumerate(kept) if i in chosen], [c for i, c in enumerate(kept) if i not in chosen]
