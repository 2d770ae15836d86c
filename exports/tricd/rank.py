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
   - `Corpus.similarity`: the Jaccard index of the two images' names, plus half for one location.

The candidates come from the images that show the target's name, those that store one of the
expression's (name, relation) pairs (so that they are not missed in a large corpus), and, when too few,
images sharing the positive image's rarest other names (a motocross scene for "the dirt bike", not any
image with a sky). The stage then certifies them in rank order (`Certifier.nothing`), so the first ones kept
are the most confusable images in which the expression is certainly false.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Any

from hardneg.core.records import PathNode
from hardneg.exports.corpus import Corpus, Edge, likeness, sample


def path_edges(path: PathNode) -> frozenset[Edge]:
    """The (subject name, relation) pairs an expression states, over all its nodes."""
    return frozenset((n.name, e.name) for n in path.nodes() for e in n.relations)


def candidate_pool(corpus: Corpus, i0: str, path: PathNode, k: int, *key: object) -> set[str]:
    """At most about `k` candidate images of `i0`'s split (keyed random samples), `i0` left out."""
    split = corpus.images[i0].split
    pool = set(sample(corpus.by_name.get((split, path.name), []), k, *key, "name"))
    edges = sorted(path_edges(path))
    for name, relation in edges:
        found = corpus.by_edge.get((split, name, relation), [])
        pool |= set(sample(found, max(1, k // len(edges)), *key, "edge", name, relation))
    others = sorted(corpus.images[i0].names - {path.name}, key=lambda n: (len(corpus.by_name.get((split, n), [])), n))
    for n in others:  # rarest first: the names that make the scene what it is
        if len(pool - {i0}) >= k:
            break
        pool |= set(sample(corpus.by_name.get((split, n), []), k - len(pool - {i0}), *key, "other", n))
    pool.discard(i0)
    return pool


def rank_distractors(corpus: Corpus, p: dict[str, Any], path: PathNode, k: int, checked: int, seed: int) -> list[str]:
    """The `checked` most confusable candidate distractors of positive `p`, best first (ties by image id).
    What the score reads of the path is taken once, not per candidate (hundreds of candidates a positive;
    this loop was a quarter of the export's time on a GQA-sized corpus)."""
    i0 = p["image_id"]
    pool = candidate_pool(corpus, i0, path, k, seed, "tricd", p["id"])
    target, edges = path.name, path_edges(path)
    numbers = sorted(corpus.edge_numbers(edges))
    partners = frozenset({n.name for n in path.nodes()[1:]} - {target})
    n_partners, n_edges = len(partners), len(edges)
    scored, images, edges_of, x = [], corpus.images, corpus.edges, corpus.images[i0]
    for j in pool:
        y = images[j]
        names = y.names
        name_share = len(partners & names) / n_partners if n_partners else 0.0
        edge_share = shared(numbers, edges_of.get(j, ())) / n_edges if n_edges else 0.0
        scored.append((target not in names, -(name_share + edge_share + likeness(x, y)), j))
    return [j for _, _, j in heapq.nsmallest(checked, scored)]


def shared(numbers: list[int], have: tuple[int, ...]) -> int:
    """How many of `numbers` the sorted `have` holds: a binary search for each of the path's few pairs, not
    a walk over the image's dozens (twice as fast)."""
    n = 0
    for x in numbers:
        i = bisect_left(have, x)
        n += i < len(have) and have[i] == x
    return n
