"""The path search: unique, non-degenerate paths of one type for one target.

The search follows CLEVR-Ref+'s generator in spirit, deterministically:
- per image, indexes are built once (`GraphIndex`), and every related-node description's match set is
  computed once by the executor;
- a candidate is a target-attribute subset plus root "elements" (relation or `same` edges with their
  sub-paths). Each piece is summarised as a bitmask of the same-name distractors it fails to exclude, so
  uniqueness of a combination is an AND of masks, and partial combinations that cannot be unique or that
  carry a useless hop are pruned without building a path;
- the search order is a shuffle keyed by (seed, image, target, type), bounded by a count
  (`paths.max_candidates`), never by wall clock, so sharding and timing never change the output;
- the whole image's search is bounded too, by a count of steps (`paths.max_image_steps`,
  `generators/paths/budget.py`): in a crowd of one name every hop's mask costs objects x objects.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hardneg.core.config import RunConfig
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathEdge, PathNode, SameEdge, SceneGraph
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.generators.paths.budget import StepBudget
from hardneg.generators.paths.expressions import ordered_attributes
from hardneg.generators.paths.keyed import Rng
from hardneg.generators.paths.targets import PathResources, related_ok


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


class PathSearch:
    """Per-image state: the index, the usable related objects, memoised match sets, and the step budget."""

    def __init__(self, graph: SceneGraph, cfg: RunConfig, res: PathResources):
        self.graph = graph
        self.cfg = cfg
        self.res = res
        self.index = GraphIndex(graph, res.table)
        self.related = {oid for oid, obj in graph.objects.items() if related_ok(obj, graph, cfg, res)}
        self.related_sorted = sorted(self.related)
        self._matches: dict[int, frozenset[str] | None] = {}  # id of a node of `node()` -> what it matches
        self.refused: Counter = Counter()  # candidates each path rule refused (paths.rules)
        self._desc_cache: dict[tuple[str, tuple[str, ...]], PathNode] = {}
        self._subset_cache: dict[tuple[str, int, str | None], list[tuple[str, ...]]] = {}
        self._masks: dict[tuple[str, str | None, str | None, int], int] = {}  # see `_mask_relation`
        self._deeps: dict[tuple[int, str, int], PathNode] = {}  # see `deep`
        self._deep_runs: dict[int, tuple[int, frozenset[str]] | None] = {}  # id of a `deep` node -> (steps, matches)
        self.parts: dict[int, tuple[list[set[str]], bool]] = {}  # id of a child -> its nodes' attributes, any crowd
        self.steps = StepBudget(self.index, cfg.paths.max_image_steps)  # this image's work bound

    def subsets(self, oid: str, max_size: int, exclude_category: str | None = None) -> list[tuple[str, ...]]:
        """A fresh list (callers shuffle it) of the object's usable attribute subsets, memoised."""
        key = (oid, max_size, exclude_category)
        got = self._subset_cache.get(key)
        if got is None:
            n = len(self.graph.objects[oid].attributes)
            self.steps.spend(sum(math.comb(n, k) for k in range(min(max_size, n) + 1)))
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
            self._matches[id(n)] = None  # alive as long as this search: its id names it
        return n

    def matches(self, child: PathNode) -> frozenset[str]:
        """What a related-node description matches: once per image for a node of `node()` (kept alive by
        its cache, so its id names it); for a 2-hop child, its steps spent at every use (as executing it
        afresh would), its match set worked out once for a node of `deep()`."""
        key = id(child)
        if key not in self._matches:
            if (run := self._deep_runs.get(key)) is not None:
                self.steps.spend(run[0])
                return run[1]
            steps = self.steps.execution(child, self.known_size)
            self.steps.spend(steps)
            got = execute(child, self.index)
            if key in self._deep_runs:
                self._deep_runs[key] = (steps, got)
            return got
        got = self._matches[key]
        if got is None:
            self.steps.spend(self.steps.execution(child, self.known_size))
            got = self._matches[key] = execute(child, self.index)
        return got

    def deep(self, child: PathNode, relation: str, other: PathNode) -> PathNode:
        """`child` (of `node()`) extended by `relation` to `other` (of `node()`): one node per hop in the
        search's life, so what it matches and what that costs are worked out once (the sizes the cost
        reads are fixed once known)."""
        key = (id(child), relation, id(other))
        n = self._deeps.get(key)
        if n is None:
            n = self._deeps[key] = PathNode(child.name, child.attributes, (PathEdge(relation, other),), (), child.id)
            self._deep_runs[id(n)] = None  # alive as long as this search: its id names it
        return n

    def known_size(self, node: PathNode) -> int | None:
        """How many objects a node of `node()` matches (memoised, so the bound on executing a path that holds
        it is tight); None for another node."""
        return len(self.matches(node)) if id(node) in self._matches else None

    def edges(self, oid: str, exclude: frozenset[str]) -> list[tuple[str, str]]:
        """Usable out-edges (relation, object) of an object, deduplicated, in a stable order."""
        skip = self.res.relations.skip
        self.steps.spend(len(self.graph.objects[oid].relations))
        out: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()
        for rel in self.graph.objects[oid].relations:
            key = (rel.name, rel.object)
            if key in seen or rel.name in skip or rel.object not in self.related or rel.object in exclude:
                continue
            seen.add(key)
            out.append(key)
        return out


def _mask_relation(search: PathSearch, target: str, distractors: list[str], relation: str, child: PathNode) -> int:
    matched = search.matches(child)
    search.steps.spend(search.steps.pairs(relation, len(distractors), len(matched)))
    key = (target, relation, None, id(child))
    if (got := search._masks.get(key)) is not None:
        return got
    mask = 0
    for i, d in enumerate(distractors):
        if search.index.related(d, relation, matched):
            mask |= 1 << i
    _remember(search, key, child, mask)
    return mask


def _mask_same(search: PathSearch, target: str, distractors: list[str], category: str, child: PathNode) -> int:
    matched = search.matches(child)
    search.steps.spend(search.steps.pairs(None, len(distractors), len(matched)))
    key = (target, None, category, id(child))
    if (got := search._masks.get(key)) is not None:
        return got
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
    _remember(search, key, child, mask)
    return mask


def _remember(search: PathSearch, key: tuple[str, str | None, str | None, int], child: PathNode, mask: int) -> None:
    """Keep a hop's mask for the target's next path types (1-hop, 2-hop and `and` try the same edges), for a
    node of `node()` only (alive with the search: its id names it). Each use spends its steps again."""
    if id(child) in search._matches:
        search._masks[key] = mask


def _mask_attrs(search: PathSearch, distractors: list[str], attrs: tuple[str, ...]) -> int:
    search.steps.spend(len(distractors) + 1)
    need = frozenset(attrs)
    mask = 0
    for i, d in enumerate(distractors):
        if need <= search.index.attrs[d]:
            mask |= 1 << i
    return mask


def _second_hops(search: PathSearch, target: str, child: PathNode, rng: Rng) -> Iterator[PathNode]:
    """`child` extended by one of its own relations (the second hop of a 2-hop path), in keyed order."""
    inner = search.edges(child.id, exclude=frozenset({target, child.id}))  # type: ignore[arg-type]
    rng.shuffle(inner)
    for rel2, oid2 in inner:
        subsets2 = search.subsets(oid2, search.cfg.paths.max_related_attributes)
        attrs2 = subsets2[rng.randrange(len(subsets2))]
        yield search.deep(child, rel2, search.node(oid2, attrs2))


def _relation_elements(
    search: PathSearch, target: str, distractors: list[str], two_hop: bool, rng: Rng
) -> Iterator[Element]:
    """Relation edges from the target, lazily, in a keyed random order."""
    p = search.cfg.paths
    edges = search.edges(target, exclude=frozenset({target}))
    rng.shuffle(edges)
    for rel, oid in edges:
        subsets = search.subsets(oid, p.max_related_attributes)
        rng.shuffle(subsets)
        for attrs in subsets:
            mask = functools.partial(_mask_relation, search, target, distractors, rel)
            yield from _hops(search, target, rel, None, search.node(oid, attrs), mask, two_hop, rng)


def _same_elements(
    search: PathSearch, target: str, distractors: list[str], two_hop: bool, rng: Rng
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
        search.steps.spend(len(search.related_sorted))
        for oid in search.related_sorted:
            other = search.graph.objects[oid]
            if oid == target or other.name == tobj.name:
                continue
            rules, words = search.res.rules, search.res.words
            if cat == "size" and "size_across_categories" in rules and not words.size_comparable(tobj.name, other.name):
                search.refused["size_across_categories"] += 1  # a house is not "the same size" as a flower
                continue
            theirs = idx.cat_attrs[oid].get(cat)
            if theirs and not mine.isdisjoint(theirs):
                pairs.append((cat, oid))
    rng.shuffle(pairs)
    for cat, oid in pairs:
        # The shared attribute itself stays out of the child, or the expression gives the answer away.
        subsets = search.subsets(oid, p.max_related_attributes, exclude_category=cat)
        attrs = subsets[rng.randrange(len(subsets))]
        mask = functools.partial(_mask_same, search, target, distractors, cat)
        yield from _hops(search, target, None, cat, search.node(oid, attrs), mask, two_hop, rng)


def _hops(
    search: PathSearch,
    target: str,
    rel: str | None,
    cat: str | None,
    child: PathNode,
    mask: Callable[[PathNode], int],
    two_hop: bool,
    rng: Rng,
) -> Iterator[Element]:
    """The element for `child` itself, or (two hops) one per second hop from it, each with its mask."""
    if not two_hop:
        yield Element(rel, cat, child, mask(child), None, 1)
        return
    inner_mask = mask(child)
    for deep in _second_hops(search, target, child, rng):
        yield Element(rel, cat, deep, mask(deep), inner_mask, 2)


def build(search: PathSearch, target: str, attrs: tuple[str, ...], elements: tuple[Element, ...]) -> PathNode:
    """The path of a candidate: the target's node with its attributes, the elements' edges (relations first)."""
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


def rule_refusal(search: PathSearch, target_name: str, elements: tuple[Element, ...], has_d: bool) -> str | None:
    """The path rule (paths.rules) a combination breaks, if any (see config.PathsConfig.rules)."""
    rules, words = search.res.rules, search.res.words
    related = [n.name for e in elements for n in e.child.nodes()]
    if "name_chains" in rules:
        if any(c >= 3 for c in Counter([target_name, *related]).values()):
            return "name_chains"
        if target_name in related and search.index.name_count(target_name) > 2:
            return "name_chains"
    if "crowd_anchors" in rules and has_d and any(words.is_crowd(n) for n in related):
        return "crowd_anchors"  # every hop is needed when the name has distractors: it would rest on a crowd
    if "repeated_conjuncts" in rules and len(elements) == 2:
        (a, b), phrase = elements, search.res.relations.phrase
        if phrase.get(a.relation, a.relation) == phrase.get(b.relation, b.relation) and (
            a.child.without_ids() == b.child.without_ids()
        ):
            return "repeated_conjuncts"  # "right of a yellow banana and right of a yellow banana"
    return None


UNASKED = object()  # a hop choice the path rules have not been asked about yet


def _refusal(search: PathSearch, target_name: str, elements: tuple[Element, ...], has_d: bool) -> str | None:
    """`rule_refusal`, counted in `search.refused` once per hop choice it refuses."""
    why = rule_refusal(search, target_name, elements, has_d)
    if why is not None:
        search.refused[why] += 1
    return why


Candidate = tuple[tuple[str, ...], tuple[Element, ...]]  # the target's attributes and the root elements


def candidates(search: PathSearch, target: str, ptype: str, rng: Rng) -> Iterator[Candidate]:
    """Unique, non-degenerate paths of one type for one target, in keyed random order, bounded, as (target
    attributes, elements): a caller that scores and drops most of them (`_search_target`'s lookahead)
    builds (`build`) only those it keeps; building spends no steps."""
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
            search.steps.spend(1)
            if _valid(m, (), has_d):
                yield attrs, ()
        return

    if ptype in ("1_hop", "2_hop", "same_attr", "same_attr_2hop"):
        two = ptype.endswith("2hop") or ptype == "2_hop"
        make = _same_elements if ptype.startswith("same") else _relation_elements
        options_by_cat: dict[str | None, list[tuple[tuple[str, ...], int]]] = {}
        for el in make(search, target, distractors, two, rng):
            key = el.category
            if key not in options_by_cat:
                options_by_cat[key] = attr_options(exclude_category=key)
            why: str | object | None = UNASKED
            for attrs, m in options_by_cat[key]:
                budget -= 1
                if budget < 0:
                    return
                search.steps.spend(1)
                if _valid(m, (el,), has_d):
                    if why is UNASKED:  # the rules read the hops, not the attributes: once per hop
                        why = _refusal(search, tobj.name, (el,), has_d)
                    if why is None:
                        yield attrs, (el,)
        return

    if ptype == "and":
        elements = list(itertools.islice(_relation_elements(search, target, distractors, False, rng), p.max_candidates))
        options = attr_options()
        for i, j in itertools.combinations(range(len(elements)), 2):
            search.steps.spend(1)
            e1, e2 = elements[i], elements[j]
            if e1.child.id == e2.child.id:
                continue  # two facts about one object read as a 2-object "and"
            why = UNASKED
            for attrs, m in options:
                budget -= 1
                if budget < 0:
                    return
                search.steps.spend(1)
                if _valid(m, (e1, e2), has_d):
                    if why is UNASKED:
                        why = _refusal(search, tobj.name, (e1, e2), has_d)
                    if why is None:
                        yield attrs, (e1, e2)
        return
    raise ValueError(f"unknown path type {ptype!r}")
