"""Referring paths for one image: search, keep the unique ones, grade them, render them.

`generators/paths/search.py` enumerates candidates; every kept path is re-executed through the executor,
the single source of truth for "unique"; levels come from the smallest unique sub-path.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from hardneg.core.config import RunConfig
from hardneg.core.errors import EmptyInput
from hardneg.core.executor import GraphIndex, execute, matches_exactly
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.gqa.boxes import BoxShapes
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.records import PathEdge, PathNode, Reject, SameEdge, SceneGraph, SceneObject
from hardneg.core.rows import (
    HYGIENE_GRAPHS,
    PATHS_BALANCE,
    PATHS_POSITIVES,
    PLAUSIBILITY_ANNOTATIONS,
    PLAUSIBILITY_COUNTS,
    PLAUSIBILITY_PRIOR,
    PositiveRow,
)
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.vocab import RelationVocab
from hardneg.generators.paths.annotation_rules import (
    Evidence,
    SameKind,
    held_many_refusal,
    many_refusal,
    printed_refusal,
    risk_reasons,
    self_related_refusal,
    several_wholes_refusal,
)
from hardneg.generators.paths.budget import SearchBudgetSpent
from hardneg.generators.paths.keyed import KeyedRandom
from hardneg.generators.paths.search import Element, PathSearch, build, candidates
from hardneg.generators.paths.select import attributes_swappable, balance_row
from hardneg.generators.paths.targets import (
    GENERATOR,
    RENDERER_DATA,
    PathResources,
    box_reason,
    related_ok,
    target_reason,
)
from hardneg.generators.paths.wearers import OtherWearers

__all__ = [
    "GENERATOR",
    "PathResources",
    "PathsStage",
    "box_reason",
    "generate_positives",
    "related_ok",
    "target_reason",
]


# --------------------------------------------------------------------------------------------------
# Levels


def path_level(path: PathNode, index: GraphIndex) -> int:
    """The level, from the smallest unique sub-path: 1 = the name alone, 2 = one attribute or one bare
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
    graph: SceneGraph, cfg: RunConfig, res: PathResources, evidence: Evidence | None = None
) -> tuple[list[PositiveRow], list[Reject], Counter]:
    """All positives of one image (before global balancing), the rejected candidates, and counts.
    `evidence`: what the corpus says about annotations (`generators/paths/annotation_rules.py`); without it the
    rules that need the corpus decide nothing."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    search = PathSearch(graph, cfg, res)
    kept: list[_Candidate] = []
    for tid in sorted(graph.objects):
        try:
            _search_target(search, tid, evidence, kept, stats, rejects)
        except SearchBudgetSpent:
            stats["budget_exhausted"] += 1
            why = (f"search budget of {cfg.paths.max_image_steps:,} steps spent (paths.max_image_steps) at object "
                   f"{tid}; the objects after it were not searched")  # fmt: skip
            rejects.append(Reject("paths", why, graph.image_id, detail={"object": tid}))
            break
    if len(kept) > cfg.paths.max_per_image:
        kept, dropped = _cap_image(kept, cfg, graph.image_id, res)
        for c in dropped:
            rejects.append(
                Reject(
                    "paths",
                    f"max_per_image {cfg.paths.max_per_image}",
                    graph.image_id,
                    PositiveRow.make_id(graph.image_id, c.path),
                    detail={"object": c.path.id, "tuple_type": c.ptype, "level": c.level},
                )
            )
        stats["dropped_max_per_image"] += len(dropped)
    # Rendering is the costly part of a sample: only the ones kept are rendered.
    stats.update({f"refused:{rule}": n for rule, n in search.refused.items()})
    return [_positive(graph, c, search, res, evidence) for c in kept], rejects, stats


def _search_target(
    search: PathSearch,
    tid: str,
    evidence: Evidence | None,
    kept: list[_Candidate],
    stats: Counter,
    rejects: list[Reject],
) -> None:
    """One target's paths of every type into `kept`; raises `SearchBudgetSpent` when the image's step
    budget runs out (what it kept before stays)."""
    graph, cfg, res = search.graph, search.cfg, search.res
    obj = graph.objects[tid]
    search.steps.spend(len(graph.objects))  # the annotation rule compares the target with every object
    why = target_reason(obj, graph, cfg, res) or _annotation_reason(obj, graph, res, evidence, stats)
    if why is not None:
        stats["targets_filtered"] += 1
        rejects.append(Reject("targets", why, graph.image_id, detail={"object": tid, "name": obj.name}))
        return
    stats["targets"] += 1
    lookahead = cfg.paths.negatives_lookahead
    # the target's kin under other names, looked for once a path has passed the other rules (most never do)
    kin = functools.cache(lambda: SameKind(obj, graph, res.words, res.table)) if "same_kind" in res.rules else None
    # and the other people's twins of a piece of clothing (none smaller than a readable target)
    small = cfg.targets.min_area_frac
    wear: Callable[[], OtherWearers] | None = None
    if "other_wearers" in res.rules:
        wear = functools.cache(lambda: OtherWearers(obj, graph, res.words, res.table, small))
    for ptype in cfg.paths.types:
        rng = KeyedRandom(cfg.seed, graph.image_id, tid, ptype)
        found: list[_Candidate] = []
        scores: list[int] = []
        looked = 0
        best = 0 if ptype == "0_hop" else _BEST  # a bare target relates nothing: no path of it allows more
        for attrs, elements in candidates(search, tid, ptype, rng):
            full = len(found) >= cfg.paths.per_target_type
            score = _allows(search, obj.name, attrs, elements) if lookahead else 0
            if full and score <= min(scores):
                looked += 1
                if looked >= lookahead:
                    break
                continue
            path = build(search, tid, attrs, elements)
            search.steps.spend(search.steps.execution(path, search.known_size) + search.steps.level(path))
            if not matches_exactly(path, search.index, tid):
                # The masks and the executor disagree: a bug, never a silent keep.
                raise AssertionError(f"image {graph.image_id}: mask search kept a non-unique path")
            if (rule := _path_rule(path, obj, search, evidence, kin, wear)) is not None:
                stats[f"refused:{rule[0]}"] += 1
                rejects.append(Reject("paths", rule[1], graph.image_id, PositiveRow.make_id(graph.image_id, path),
                                      detail={"object": tid, "tuple_type": ptype}))  # fmt: skip
                continue
            candidate = _Candidate(path, ptype, path_level(path, search.index))
            if full:  # a path that allows rarer negatives takes the place of the last that allows the fewest
                k = max(i for i, x in enumerate(scores) if x == min(scores))
                found[k], scores[k] = candidate, score
                stats["negatives_preferred"] += 1
            else:
                found.append(candidate)
                scores.append(score)
            if len(found) >= cfg.paths.per_target_type and (not lookahead or min(scores) >= best):
                break
        kept.extend(found)
        stats[f"found:{ptype}"] += len(found)
        if not found:
            stats[f"none:{ptype}"] += 1


_BEST = 2  # `_allows`: a path that allows a swap of attributes


def _path_rule(
    path: PathNode,
    obj: SceneObject,
    search: PathSearch,
    evidence: Evidence | None,
    kin: Callable[[], SameKind] | None,
    wear: Callable[[], OtherWearers] | None = None,
) -> tuple[str, str] | None:
    """(rule, why) of the first annotation rule (`paths.rules`) that refuses a path the graph certifies: a
    name that comes in many with nothing to tell it apart, a target that may be one of a group the graph
    left mostly unannotated (things held several at a time by what the path puts them on or in, a part of
    one of several wholes), another object of its kind under another name, or another person's unannotated
    twin of a piece of clothing."""
    res, graph = search.res, search.graph
    if "many_targets" in res.rules and (why := many_refusal(path, evidence)) is not None:
        return "many_targets", why
    share = search.cfg.paths.many_held_share
    if "many_held" in res.rules and (why := held_many_refusal(path, obj, graph, res.words, evidence, share)):
        return "many_held", why
    if "several_wholes" in res.rules and (why := several_wholes_refusal(path, obj, graph, res.words)):
        return "several_wholes", why
    if "self_related" in res.rules and (why := self_related_refusal(path, graph, res.words)):
        return "self_related", why
    if kin is not None and (why := kin().refusal(path, graph)) is not None:
        return "same_kind", why
    if wear is not None and (why := wear().refusal(path)) is not None:
        return "other_wearers", why
    return None


def _allows(search: PathSearch, name: str, attrs: tuple[str, ...], elements: tuple[Element, ...]) -> int:
    """How rare the negatives a candidate path allows are: 2 when two of its objects carry attributes of one
    category (a swap of attributes, the rarest kind), 1 when it relates objects none of which is a crowd
    name (a swap of objects and a replaced relation can rest on them), else 0. Read from the candidate
    before it is built (most are dropped unbuilt), its nodes in the built path's order."""
    if not elements:
        return 0
    sets, crowd = [set(attrs)], search.res.words.is_crowd(name)
    for e in elements:
        child_sets, child_crowd = _parts(search, e.child)
        sets.extend(child_sets)
        crowd = crowd or child_crowd
    if attributes_swappable(sets, search.res.table):
        return 2
    return int(not crowd)


def _parts(search: PathSearch, child: PathNode) -> tuple[list[set[str]], bool]:
    """A child's nodes' attribute sets and whether one is a crowd name, once per child (of `node()` or
    `deep()`: alive with the search, its id names it)."""
    got = search.parts.get(id(child))
    if got is None:
        nodes = child.nodes()
        is_crowd = search.res.words.is_crowd
        got = search.parts[id(child)] = ([set(n.attributes) for n in nodes], any(is_crowd(n.name) for n in nodes))
    return got


def _annotation_reason(
    obj: SceneObject, graph: SceneGraph, res: PathResources, evidence: Evidence | None, stats: Counter
) -> str | None:
    """The annotation rule (`paths.rules`) that refuses a target, counted like the path rules."""
    if "printed_targets" in res.rules and (reason := printed_refusal(obj, graph, res.words, evidence)) is not None:
        stats["refused:printed_targets"] += 1
        return reason
    return None


@dataclass(slots=True, frozen=True)
class _Candidate:
    path: PathNode
    ptype: str
    level: int


def _positive(
    graph: SceneGraph,
    c: _Candidate,
    search: PathSearch,
    res: PathResources,
    evidence: Evidence | None,
) -> PositiveRow:
    path, ptype = c.path, c.ptype
    sid = PositiveRow.make_id(graph.image_id, path)
    expression, template = res.renderer.render(path, ptype, sid, search.index)
    target = graph.objects[path.id]  # type: ignore[index]
    twin = res.certifier.doubtful(path, graph, target.id, search.index)
    wearers = search.cfg.targets.min_area_frac if "other_wearers" in res.rules else None  # the rule's twin floor
    return PositiveRow.made(
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
        risk_reasons=[r.to_json() for r in risk_reasons(path, target, graph, res.words, evidence, twin, wearers)],
    )


def _cap_image(
    kept: list[_Candidate], cfg: RunConfig, image_id: str, res: PathResources
) -> tuple[list[_Candidate], list[_Candidate]]:
    """Keep `max_per_image`, round-robin over (type, level) groups in a keyed order, for variety; within a
    group, a candidate that allows a swap of attributes (the rarest negative, `generators.paths.select.swappable`)
    first (the groups are popped from their end)."""
    rng = random.Random(f"{cfg.seed}:cap:{image_id}")
    groups: dict[tuple[str, int], list[int]] = {}
    for i, c in enumerate(kept):
        groups.setdefault((c.ptype, c.level), []).append(i)
    order = sorted(groups)
    rng.shuffle(order)
    for k in order:
        rng.shuffle(groups[k])
        groups[k].sort(key=lambda i: attributes_swappable([set(n.attributes) for n in kept[i].path.nodes()], res.table))
    chosen: set[int] = set()
    while len(chosen) < cfg.paths.max_per_image:
        for k in order:
            if groups[k] and len(chosen) < cfg.paths.max_per_image:
                chosen.add(groups[k].pop())
    return [c for i, c in enumerate(kept) if i in chosen], [c for i, c in enumerate(kept) if i not in chosen]


def _evidence(unit: Unit) -> Evidence:
    """What the corpus says about annotations: the run's counts plus the prior's (`core/gqa/prior.py`), and
    the run's boxes with the shipped box shapes (`core/gqa/boxes.py`)."""
    read = unit.read_all
    notes = AnnotationStats.from_rows(read(PLAUSIBILITY_ANNOTATIONS))
    shipped = BoxShapes.load(unit.cfg.resolve(unit.cfg.paths.box_shapes))
    boxes = shipped.combined(BoxShapes.from_counts(notes.shape, notes.place))  # the run's own boxes, then
    notes = notes.with_prior(read(PLAUSIBILITY_PRIOR))  # the prior added (in place)
    counts = Counts.from_rows(r for r in read(PLAUSIBILITY_COUNTS) if r["kind"] != "triples")
    counts = counts.with_prior(r for r in read(PLAUSIBILITY_PRIOR) if r["kind"] != "counts:triples")
    return Evidence(notes, counts, boxes)


class PathsStage(Stage):
    """Positives for every image of a shard, before global balancing."""

    name = "paths"
    version = f"{GENERATOR}+balance@v1"  # the positives' generator; what select balances by, beside them
    reads = ("hygiene", "plausibility")
    writes = outputs(PATHS_POSITIVES, PATHS_BALANCE)  # candidates: the select stage keeps some
    config = ("seed", "attribute_table", "targets", "paths")
    data = (*RENDERER_DATA, "paths.box_shapes")

    def extra_fingerprint(self, run: Run) -> object:
        return words_digest()

    def run(self, unit: Unit) -> None:
        res = PathResources.load(unit.cfg)
        evidence = unit.shared("plausibility", "evidence", lambda: _evidence(unit))
        rows: list[PositiveRow] = []
        for row in unit.records(HYGIENE_GRAPHS):
            unit.items_in += 1
            positives, rejects, stats = generate_positives(row.scene_graph(), unit.cfg, res, evidence)
            rows.extend(positives)
            unit.rejects.extend(rejects)
            unit.stats.update(stats)
        unit.write("positives", rows)
        unit.write("balance", (balance_row(r, res.table, res.words) for r in rows))

    def finish(self, run: Run, units: list[dict]) -> dict:
        """No positive from any image is the user's to fix (`EmptyInput`): every sample hangs off one."""
        if not sum(u["written"].get("positives", 0) for u in units):
            images = sum(u["items_in"] for u in units)
            reasons = "; ".join(f"{n} x {why}" for why, n in run.common_reasons(self.name))
            raise EmptyInput(
                f"no positive could be made from the {images} images kept"
                + (f" (commonest reasons: {reasons})" if reasons else "")
                + "; use scene graphs with named, boxed objects (and attributes or relations to tell alike ones apart)"
            )
        return {}

    def summarize(self, run: Run, units: list[dict]) -> dict:
        versions = PathResources.load(run.cfg).versions()
        versions.pop("generator")
        return {"data_versions": versions}
