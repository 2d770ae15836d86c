"""Negative expressions (SPEC 1.4): replace object / attribute / relation and swap object / attribute,
at level 1 (the change is on the target) and level 2 (on a related object).

Each negative is built as an altered *path*, kept only when the executor says it matches nothing in the
image's graph, and rendered with its positive's template. Replacement words come from the language
backend (an LLM, or the lexicon's same-category corpus vocabulary); swaps need no model and exchange two
parts of the same kind (two object names, or two attributes of one category).
"""

from __future__ import annotations

import itertools
import random
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from backends.language import Answer, LanguageBackend, ReplaceRequest
from core.attributes import AttributeTable
from core.executor import GraphIndex, execute
from core.records import PathEdge, PathNode, Reject, SameEdge, SceneGraph, TextNegative
from core.vocab import Lexicon, NameCategories
from generators.expressions import Renderer

GENERATOR = "negatives_text@v1"


def keyed_seed(*parts: object) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode())


def map_node(path: PathNode, index: int, fn: Callable[[PathNode], PathNode]) -> PathNode:
    """Rebuild `path` with node number `index` (in `PathNode.nodes()` order) replaced by `fn(node)`."""
    counter = itertools.count()

    def walk(n: PathNode) -> PathNode:
        i = next(counter)
        rels = tuple(PathEdge(e.name, walk(e.object)) for e in n.relations)
        same = tuple(SameEdge(s.category, walk(s.object)) for s in n.same)
        m = PathNode(n.name, n.attributes, rels, same, n.id)
        return fn(m) if i == index else m

    return walk(path)


@dataclass(slots=True, frozen=True)
class Site:
    """One way to alter a path: what to change, where, and at which negative level."""

    negative_type: str
    level: int
    nodes: tuple[int, ...]
    word: str | None = None  # replace: the word replaced
    edge: int | None = None  # replace_relation: which relation of the node
    category: str | None = None
    other: str | None = None  # swap_attribute: the attribute on the second node

    @property
    def part(self) -> str:
        return self.negative_type.split("_", 1)[1]


@dataclass(slots=True)
class NegativeContext:
    table: AttributeTable
    names: NameCategories
    lexicon: Lexicon
    renderer: Renderer
    vocab: dict[str, Counter]  # corpus vocabulary: "names", "attributes", "relations" -> counts
    seed: int
    per_positive: int = 1
    max_rounds: int = 3
    n_replacements: int = 5
    max_options: int = 40
    types: tuple[str, ...] = (
        "replace_object",
        "replace_attribute",
        "replace_relation",
        "swap_object",
        "swap_attribute",
    )

    def options(self, site: Site) -> tuple[str, ...]:
        """Same-category corpus vocabulary for a replace site, most frequent first."""
        if site.part == "object":
            pool = [n for n in self.vocab["names"] if self.names.category(n) == site.category]
        elif site.part == "attribute":
            pool = [a for a in self.vocab["attributes"] if self.table.category(a) == site.category]
        else:
            pool = [r for r in self.vocab["relations"] if self.lexicon.relation_category.get(r) == site.category]
            antonym = self.lexicon.antonyms.get(site.word or "")
            if antonym and antonym not in pool:
                pool.append(antonym)
        counts = {**self.vocab["names"], **self.vocab["attributes"], **self.vocab["relations"]}
        pool = sorted({p for p in pool if p != site.word}, key=lambda w: (-counts.get(w, 0), w))
        return tuple(pool[: self.max_options])

    def same_category(self, site: Site, word: str) -> bool:
        """A replacement must be of the replaced word's category (an LLM may answer a relation for an
        object); a relation's antonym always qualifies."""
        if site.part == "object":
            return self.names.category(word) == site.category
        if site.part == "attribute":
            return self.table.category(word) == site.category
        return self.lexicon.relation_category.get(word) == site.category or word == self.lexicon.antonyms.get(
            site.word or ""
        )

    def request_category(self, site: Site) -> str | None:
        return site.category if site.part == "attribute" else f"{site.part}: {site.category}"


def sites(path: PathNode, ctx: NegativeContext) -> list[Site]:
    """Every structurally possible alteration of a path, in a stable order."""
    nodes = path.nodes()
    out: list[Site] = []
    for i, n in enumerate(nodes):
        level = 1 if i == 0 else 2
        cat = ctx.names.category(n.name)
        if cat is not None:
            out.append(Site("replace_object", level, (i,), word=n.name, category=cat))
        for a in n.attributes:
            if (c := ctx.table.category(a)) is not None:
                out.append(Site("replace_attribute", level, (i,), word=a, category=c))
        for j, e in enumerate(n.relations):
            if (c := ctx.lexicon.relation_category.get(e.name)) is not None:
                out.append(Site("replace_relation", level, (i,), word=e.name, edge=j, category=c))
    for i, k in itertools.combinations(range(len(nodes)), 2):
        level = 1 if i == 0 else 2
        if nodes[i].name != nodes[k].name:
            out.append(Site("swap_object", level, (i, k)))
        for a in nodes[i].attributes:
            for b in nodes[k].attributes:
                c = ctx.table.category(a)
                if (
                    c is not None
                    and c == ctx.table.category(b)
                    and a != b
                    and a not in nodes[k].attributes
                    and b not in nodes[i].attributes
                ):
                    out.append(Site("swap_attribute", level, (i, k), word=a, other=b, category=c))
    return out


def apply_site(path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
    """The altered path (ids dropped: a negative grounds nothing)."""
    t = site.negative_type
    if t == "replace_object":
        out = map_node(path, site.nodes[0], lambda n: PathNode(replacement, n.attributes, n.relations, n.same, n.id))
    elif t == "replace_attribute":
        out = map_node(
            path,
            site.nodes[0],
            lambda n: PathNode(
                n.name, tuple(replacement if a == site.word else a for a in n.attributes), n.relations, n.same, n.id
            ),
        )
    elif t == "replace_relation":

        def swap_rel(n: PathNode) -> PathNode:
            rels = list(n.relations)
            rels[site.edge] = PathEdge(replacement, rels[site.edge].object)  # type: ignore[index, arg-type]
            return PathNode(n.name, n.attributes, tuple(rels), n.same, n.id)

        out = map_node(path, site.nodes[0], swap_rel)
    elif t == "swap_object":
        i, k = site.nodes
        ni, nk = path.nodes()[i].name, path.nodes()[k].name
        out = map_node(path, i, lambda n: PathNode(nk, n.attributes, n.relations, n.same, n.id))
        out = map_node(out, k, lambda n: PathNode(ni, n.attributes, n.relations, n.same, n.id))
    elif t == "swap_attribute":
        i, k = site.nodes

        def put(old: str, new: str) -> Callable[[PathNode], PathNode]:
            return lambda n: PathNode(
                n.name, tuple(new if a == old else a for a in n.attributes), n.relations, n.same, n.id
            )

        out = map_node(map_node(path, i, put(site.word, site.other)), k, put(site.other, site.word))  # type: ignore[arg-type]
    else:
        raise ValueError(f"unknown negative type {t!r}")
    return out.without_ids()


# Kinds that few paths allow come first, so every (type, level) is represented; the rest in keyed order.
RARITY = {"swap_attribute": 0, "swap_object": 1, "replace_relation": 1, "replace_attribute": 2, "replace_object": 2}


def _ordered_sites(positive: dict[str, Any], path: PathNode, ctx: NegativeContext) -> list[Site]:
    """Sites grouped by (type, level): rarer kinds and level 2 first, ties in a keyed random order."""
    rng = random.Random(keyed_seed(ctx.seed, "negatives", positive["id"]))
    groups: dict[tuple[str, int], list[Site]] = {}
    for s in sites(path, ctx):
        if s.negative_type in ctx.types:
            groups.setdefault((s.negative_type, s.level), []).append(s)
    draw = {k: rng.random() for k in sorted(groups)}
    keys = sorted(groups, key=lambda k: (RARITY[k[0]], -k[1], draw[k]))
    ordered: list[Site] = []
    for k in keys:
        rng.shuffle(groups[k])
        ordered.extend(groups[k])
    return ordered


def make_text_negatives(
    positives: list[dict[str, Any]],
    graphs: dict[str, SceneGraph],
    ctx: NegativeContext,
    backend: LanguageBackend,
) -> tuple[list[TextNegative], list[Reject], Counter]:
    """Up to `per_positive` negatives per positive, batching replace requests per round."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    made: list[TextNegative] = []
    indexes: dict[str, GraphIndex] = {}
    state = []
    for p in positives:
        path = PathNode.from_json(p["path"])
        if p["image_id"] not in indexes:
            indexes[p["image_id"]] = GraphIndex(graphs[p["image_id"]], ctx.table)
        state.append({"pos": p, "path": path, "todo": iter(_ordered_sites(p, path, ctx)), "made": 0, "seen": set()})

    for _round in range(ctx.max_rounds):
        pending: list[tuple[dict, Site, ReplaceRequest]] = []
        for st in state:
            while st["made"] < ctx.per_positive:
                site = next(st["todo"], None)
                if site is None:
                    break
                if site.negative_type.startswith("swap"):
                    neg = apply_site(st["path"], site)
                    if _keep(st, site, neg, None, indexes, ctx, backend, made, stats):
                        continue
                    stats[f"no_match_failed:{site.negative_type}"] += 1
                    continue
                options = ctx.options(site)
                if not options:  # the corpus has no other word of this category: nothing to ask
                    stats[f"no_alternative:{site.negative_type}"] += 1
                    continue
                req = ReplaceRequest(
                    key=f"{st['pos']['id']}:{site.negative_type}:{site.nodes}:{site.edge}:{site.word}",
                    expression=st["pos"]["expression"],
                    part=site.part,  # type: ignore[arg-type]
                    word=site.word or "",
                    category=ctx.request_category(site),
                    options=options,
                    n=ctx.n_replacements,
                )
                pending.append((st, site, req))
                break  # one outstanding request per positive per round
        if not pending:
            break
        by_key = {req.key: (st, site) for st, site, req in pending}

        def validate(req, values, by_key=by_key) -> str | None:
            st, site = by_key[req.key]
            idx = indexes[st["pos"]["image_id"]]
            usable = [v for v in values if ctx.same_category(site, v)]
            if not usable:
                return f"no replacement of category {req.category!r} among {', '.join(values)}"
            for v in usable:
                if execute(apply_site(st["path"], site, v), idx) == frozenset():
                    return None
            return f"every replacement still matches an object in the image ({', '.join(usable)})"

        answers: list[Answer] = backend.replace([req for _, _, req in pending], validate)
        for (st, site, _req), ans in zip(pending, answers, strict=True):
            if ans.values is None:
                stats[f"replace_failed:{site.negative_type}"] += 1
                rejects.append(
                    Reject(
                        "negatives",
                        ans.error or "no answer",
                        st["pos"]["image_id"],
                        st["pos"]["id"],
                        detail={
                            "negative_type": site.negative_type,
                            "word": site.word,
                            "raw": ans.raw,
                            "attempts": ans.attempts,
                        },
                    )
                )
                continue
            for v in ans.values:
                if not ctx.same_category(site, v):
                    continue
                neg = apply_site(st["path"], site, v)
                if _keep(st, site, neg, v, indexes, ctx, backend, made, stats):
                    break
    for st in state:
        stats["positives_with_negative" if st["made"] else "positives_without_negative"] += 1
    return made, rejects, stats


def _keep(st, site, neg_path, replacement, indexes, ctx, backend, made, stats) -> bool:
    pos = st["pos"]
    idx = indexes[pos["image_id"]]
    if execute(neg_path, idx):
        return False
    nid = TextNegative.make_id(pos["id"], site.negative_type, neg_path)
    if nid in st["seen"]:
        return False
    st["seen"].add(nid)
    expression = ctx.renderer.render_with(neg_path, pos["tuple_type"], pos["template"], idx)
    change: dict[str, Any] = {"nodes": list(site.nodes)}
    if site.word is not None:
        change["from"] = site.word
    if replacement is not None:
        change["to"] = replacement
    if site.other is not None:
        change["with"] = site.other
    if site.edge is not None:
        change["edge"] = site.edge
    made.append(
        TextNegative(
            id=nid,
            positive_id=pos["id"],
            image_id=pos["image_id"],
            width=pos["width"],
            height=pos["height"],
            path=neg_path,
            ori_type=pos["tuple_type"],
            level=pos["level"],
            negative_type=site.negative_type,
            negative_level=site.level,
            shuffle_index=list(site.nodes),
            change=change,
            expression=expression,
            template=pos["template"],
            bbox=tuple(pos["bbox"]),  # type: ignore[arg-type]
            generator=GENERATOR,
            backend=backend.version if replacement is not None else "none",
        )
    )
    st["made"] += 1
    stats[f"made:{site.negative_type}:L{site.level}"] += 1
    return True


def iter_keep_words(path: PathNode) -> Iterator[tuple[str, str]]:
    """(kind, phrase) of everything a rewrite must keep: names, attributes, relations, same categories."""
    for n in path.nodes():
        yield ("object", n.name)
        for a in n.attributes:
            yield ("attribute", a)
        for e in n.relations:
            yield ("relation", e.name)
        for s in n.same:
            yield ("category", s.category)


def replay(positive_path: PathNode, negative: dict[str, Any]) -> PathNode:
    """Re-apply a written negative's recorded `change` to its positive's path (for re-checking)."""
    ch = negative["change"]
    site = Site(
        negative["negative_type"],
        negative["negative_level"],
        tuple(ch["nodes"]),
        word=ch.get("from"),
        edge=ch.get("edge"),
        other=ch.get("with"),
    )
    return apply_site(positive_path, site, ch.get("to"))
