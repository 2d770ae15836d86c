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
   - how alike the two images are: the Jaccard index of their names, plus half for one location.

The candidates come from the images that show the target's name, those that store one of the
expression's (name, relation) pairs (so that they are not missed in a large corpus), and, when too few,
images sharing the positive image's rarest other names (a motocross scene for "the dirt bike", not any
image with a sky). The stage then certifies them in rank order (`Certifier.nothing`), so the first ones kept
are the most confusable images in which the expression is certainly false.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from hardneg.core.records import PathNode
from hardneg.core.rows import PositiveRow
from hardneg.exports.corpus import Corpus, Edge, sample


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


def rank_distractors(corpus: Corpus, p: PositiveRow, path: PathNode, k: int, checked: int, seed: int) -> list[str]:
    """The `checked` most confusable candidate distractors of positive `p`, best first (ties by image id).
    The pool is scored with arrays (`Scoring`): scored one candidate at a time in Python, it was a third of
    the export's time on a GQA-sized corpus."""
    i0 = p.image_id
    pool = candidate_pool(corpus, i0, path, k, seed, "tricd", p.id)
    if not pool:
        return []
    partners = {n.name for n in path.nodes()[1:]} - {path.name}
    return Scoring.of(corpus).best(i0, pool, path.name, partners, path_edges(path), checked)


class Scoring:
    """The corpus index as arrays, for scoring candidate pools: the images numbered in id order, each image's
    names and (name, relation) pairs as runs of integers, its location as a number. Built once per corpus
    (`of`): 20 MiB at 75,000 images."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus, self.ids = corpus, sorted(corpus.images)
        self.number = {j: i for i, j in enumerate(self.ids)}
        self.name_ids: dict[str, int] = {}
        places: dict[str | None, int] = {None: -1}
        names: list[int] = []
        name_ends, edges, edge_ends, location = [], [], [], []
        for j in self.ids:
            info = corpus.images[j]
            names += [self.name_ids.setdefault(n, len(self.name_ids)) for n in info.names]
            name_ends.append(len(names))
            edges += corpus.edges.get(j, ())
            edge_ends.append(len(edges))
            location.append(places.setdefault(info.location, len(places) - 1))
        self.names, self.name_at = np.array(names, np.int32), np.array([0, *name_ends], np.int64)
        self.edges, self.edge_at = np.array(edges, np.int32), np.array([0, *edge_ends], np.int64)
        self.location, self.n_names = np.array(location, np.int32), np.diff(self.name_at)

    @classmethod
    def of(cls, corpus: Corpus) -> Scoring:
        got = corpus.derived.get(cls.__name__)
        if got is None:
            got = corpus.derived[cls.__name__] = cls(corpus)
        return got

    def best(self, i0: str, pool: Iterable[str], target: str, partners: set[str], edges: frozenset[Edge],
             checked: int) -> list[str]:  # fmt: skip
        """The `checked` best of `pool` for an expression about `target` (with `partners` and `edges`) on
        image `i0`: showing `target` first, then by the highest score of the module docstring (summed in the
        order it lists the parts, so the floats of a loop over the candidates), then by the lowest image id."""
        rows = np.sort(np.fromiter(map(self.number.__getitem__, pool), np.int64))
        x = self.number[i0]
        name_seg, name_ix = _runs(self.name_at, rows)
        edge_seg, edge_ix = _runs(self.edge_at, rows)
        names, n = self.names[name_ix], len(rows)
        flags = np.zeros(len(self.name_ids), np.int8)  # 1: a name of i0; 2: a partner; 4: the target
        flags[self.names[self.name_at[x] : self.name_at[x + 1]]] |= 1
        flags[[self.name_ids[m] for m in partners if m in self.name_ids]] |= 2
        if target in self.name_ids:
            flags[self.name_ids[target]] |= 4
        got = flags[names]
        common = np.bincount(name_seg, weights=got & 1, minlength=n)
        shown = np.bincount(name_seg, weights=(got >> 1) & 1, minlength=n)
        absent = np.bincount(name_seg, weights=got >> 2, minlength=n) == 0
        numbers = np.array(sorted(self.corpus.edge_numbers(edges)), np.int32)
        stored = np.bincount(edge_seg, weights=np.isin(self.edges[edge_ix], numbers), minlength=n)
        zero = np.zeros(n)
        name_share = shown / len(partners) if partners else zero
        edge_share = stored / len(edges) if edges else zero
        union = self.n_names[x] + self.n_names[rows] - common
        alike = np.divide(common, union, out=zero.copy(), where=union > 0)
        alike += np.where((self.location[rows] == self.location[x]) & (self.location[x] >= 0), 0.5, 0.0)
        order = np.lexsort((rows, -(name_share + edge_share + alike), absent))  # by absent, then score, then id
        return [self.ids[r] for r in rows[order[:checked]].tolist()]


def _runs(ends: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the runs `ends[r]:ends[r + 1]` of each of `rows`: each element's position in `rows`, and its index."""
    starts, lengths = ends[rows], ends[rows + 1] - ends[rows]
    seg = np.repeat(np.arange(len(rows)), lengths)
    return seg, np.arange(int(lengths.sum())) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
