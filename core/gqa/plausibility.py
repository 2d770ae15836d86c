"""Plausibility learned from the scene graphs themselves: how often a name carries an attribute,
how often a (subject, relation, object) triple occurs, smoothed. A stage of its own, stored with the run.

Two uses:

- **a blind plausibility score** for SugarCREPE's refinement (`filters/scorers/plausibility.py`): the mean
  smoothed log-probability of a path's facts. It replaces the rule-based grammar score, which is 1.0 for
  every templated expression on real data and so tells nothing apart;
- **absurd swaps**: a swap is a fine negative when it is false, not when it is nonsense a blind model can
  reject without looking ("the kitchen in the microwave", "the shirtless shorts"). `absurd` refuses:
  * a triple never seen whose reverse is common: the relation has a direction for this pair (the
    microwave is in the kitchen; a cup is on the table, never a table on a cup);
  * a subject or object that is common yet never takes that relation in that role ("shorts wearing");
  * an attribute never seen on a common name although the counts expect it several times.
  Counts below the support thresholds decide nothing: a small corpus (the demo) refuses nothing here.

Smoothing: P(a | n) = (N(a, n) + B * P(a)) / (N(n) + B) with P(a) add-one over the attribute vocabulary,
and P(s, r, o) interpolates the relative frequency of the triple with the independence estimate
P(s | r) P(r) P(o | r), so an unseen but ordinary triple is not scored as impossible.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.rows import (
    HYGIENE_GRAPHS,
    HYGIENE_TALLIES,
    PLAUSIBILITY_ANNOTATIONS,
    PLAUSIBILITY_COUNTS,
    PLAUSIBILITY_FOLDCOUNTS,
    PLAUSIBILITY_PRIOR,
)
from hardneg.core.runner.stage import Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.splits import image_unit
from hardneg.core.words.table import Words, words_digest

# v2: the counts of each half of the corpus (cross-fitting); v3: annotations; v4: the prior of real graphs, names
# seen together; v5: box shapes; v6: how many images were counted (how common a name is at large); v7: the sum
# of the hygiene stage's tallies (a box's log area counted in millionths)
VERSION = "plausibility@v7"
B = 5.0  # pseudo-counts of the backoff distribution
LAMBDA = 0.8  # weight of a triple's own relative frequency against the independence estimate
MIN_SUPPORT = 50  # a name (or a subject/object in a role) seen fewer times than this decides nothing
MIN_REVERSE = 5  # the reverse triple must be this common for an unseen triple to be absurd
MIN_EXPECTED = 3.0  # an attribute never seen on a name is absurd only when this many were expected


@dataclass(slots=True)
class Counts:
    names: Counter = field(default_factory=Counter)
    attributes: Counter = field(default_factory=Counter)
    attribute_name: Counter = field(default_factory=Counter)  # (attribute, name)
    relations: Counter = field(default_factory=Counter)
    triples: Counter = field(default_factory=Counter)  # (subject, relation, object)
    subject_relation: Counter = field(default_factory=Counter)  # (subject, relation)
    relation_object: Counter = field(default_factory=Counter)  # (relation, object)
    # boxes of each name in graphs that annotate every kind of fact (names, attributes, relations), where the
    # absence of a fact is evidence: the run's, plus the prior's full graphs (`with_prior`); empty: `names`
    full: Counter = field(default_factory=Counter)

    def add(self, graph: SceneGraph) -> None:
        """Count `graph`'s names, attributes and edges (an edge to an object missing from the graph is not
        counted), by `Counter.update` over the graph's keys, not one key at a time."""
        objects = graph.objects
        names = [o.name for o in objects.values()]
        pairs = [(a, o.name) for o in objects.values() for a in o.attributes]
        triples = [
            (o.name, r.name, other.name)
            for o in objects.values()
            for r in o.relations
            if (other := objects.get(r.object)) is not None
        ]
        self.names.update(names)
        self.attributes.update(a for a, _ in pairs)
        self.attribute_name.update(pairs)
        self.relations.update(r for _, r, _ in triples)
        self.triples.update(triples)
        self.subject_relation.update((s, r) for s, r, _ in triples)
        self.relation_object.update((r, o) for _, r, o in triples)

    def __add__(self, other: Counts) -> Counts:
        """The counts of both (each half of the corpus counted once, the whole is their sum)."""
        return Counts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Counts)))

    def rows(self) -> Iterator[dict[str, Any]]:
        """JSON rows, sorted: stored by the plausibility stage."""
        for kind in ("names", "attributes", "attribute_name", "relations", "triples", "full"):
            c: Counter = getattr(self, kind)
            for key in sorted(c, key=str):
                yield {"kind": kind, "key": list(key) if isinstance(key, tuple) else key, "n": c[key]}

    @classmethod
    def from_rows(cls, rows: Iterable[dict[str, Any]]) -> Counts:
        """The counts of stored rows; each word held once (a million triples name a few thousand words)."""
        c = cls()
        for r in rows:
            c.put(r)
        return c.with_pairs()

    def put(self, row: dict[str, Any]) -> None:
        """One stored row's count (`from_rows`, `with_pairs` once all are in)."""
        key = tuple(map(sys.intern, row["key"])) if isinstance(row["key"], list) else sys.intern(row["key"])
        getattr(self, row["kind"])[key] = row["n"]

    def with_prior(self, rows: Iterable[dict[str, Any]]) -> Counts:
        """These counts plus the prior's pseudo-counts (`core/gqa/prior.py`: the plausibility stage's `prior`
        rows of kind "counts:<table>"), the (subject, relation) and (relation, object) pairs included."""
        prior, any_row = Counts(), False
        for r in rows:
            kind, _, table = r["kind"].partition(":")
            if kind == "counts":
                for key, n in zip(r["keys"], r["n"], strict=True):
                    prior.put({"kind": table, "key": key, "n": n})
                any_row = True
        prior.with_pairs()
        if any_row and not self.full:
            self.full = Counter(self.names)  # a graph of the run is what it is: its absent facts are evidence
        for f in fields(Counts):
            getattr(self, f.name).update(getattr(prior, f.name))
        return self

    def boxes(self, name: str) -> float:
        """Boxes of `name` in graphs where a fact's absence is evidence (`full`; `names` when not kept)."""
        return self.full[name] if self.full else self.names[name]

    def with_pairs(self) -> Counts:
        """The (subject, relation) and (relation, object) counts, from the triples (they are not stored)."""
        for (s, rel, o), n in self.triples.items():
            self.subject_relation[(s, rel)] += n
            self.relation_object[(rel, o)] += n
        return self


class Plausibility:
    def __init__(self, counts: Counts) -> None:
        self.c = counts
        self.total_attrs = sum(counts.attributes.values())
        self.total_triples = sum(counts.triples.values())

    def attribute_logp(self, attribute: str, name: str) -> float:
        c = self.c
        p_a = (c.attributes[attribute] + 1) / (self.total_attrs + len(c.attributes) + 1)
        return math.log((c.attribute_name[(attribute, name)] + B * p_a) / (c.boxes(name) + B))

    def triple_logp(self, s: str, r: str, o: str) -> float:
        c = self.c
        n_r = c.relations[r]
        v = len(c.names) + 1
        p_r = (n_r + 1) / (self.total_triples + len(c.relations) + 1)
        p_s = (c.subject_relation[(s, r)] + 1) / (n_r + v)
        p_o = (c.relation_object[(r, o)] + 1) / (n_r + v)
        independent = p_s * p_r * p_o
        direct = c.triples[(s, r, o)] / self.total_triples if self.total_triples else 0.0
        return math.log(LAMBDA * direct + (1 - LAMBDA) * independent)

    def facts(self, path: PathNode) -> Iterator[tuple[str, ...]]:
        """The path's facts: ("attr", a, name) and ("rel", s, r, o)."""
        for n in path.nodes():
            for a in n.attributes:
                yield ("attr", a, n.name)
            for e in n.relations:
                yield ("rel", n.name, e.name, e.object.name)

    def score(self, path: PathNode) -> float:
        """Mean smoothed log-probability of the path's facts (0.0 for a bare name)."""
        values = [
            self.attribute_logp(f[1], f[2]) if f[0] == "attr" else self.triple_logp(f[1], f[2], f[3])
            for f in self.facts(path)
        ]
        return sum(values) / len(values) if values else 0.0

    def absurd(self, path: PathNode) -> str | None:
        """Why the path states something the corpus says is nonsense, or None (see the module docstring)."""
        c = self.c
        for f in self.facts(path):
            if f[0] == "attr":
                _, a, n = f
                boxes = c.boxes(n)
                expected = boxes * c.attributes[a] / self.total_attrs if self.total_attrs else 0.0
                if c.attribute_name[(a, n)] == 0 and boxes >= MIN_SUPPORT and expected >= MIN_EXPECTED:
                    return f"'{a} {n}' is never seen, though {expected:.0f} were expected among {boxes:.0f} {n}"
                continue
            _, s, r, o = f
            if c.triples[(s, r, o)]:
                continue
            if (rev := c.triples[(o, r, s)]) >= MIN_REVERSE:
                return f"'{s} {r} {o}' is never seen, but '{o} {r} {s}' is seen {rev} times"
            if c.boxes(s) >= MIN_SUPPORT and c.subject_relation[(s, r)] == 0 and c.relations[r] >= MIN_SUPPORT:
                return f"'{s}' (seen {c.boxes(s):.0f} times) is never the subject of '{r}'"
            if c.boxes(o) >= MIN_SUPPORT and c.relation_object[(r, o)] == 0 and c.relations[r] >= MIN_SUPPORT:
                return f"'{o}' (seen {c.boxes(o):.0f} times) is never the object of '{r}'"
        return None


def fold_of(image_id: str) -> int:
    """Which half of the corpus an image is in (0 or 1), by its id: a blind scorer that judges an image's
    texts is fit on the other half, so it never counts the very annotation it judges as evidence."""
    return int(image_unit(image_id) * 2)


TALLY = "tally@v1"  # what `Tally` counts (and `Counts.add`, `AnnotationStats.add`): part of the hygiene stage's version
LOG_UNIT = 1_000_000  # a box's log area is tallied in millionths: integers sum alike in any order
COUNTED = ("names", "attributes", "attribute_name", "relations", "triples")  # the `Counts` tables a graph adds to


@dataclass(slots=True)
class Tally:
    """The corpus counts, made where the graphs are read anyway: the hygiene stage tallies the graphs of each
    shard as it cleans them (`rows`: `TallyRow`s), and the plausibility stage sums the shards' tallies (`sum`)
    instead of reading every graph again. The counts of each half of the corpus (`fold_of`) and how names are
    annotated (`AnnotationStats`), every one an integer (a box's log area in millionths, `LOG_UNIT`): the sum
    is the same however the corpus was sharded."""

    folds: tuple[Counts, Counts] = field(default_factory=lambda: (Counts(), Counts()))
    notes: AnnotationStats = field(default_factory=AnnotationStats)
    log_area: Counter = field(default_factory=Counter)  # name -> its boxes' log areas summed, in LOG_UNITs

    def add(self, graph: SceneGraph, words: Words) -> None:
        self.folds[fold_of(graph.image_id)].add(graph)
        self.notes.add(graph, words)
        image_area = graph.width * graph.height
        for o in graph.objects.values():
            if o.area > 0:
                self.log_area[o.name] += round(math.log(o.area / image_area) * LOG_UNIT)

    def rows(self) -> Iterator[dict[str, Any]]:
        for k, counts in enumerate(self.folds):
            for table in COUNTED:
                yield _table(f"counts:{table}", getattr(counts, table), k)
        for f in fields(AnnotationStats):
            yield _table(f"notes:{f.name}", self.log_area if f.name == "log_area" else getattr(self.notes, f.name))

    @classmethod
    def sum(cls, rows: Iterable[dict[str, Any]]) -> Tally:
        """The tally of the whole corpus from its shards' rows; the log areas back in natural units."""
        out = cls()
        for r in rows:
            kind, _, table = r["kind"].partition(":")
            if kind == "counts":
                into = getattr(out.folds[r["fold"]], table)
            else:
                into = out.log_area if table == "log_area" else getattr(out.notes, table)
            for key, n in zip(r["keys"], r["n"], strict=True):
                into[tuple(map(sys.intern, key)) if isinstance(key, list) else sys.intern(key)] += n
        out.notes.log_area = Counter({k: v / LOG_UNIT for k, v in out.log_area.items()})
        return out


def _table(kind: str, counts: Counter, fold: int | None = None) -> dict[str, Any]:
    """One table as a `TallyRow` (its zero counts left out)."""
    items = [(list(k) if isinstance(k, tuple) else k, n) for k, n in counts.items() if n]
    return {"kind": kind, "keys": [k for k, _ in items], "n": [n for _, n in items], "fold": fold}


class PlausibilityStage(Stage):
    """Corpus statistics of the cleaned graphs, for generation, refinement, swaps and the probes: the
    whole corpus (`counts`) and each half of it (`foldcounts`, rows with a `fold`) for cross-fitting; how
    names are annotated (`annotations`, `core/gqa/annotations.py`) for the paths stage; and the prior of
    real graphs as pseudo-counts (`prior`, `core/gqa/prior.py`: less the images of this run it counted),
    which the language, refine and paths stages add to the run's counts (the exports read the run's own).
    The counts are the sum of the hygiene stage's shard tallies (`Tally`); the stored graphs are scanned for
    their ids only, and the graphs of images the prior counted are the only ones built here."""

    name = "plausibility"
    version = VERSION
    reads = ("hygiene",)
    writes = outputs(PLAUSIBILITY_COUNTS, PLAUSIBILITY_FOLDCOUNTS, PLAUSIBILITY_ANNOTATIONS, PLAUSIBILITY_PRIOR)
    config = ("prior",)
    data = ("prior.file",)
    sharded = False

    def extra_fingerprint(self, run: Any) -> Any:
        return words_digest()  # the annotation statistics read the word tables' surfaces

    def run(self, unit: Unit) -> None:
        from hardneg.core.gqa.prior import Prior  # the prior module counts with this one's Counts

        words = Words.load()
        cfg = unit.cfg.prior
        prior = Prior.load(unit.cfg.resolve(cfg.file))
        tally = Tally.sum(unit.read_all(HYGIENE_TALLIES))
        folds, annotations = tally.folds, tally.notes
        unit.items_in = annotations.graphs["all"]
        # graphs of images the prior counted: counted once, by the run (the only graphs this stage parses)
        graphs = unit.records_all(HYGIENE_GRAPHS) if prior.images else ()
        overlap = [r.scene_graph() for r in graphs if r.image_id in prior.images]
        counts = folds[0] + folds[1]
        unit.write("counts", counts.rows())
        unit.write("foldcounts", ({**r, "fold": k} for k, c in enumerate(folds) for r in c.rows()))
        unit.write("annotations", annotations.rows())
        prior = prior.without(overlap, words)
        unit.write("prior", prior.rows(cfg.weight))
        unit.stats.update(names=len(counts.names), attributes=len(counts.attributes), triples=len(counts.triples))
        unit.stats.update(prior_images=len(prior.images), prior_images_left_out=len(overlap))
        unit.meta["prior"] = {"version": prior.version, "weight": cfg.weight, "images": len(prior.images)}

    def summarize(self, run: Any, units: list[dict[str, Any]]) -> dict[str, Any]:
        """The prior's version, for the manifest's data versions."""
        meta = units[0]["meta"]["prior"] if units else {}
        return {"data_versions": {"prior": meta.get("version")}, "prior": meta}


def load_plausibility(rows: Iterable[dict[str, Any]], prior: Iterable[dict[str, Any]] = ()) -> Plausibility:
    """The model of the run's counts (`counts` rows) plus the prior's pseudo-counts (`prior` rows)."""
    return Plausibility(Counts.from_rows(rows).with_prior(prior))


def corpus_notes(unit: Unit) -> AnnotationStats:
    """How the corpus annotates (the plausibility stage's `annotations`, plus the prior's), built once per
    worker for every stage that declares the plausibility stage: the language stage and the exports share it."""
    return unit.shared(
        "plausibility",
        "notes",
        lambda: AnnotationStats.from_rows(unit.read_all(PLAUSIBILITY_ANNOTATIONS)).with_prior(
            unit.read_all(PLAUSIBILITY_PRIOR)
        ),
    )


def load_fold_plausibility(
    rows: Iterable[dict[str, Any]], prior: Iterable[dict[str, Any]] = ()
) -> tuple[Plausibility, Plausibility]:
    """The models of the two halves of the corpus (`PlausibilityStage`'s `foldcounts`), each row counted
    as it is read (at GQA scale the rows held at once were 0.8 GiB), each plus the prior's pseudo-counts
    (the prior holds none of the run's images: `Prior.without`)."""
    folds = (Counts(), Counts())
    for r in rows:
        folds[r["fold"]].put(r)
    prior = list(prior)
    return Plausibility(folds[0].with_pairs().with_prior(prior)), Plausibility(folds[1].with_pairs().with_prior(prior))
