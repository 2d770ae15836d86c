"""The kinds of text negative: `language.negative_types` names them.

A kind is a `TextNegativeType` registered under its name (`@TEXT_NEGATIVES.add("replace_object")`). It
holds everything that differs from one kind to another:

- `sites`: where a path can be altered its way, as typed `Site`s at the kind's `level` (1 when the change
  is on the target, node 0; 2 on a related object). Image negatives reuse these sites for their kinds of
  the same name, with the path's editable grounded objects (`objects`, None where not editable);
- `apply`: the altered path; `change`: which facts of the path that alters, for the corpus context
  (`generators/text/context.py`);
- `needs_word`: whether the language backend chooses a word (a replacement) or none is needed (a swap);
  `refusal`: why a site that needs no word would not make a fair negative (the word tables' rules);
  `rarity`: kinds that few paths allow are tried first (`generators/text/sites.py`);
- `mix_weight`: its weight in the default target mix (`negative_mix.shares`, normalised): for the
  paper's kinds, their counts in FineCops-Ref's test split (its Table 10: 9,814 text negatives);
- `label` and `description`: what it is to a reader (the report and the review app).

The search, the checks (the altered path must be certified false of the image) and the wording are shared
(`generators/text/negatives.py`). Adding a kind is one file in `generators/text/` with its class, and a
test (docs/extending.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

from hardneg.core.plugins import TEXT_NEGATIVES
from hardneg.core.records import PathEdge, PathNode, SameEdge, SceneObject
from hardneg.generators.text.context import Change
from hardneg.generators.text.sites import Site, SiteVocab

Objects = Sequence[SceneObject | None] | None  # an image negative's editable objects, aligned with the nodes


def map_node(path: PathNode, index: int, fn: Callable[[PathNode], PathNode]) -> PathNode:
    """Rebuild `path` with node number `index` (in `PathNode.nodes()` order) replaced by `fn(node)`."""
    return _rebuilt(path, itertools.count(), index, fn)


def _rebuilt(n: PathNode, counter: Iterator[int], index: int, fn: Callable[[PathNode], PathNode]) -> PathNode:
    """`map_node` from `n` down, `counter` numbering the nodes as it goes (a module function: a nested one
    that calls itself makes a cycle). A subtree that does not hold node `index` is returned as it is (a
    path is frozen: an equal copy would only cost its construction)."""
    i = next(counter)
    rels = tuple(e if (o := _rebuilt(e.object, counter, index, fn)) is e.object else PathEdge(e.name, o)
                 for e in n.relations)  # fmt: skip
    same = tuple(s if (o := _rebuilt(s.object, counter, index, fn)) is s.object else SameEdge(s.category, o)
                 for s in n.same)  # fmt: skip
    if i == index:
        return fn(PathNode(n.name, n.attributes, rels, same, n.id))
    if all(a is b for a, b in zip(rels, n.relations, strict=True)) and all(
        a is b for a, b in zip(same, n.same, strict=True)
    ):
        return n
    return PathNode(n.name, n.attributes, rels, same, n.id)


def usable(objects: Objects, i: int) -> bool:
    """Whether node `i` may change: always for text, where its object is editable for an image."""
    return objects is None or objects[i] is not None


def node_pairs(path: PathNode, objects: Objects) -> Iterator[tuple[int, int]]:
    """(i, k), i < k, of two nodes that may change together: both usable, and two objects, not one."""
    for i, k in itertools.combinations(range(len(path.nodes())), 2):
        if not (usable(objects, i) and usable(objects, k)):
            continue
        if objects is not None and objects[i].id == objects[k].id:  # type: ignore[union-attr]
            continue
        yield i, k


class TextNegativeType:
    """One kind of text negative; see the module docstring."""

    name: ClassVar[str]  # set by the registry's decorator
    label: ClassVar[str]  # a few words for a reader ("object replaced")
    description: ClassVar[str]  # what the kind changes, with an example
    rarity: ClassVar[int]
    mix_weight: ClassVar[float]
    part: ClassVar[str]  # what a site of the kind changes: "object", "attribute" or "relation"
    needs_word: ClassVar[bool] = False

    @staticmethod
    def level(node: int) -> int:
        """1 when the change is on the target (node 0), 2 on a related object."""
        return 1 if node == 0 else 2

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        raise NotImplementedError

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        """The altered path (ids kept; the caller drops them)."""
        raise NotImplementedError

    def change(self, site: Site, replacement: str | None = None) -> Change:
        """What applying `site` (with `replacement`) changes, in the terms of `Context.touched`."""
        raise NotImplementedError

    def refusal(self, site: Site, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> str | None:
        """Why a site that needs no word would not make a sensible, fair negative, or None (the search then
        checks that the altered path says something else, is plausible, and is certified false)."""
        return None


def text_type(name: str) -> TextNegativeType:
    return TEXT_NEGATIVES.get(name, "language.negative_types")()


@TEXT_NEGATIVES.add("replace_object", order=10)
class ReplaceObject(TextNegativeType):
    label = "object replaced"
    description = "an object's name replaced by one of its kind that contradicts it (the cup -> the bowl)"
    rarity = 2
    mix_weight = 3951
    part = "object"
    needs_word = True

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        for i, n in enumerate(path.nodes()):
            if usable(objects, i) and (cat := vocab.object_category(n.name)) is not None:
                yield Site(self.name, self.level(i), (i,), word=n.name, category=cat)

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        def put(n: PathNode) -> PathNode:
            return PathNode(replacement, n.attributes, n.relations, n.same, n.id)  # type: ignore[arg-type]

        return map_node(path, site.nodes[0], put)

    def change(self, site: Site, replacement: str | None = None) -> Change:
        return Change(names=frozenset(site.nodes))


@TEXT_NEGATIVES.add("replace_attribute", order=20)
class ReplaceAttribute(TextNegativeType):
    label = "attribute replaced"
    description = "an attribute replaced by another of its category that contradicts it (white -> red)"
    rarity = 2
    mix_weight = 1725
    part = "attribute"
    needs_word = True

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        for i, n in enumerate(path.nodes()):
            if not usable(objects, i):
                continue
            for a in n.attributes:
                if (c := vocab.attribute_category(a)) is not None:
                    yield Site(self.name, self.level(i), (i,), word=a, category=c)

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        def put(n: PathNode) -> PathNode:
            attrs = tuple(replacement if a == site.word else a for a in n.attributes)
            return PathNode(n.name, attrs, n.relations, n.same, n.id)  # type: ignore[arg-type]

        return map_node(path, site.nodes[0], put)

    def change(self, site: Site, replacement: str | None = None) -> Change:
        return Change(attributes=frozenset({(site.nodes[0], replacement or "")}))


@TEXT_NEGATIVES.add("replace_relation", order=30)
class ReplaceRelation(TextNegativeType):
    label = "relation replaced"
    description = "a relation replaced by one that contradicts it (to the left of -> to the right of)"
    rarity = 1
    mix_weight = 1891
    part = "relation"
    needs_word = True

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        for i, n in enumerate(path.nodes()):
            if not usable(objects, i):
                continue
            for j, e in enumerate(n.relations):
                if (c := vocab.relation_category(e.name)) is not None:
                    yield Site(self.name, self.level(i), (i,), word=e.name, edge=j, category=c)

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        def put(n: PathNode) -> PathNode:
            rels = list(n.relations)
            rels[site.edge] = PathEdge(replacement, rels[site.edge].object)  # type: ignore[index, arg-type]
            return PathNode(n.name, n.attributes, tuple(rels), n.same, n.id)

        return map_node(path, site.nodes[0], put)

    def change(self, site: Site, replacement: str | None = None) -> Change:
        return Change(edges=frozenset({(site.nodes[0], site.edge or 0)}))


@TEXT_NEGATIVES.add("swap_object", order=40)
class SwapObject(TextNegativeType):
    label = "objects swapped"
    description = "two objects of the expression trade names (the cup on the plate -> the plate on the cup)"
    rarity = 1
    mix_weight = 1722
    part = "object"

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        nodes = path.nodes()
        for i, k in node_pairs(path, objects):
            if nodes[i].name != nodes[k].name:
                yield Site(self.name, self.level(i), (i, k))

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        i, k = site.nodes
        ni, nk = path.nodes()[i].name, path.nodes()[k].name
        out = map_node(path, i, lambda n: PathNode(nk, n.attributes, n.relations, n.same, n.id))
        return map_node(out, k, lambda n: PathNode(ni, n.attributes, n.relations, n.same, n.id))

    def change(self, site: Site, replacement: str | None = None) -> Change:
        return Change(names=frozenset(site.nodes))

    def refusal(self, site: Site, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> str | None:
        return vocab.names_swap_refusal(site, path, objects)


@TEXT_NEGATIVES.add("swap_attribute", order=50)
class SwapAttribute(TextNegativeType):
    label = "attributes swapped"
    description = (
        "two objects trade attributes of one category (the red cup and the white plate -> the white cup and the "
        "red plate)"
    )
    rarity = 0
    mix_weight = 525
    part = "attribute"

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        nodes = path.nodes()

        def attrs(k: int) -> tuple[str, ...]:  # an image's object may hold more attributes than its node says
            return nodes[k].attributes if objects is None else objects[k].attributes  # type: ignore[union-attr]

        for i, k in node_pairs(path, objects):
            for a, b, c in vocab.table.swap_pairs(nodes[i].attributes, nodes[k].attributes, attrs(i), attrs(k)):
                yield Site(self.name, self.level(i), (i, k), word=a, other=b, category=c)

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        i, k = site.nodes

        def put(old: str, new: str) -> Callable[[PathNode], PathNode]:
            return lambda n: PathNode(
                n.name, tuple(new if a == old else a for a in n.attributes), n.relations, n.same, n.id
            )

        return map_node(map_node(path, i, put(site.word, site.other)), k, put(site.other, site.word))  # type: ignore[arg-type]

    def change(self, site: Site, replacement: str | None = None) -> Change:
        i, k = site.nodes
        return Change(attributes=frozenset({(i, site.other or ""), (k, site.word or "")}))

    def refusal(self, site: Site, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> str | None:
        return vocab.attributes_swap_refusal(site, path)
