"""The path search's work bound per image: a count of steps, never a time.

Within the ingest limits (`inputs.max_*`) one image may still hold a thousand objects of one name, and
the search's work grows with their pairs: each hop's mask tests every distractor against every object the
hop's child matches, for every target. `StepBudget` counts that work before it is done, in steps, and
stops the image's search past `paths.max_image_steps` (`SearchBudgetSpent`); `generate_positives` keeps
what was found so far and counts the image in the paths stage's `budget_exhausted`. A count stops the
search at the same place on every machine, shard and resume; real images use a small share of it.

A step is one unit of the search's work, counted as an upper bound from set sizes: a pair of objects
compared (a direction the boxes decide or a shared attribute may compare every pair; a stored edge is a
set lookup), an attribute subset or an out-edge listed, a candidate tried.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from hardneg.core.executor import GraphIndex
from hardneg.core.geometry import direction
from hardneg.core.records import PathNode


class SearchBudgetSpent(Exception):
    """The image's step budget (`paths.max_image_steps`) is spent: its search stops where it stands."""


def _children(path: PathNode) -> list[tuple[str | None, PathNode]]:
    """(relation, child) of each relation edge and (None, child) of each `same` edge."""
    return [(e.name, e.object) for e in path.relations] + [(None, s.object) for s in path.same]


class StepBudget:
    """The steps one image's search has spent, and what its kinds of work cost."""

    def __init__(self, index: GraphIndex, max_steps: int) -> None:
        self.index = index
        self.max_steps = max_steps
        self.spent = 0
        self.edge_counts = Counter(r.name for o in index.graph.objects.values() for r in o.relations)

    def spend(self, steps: int) -> None:
        """Count `steps` of work about to be done; raise `SearchBudgetSpent` past the budget."""
        self.spent += steps
        if self.spent > self.max_steps:
            raise SearchBudgetSpent

    def pairs(self, relation: str | None, n: int, m: int) -> int:
        """Testing `n` objects against a set of `m` (`GraphIndex.related`; a `same` edge when `relation`
        is None): every pair for a direction the boxes decide or a shared attribute; one set lookup per
        object, plus at most the stored edges of that relation, for a stored edge."""
        if relation is not None and not (self.index.geometry and direction(relation)):
            return n + min(n * m, self.edge_counts[relation])
        return n + n * m

    def execution(self, path: PathNode, size: Callable[[PathNode], int | None]) -> int:
        """`execute(path)`: each object of a node's name, those with its attributes each tested against what
        its child matches (`size(child)` where known, else every object of the child's name), and the
        children's own."""
        total = self.index.name_count(path.name)
        n = self._with_attributes(path) if path.relations or path.same else 0
        for relation, child in _children(path):
            m = size(child)
            total += self.pairs(relation, n, self.index.name_count(child.name) if m is None else m)
            total += self.execution(child, size)
        return total

    def _with_attributes(self, path: PathNode) -> int:
        """How many objects of the node's name carry its attributes (what `execute` filters first)."""
        objects = self.index.by_name.get(path.name, ())
        if not path.attributes:
            return len(objects)
        need, attrs = frozenset(path.attributes), self.index.attrs
        return sum(need <= attrs[oid] for oid in objects)

    def level(self, path: PathNode) -> int:
        """`path_level`: the name alone, each attribute alone, and each edge with its child's bare name,
        which matches every object of that name."""
        n = self.index.name_count(path.name)
        total = n * (1 + len(path.attributes))
        for relation, child in _children(path):
            m = self.index.name_count(child.name)
            total += m + self.pairs(relation, n, m)
        return total
