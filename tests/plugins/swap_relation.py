"""Swap the relations of an object that has two: "the cup to the left of the plate and on the table" ->
"the cup on the plate and to the left of the table". A kind of text negative that needs no word: the
worked example of docs/extending.md (it would sit in `generators/text/`)."""

from __future__ import annotations

from collections.abc import Iterator

from hardneg.core.plugins import TEXT_NEGATIVES
from hardneg.core.records import PathEdge, PathNode
from hardneg.generators.text.context import Change
from hardneg.generators.text.sites import Site, SiteVocab
from hardneg.generators.text.types import Objects, TextNegativeType, map_node, usable


@TEXT_NEGATIVES.add("swap_relation")
class SwapRelation(TextNegativeType):
    label = "relations swapped"
    description = (
        "an object's two relations trade their objects (left of the plate and on the table -> on the plate and "
        "left of the table)"
    )
    rarity = 0  # only an `and` path gives a node two relations
    mix_weight = 500  # beside the paper's kinds' counts in its test split (swap_attribute: 525)
    part = "relation"  # what its sites change

    def sites(self, path: PathNode, vocab: SiteVocab, objects: Objects = None) -> Iterator[Site]:
        for i, n in enumerate(path.nodes()):
            if usable(objects, i) and len(n.relations) == 2 and n.relations[0].name != n.relations[1].name:
                yield Site(self.name, self.level(i), (i,), word=n.relations[0].name, other=n.relations[1].name)

    def apply(self, path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
        def put(n: PathNode) -> PathNode:
            first, second = n.relations
            swapped = (PathEdge(second.name, first.object), PathEdge(first.name, second.object))
            return PathNode(n.name, n.attributes, swapped, n.same, n.id)

        return map_node(path, site.nodes[0], put)

    def change(self, site: Site, replacement: str | None = None) -> Change:
        return Change(edges=frozenset({(site.nodes[0], 0), (site.nodes[0], 1)}))
