"""Clothes the graph leaves off people: a negative that names a piece of clothing may be true of one.

A graph boxes a shirt, a helmet or a uniform for some of the people it holds. "The red shirt" is false of
the annotated man in a white one and may be true of the man beside him, whose shirt nobody boxed; "the
ball to the right of a uniform" is false of the batter's uniform and may be true of the catcher's. A
positive is judged so by the paths rule `other_wearers` (`generators/paths/wearers.py`); a negative is
judged here, the same way and more strictly, since what is unknown of an unboxed piece may make it true:

- each annotated person who wears none of a name the negative gives a piece of clothing (`twins`, none
  smaller than a readable target) gets one, placed on them as the annotated one sits on its wearer, and
  with no attributes: its colour, its material, its size are unknown;
- in the graph with these twins the negative must still match nothing and be contradicted for every object
  that could carry it (`Certifier.uncontradicted`), as it must in the graph as annotated; a twin stands left
  of, right of, above or below anyone but the person who wears it ("the black shirt to the right of the man"
  is not said of the man's own shirt);
- where the graph annotates no one and its clothes lie apart (`apart`: a catcher's glove far from the
  batter's uniform), several people wear them unannotated and no negative naming them can be checked.
"""

from __future__ import annotations

from dataclasses import replace

from hardneg.core.certify import Certifier
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.geometry import direction
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.generators.paths.wearers import CLOTHING, apart, twins, wardrobe


class UnboxedClothes:
    """Why a negative naming a piece of clothing may be true of one the graph does not box (`doubt`); the
    graph with its twins is built once per image and set of clothing names."""

    def __init__(self, words: Words, table: AttributeTable, certifier: Certifier, min_area: float = 0.0) -> None:
        """`min_area`: the share of the image under which a twin is too small to read (`targets.min_area_frac`)."""
        self.words, self.table, self.min_area = words, table, min_area
        self.certifier = _Dressed(certifier)
        # (image, clothing names) -> (why no negative naming them can be checked, the graph with the twins)
        self._dressed: dict[tuple[str, frozenset[str]], tuple[str | None, GraphIndex | None]] = {}

    def doubt(self, path: PathNode, graph: SceneGraph) -> str | None:
        """For a negative `path` that matches nothing in `graph` and that the graph contradicts: why it may
        still be true of a piece of clothing someone wears unboxed, or None."""
        names = frozenset(n.name for n in path.nodes() if self.words.is_a(n.name, CLOTHING))
        if not names:
            return None
        if (key := (graph.image_id, names)) not in self._dressed:
            self._dressed[key] = self._dress(graph, names)
        unknown, index = self._dressed[key]
        if unknown is not None or index is None:
            return unknown
        bare = path.without_ids()
        if hit := sorted(execute(bare, index)):
            return f"true of {self._who(index.graph, hit[0])}"
        if (why := self.certifier.uncontradicted(bare, index.graph, index)) is not None:
            return f"{why}, once the clothes the graph leaves off its people are put on them"
        return None

    def _dress(self, graph: SceneGraph, names: frozenset[str]) -> tuple[str | None, GraphIndex | None]:
        """The graph with a twin of each annotated piece of clothing the negative may name on each person who
        wears none of its name; or why no negative naming them can be checked."""
        made: dict[str, SceneObject] = {}
        for name in sorted(names):
            for o in self.certifier.candidates(name, graph):
                if not self.words.is_a(o.name, CLOTHING):
                    continue
                if not wardrobe(graph, self.words).people(o.name) and (other := apart(o, graph, self.words)):
                    return (
                        f"'{o.name}' is worn, the graph annotates no one, and its clothes lie apart ({other.name} "
                        f"{other.id} far from the {o.name} {o.id}): which of the unannotated people wear what it "
                        "does not say"
                    ), None
                for twin, person in twins(o, graph, self.words, self.min_area):
                    made[twin.id] = replace(twin, attributes=())
                    self.certifier.wearer[twin.id] = person.id
        if not made:
            return None, None
        return None, GraphIndex(replace(graph, objects={**graph.objects, **made}), self.table)

    def _who(self, graph: SceneGraph, oid: str) -> str:
        """The object the executor matched: a twin said with the person who may wear it."""
        o = graph.objects[oid]
        if (person := self.certifier.wearer.get(oid)) is not None:
            return f"the {o.name} {graph.objects[person].name} {person} may wear unboxed"
        return f"{o.name} {oid}, once the clothes the graph leaves off its people are put on them"


class _Dressed(Certifier):
    """A certifier that knows who wears each twin: a piece of clothing stands in no side of the one who wears it
    (the boxes, one inside the other, cannot say so). It asks the words as the run's certifier does."""

    def __init__(self, base: Certifier) -> None:
        super().__init__(base.words, base.table, base.notes, base.small)
        self.wearer: dict[str, str] = {}  # twin id -> the person it is put on (ids are unique: target~person)

    def _not_related(self, o: SceneObject, relation: str, p: SceneObject) -> bool:
        worn = self.wearer.get(o.id) == p.id or self.wearer.get(p.id) == o.id
        if worn and direction(relation) is not None:
            return True
        return super()._not_related(o, relation, p)
