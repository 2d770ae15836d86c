"""Confusable distractor images for the TRICD export: the same names in a similar scene, by the graph.

TRICD's negatives are hard because the two images of a pair are alike: the caption's objects are in both,
and only its context (an attribute, a relation) tells them apart ("zebras fighting" against "zebras
eating"). A distractor drawn from the corpus is as hard only when it is chosen the same way, so a
candidate image J of the positive's split is ranked, best first, by

1. whether J shows the target's name at all (the detector cannot answer by the name alone);
2. how alike the two scenes are by the graph, the sum of
   - the share of the expression's other names (its partners) that J shows,
   - the share of the expression's relations that J stores for an object of the same name, whatever the
     partner ("a man holding a bag" for "the man holding an umbrella"),
   - `CorpusIndex.similarity`: the Jaccard index of the two images' names, plus half for one location.

The candidates come from the images that show the target's name, those that store one of the
expression's (name, relation) pairs (so that they are not missed in a large corpus), and, when too few,
images sharing the positive image's rarest other names (a motocross scene for "the dirt bike", not any
image with a sky). The stage then certifies them in rank order (`Certifier.nothing`), so the first ones kept
are the most confusable images in which the expression is certainly false.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from hardneg.core.config import SplitsConfig
from hardneg.core.records import PathNode
from hardneg.core.splits import split_of
from hardneg.exports.common import CorpusIndex, SortedIds, sample

Edge = tuple[str, str]  # (subject name, relation)


class RelationIndex:
    """Per image the (subject name, relation) pairs its graph stores, and images by (split, pair); filled
    while the rows stream into `CorpusIndex` (`watch`), so the corpus is still read once."""

    def __init__(self, splits: SplitsConfig) -> None:
        self.splits = splits
        self.edges: dict[str, frozenset[Edge]] = {}
        self.by_edge: dict[tuple[str, str, str], Sequence[str]] = defaultdict(list)  # SortedIds once read

    def watch(self, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The rows unchanged, each one's relation pairs recorded on the way."""
        for row in rows:
            objects = row["graph"].get("objects", {})
            pairs = frozenset((o["name"], r["name"]) for o in objects.values() for r in o.get("relations", []))
            image_id = row["image_id"]
            self.edges[image_id] = pairs
            split = split_of(image_id, self.splits)
            for name, relation in pairs:
                self.by_edge[(split, name, relation)].append(image_id)
            yield row
        self.by_edge = {k: SortedIds.of(v) for k, v in self.by_edge.items()}  # type: ignore[misc]


def path_edges(path: PathNode) -> frozenset[Edge]:
    """The (subject name, relation) pairs an expression states, over all its nodes."""
    return frozenset((n.name, e.name) for n in path.nodes() for e in n.relations)


def scene_score(index: CorpusIndex, relations: RelationIndex, i0: str, path: PathNode, j: str) -> tuple[int, float]:
    """How confusable image `j` is with the positive image `i0` for `path` (higher is harder): whether it
    shows the target's name, then the graph similarity of the scenes (see the module docstring)."""
    names = index.images[j].names
    partners = {n.name for n in path.nodes()[1:]} - {path.name}
    edges = path_edges(path)
    name_share = len(partners & names) / len(partners) if partners else 0.0
    edge_share = len(edges & relations.edges.get(j, frozenset())) / len(edges) if edges else 0.0
    return int(path.name in names), name_share + edge_share + index.similarity(i0, j)


def candidate_pool(
    index: CorpusIndex, relations: RelationIndex, i0: str, path: PathNode, k: int, *key: object
) -> set[str]:
    """At most about `k` candidate images of `i0`'s split (keyed random samples), `i0` left out."""
    split = index.images[i0].split
    pool = set(sample(index.by_name.get((split, path.name), []), k, *key, "name"))
    edges = sorted(path_edges(path))
    for name, relation in edges:
        found = relations.by_edge.get((split, name, relation), [])
        pool |= set(sample(found, max(1, k // len(edges)), *key, "edge", name, relation))
    others = sorted(index.images[i0].names - {path.name}, key=lambda n: (len(index.by_name.get((split, n), [])), n))
    for n in others:  # rarest first: the names that make the scene what it is
        if len(pool - {i0}) >= k:
            break
        pool |= set(sample(index.by_name.get((split, n), []), k - len(pool - {i0}), *key, "other", n))
    pool.discard(i0)
    return pool


def rank_distractors(
    index: CorpusIndex, relations: RelationIndex, p: dict[str, Any], path: PathNode, k: int, checked: int, seed: int
) -> list[str]:
    """The `checked` most confusable candidate distractors of positive `p`, best first (ties by image id)."""
    i0 = p["image_id"]
    pool = candidate_pool(index, relations, i0, path, k, seed, "tricd", p["id"])
    score = {j: scene_score(index, relations, i0, path, j) for j in pool}
    return sorted(pool, key=lambda j: (-score[j][0], -score[j][1], j))[:checked]
