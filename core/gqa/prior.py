"""What real scene graphs say, for runs too small to say it themselves: counts from thousands of real
images, shipped as versioned package data (`templates/prior.v2.json`) and combined with a run's own counts.

Every rule that reads the corpus (a changed fact must be attested, an absurd swap is refused, the blind
plausibility scorer of refinement, a name that comes in many, a name usually seen beside another) reads
the run's counts *plus the prior's*, the prior as pseudo-counts:

    N(x) = n_run(x) + (W / I_table) * n_prior(x)

`W` (`prior.weight`, default 1,000) is how many images the prior speaks as, and `I_table` how many images
the prior's count was made over, or `W` where that is more (a table of 99 images speaks as 99). So every
count of the prior weighs as `W` images would, whatever it was counted from, and a run of `R` images has
the share `R / (R + W)` of every count: ten images lean on the prior (1%), a hundred mostly (9%), GQA
train's 75,000 on themselves (99%). `prior.weight: 0` is the run's own counts alone.

Which images a count was made over depends on its key, not only its table. The prior reads two kinds of
graph: full ones, and graphs reduced to a few hundred names (`partial`) with their attributes stripped.
Attributes are counted over the full graphs; a name the reduced graphs annotate (`man`, `ball`), and a
relation or a co-occurrence of two such names, over every graph; any other name (`bat`, `pitcher`), and
anything that involves one, over the full graphs alone, since the reduced ones could never annotate it.
So "bat" seen in one of 99 full graphs counts as one image, not as one in 8,216, and "of the images
holding a ball, the share that hold a bat" is counted over the full graphs (`AnnotationStats.holding`).

An image the prior counted is counted once: a run over it (the prior's own source, or a sample of it)
takes that image's counts out of the prior (`Prior.without`), so a run never sees its own annotations
twice and a blind scorer never judges an annotation by itself.

`benchmarks/build_prior.py` rebuilds the file from scene-graph files, each graph validated and cleaned as
a run does it (`core/gqa/loader.py`, `core/gqa/hygiene.py`) and counted as the plausibility stage counts
it (`Counts.add`, `AnnotationStats.add`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.records import SceneGraph
from hardneg.core.words.table import Words

FORMAT = "prior@v2"  # the file's layout; the file's own `version` names its content. v2: `described` and
# `partial` notes (each count scaled by the images that could annotate its key)
DESCRIBED = frozenset({"attributes", "attribute_name", "full"})  # the tables counted over the full graphs only
DERIVED = frozenset({"subject_relation", "relation_object"})  # made from the triples where they are read
NAME_TABLES = ("images", "multi", "boxes", "printed", "described")  # name -> count, stored as they are


def _scale(weight: float, images: int) -> float:
    """A table of `images` speaks as `weight` images, or as itself when it holds fewer."""
    return min(weight, images) / images if images > 0 else 0.0


def _graph_counts(graph: SceneGraph, described: bool) -> Counts:
    """What one graph adds to the prior's counts: a full graph (`described`) its attributes and its boxes
    as `full` (where a fact's absence is evidence); a reduced one its names and relations only."""
    c = Counts()
    c.add(graph)
    if described:
        c.full = Counter(c.names)
    else:
        c.attributes.clear()
        c.attribute_name.clear()
    return c


def _update(into: Counts, more: Counts) -> None:
    for f in fields(Counts):
        getattr(into, f.name).update(getattr(more, f.name))


def _less(a: Counter, b: Counter) -> Counter:
    """`a - b` key by key, what stays above zero."""
    return Counter({k: v - b[k] for k, v in a.items() if v - b[k] > 0})


@dataclass(slots=True)
class Prior:
    """Counts of real scene graphs: `counts` (names, attributes, relations: `Counts`), `notes` (how names
    are annotated, with the names seen together: `AnnotationStats`), and which images they were counted
    over (`images`; `described`: the ones whose attributes were counted)."""

    version: str = "prior@none"
    counts: Counts = field(default_factory=Counts)
    notes: AnnotationStats = field(default_factory=AnnotationStats)
    images: set[str] = field(default_factory=set)
    described: set[str] = field(default_factory=set)
    sources: list[str] = field(default_factory=list)

    # -- building ------------------------------------------------------------------------------------

    def add(self, graph: SceneGraph, words: Words, described: bool) -> None:
        """Count one graph (once: a second graph of an image already counted is skipped). `described`:
        its attributes are annotated and counted (a graph whose attributes were stripped says nothing about
        which attributes a name carries)."""
        if graph.image_id in self.images:
            return
        self.images.add(graph.image_id)
        if described:
            self.described.add(graph.image_id)
        self.notes.add(graph, words, described)
        if not described:  # a reduced graph: the names it holds are names such graphs annotate
            for o in graph.objects.values():
                self.notes.partial[o.name] = 1
        _update(self.counts, _graph_counts(graph, described))

    def without(self, graphs: Iterable[SceneGraph], words: Words) -> Prior:
        """The prior less the counts of `graphs` it counted (a run over images the prior holds): each
        count is lowered by what the graph adds to it, never below zero."""
        counts, notes, images = Counts(), AnnotationStats(), set()
        for g in graphs:
            if g.image_id in self.images and g.image_id not in images:
                images.add(g.image_id)
                notes.add(g, words, g.image_id in self.described)
                _update(counts, _graph_counts(g, g.image_id in self.described))
        if not images:
            return self
        out = Prior(self.version, images=self.images - images, described=self.described - images)
        out.sources = list(self.sources)
        for f in fields(Counts):
            setattr(out.counts, f.name, _less(getattr(self.counts, f.name), getattr(counts, f.name)))
        out.notes.partial = Counter(self.notes.partial)  # the names reduced graphs annotate: a vocabulary
        for f in fields(AnnotationStats):
            if f.name not in ("log_area", "partial"):
                setattr(out.notes, f.name, _less(getattr(self.notes, f.name), getattr(notes, f.name)))
        # a name's summed log area goes with its boxes: kept where boxes are left
        out.notes.log_area = Counter(
            {k: v - notes.log_area[k] for k, v in self.notes.log_area.items() if out.notes.boxes[k] > 0}
        )
        return out

    # -- weighing ------------------------------------------------------------------------------------

    def scales(self, weight: float) -> tuple[float, float]:
        """(scale of the tables counted over every graph, scale of the tables counted over the full ones):
        `min(W, I_table) / I_table`."""
        return _scale(weight, len(self.images)), _scale(weight, len(self.described))

    def rows(self, weight: float) -> Iterator[dict[str, Any]]:
        """The prior as pseudo-counts for a run (`PriorRow`s, one per table: kind, keys, counts), each count
        scaled to speak as `weight` images over the images that could annotate its key (the module
        docstring); nothing when the weight is 0."""
        if weight <= 0:
            return
        every, full = self.scales(weight)
        partial = self.notes.partial

        def of_names(*names: str) -> float:  # counted over every graph only where each name is a partial one
            return every if all(partial[n] for n in names) else full

        def scale(kind: str, key: Any) -> float:
            table = kind.partition(":")[2]
            if kind == "notes:partial":
                return 1.0  # a vocabulary, not a count
            if kind == "notes:graphs":
                return full if key == "described" else every
            if table in DESCRIBED or kind == "notes:described":
                return full
            if kind == "counts:relations":
                return every
            if kind == "counts:triples":
                return of_names(key[0], key[2])
            if isinstance(key, tuple):  # two names seen together
                return of_names(*key)
            return of_names(key.partition("\t")[0])  # a name, or a name's box bin ("<name>\t<bin>")

        for kind, table in (
            *((f"counts:{f.name}", getattr(self.counts, f.name)) for f in fields(Counts) if f.name not in DERIVED),
            *((f"notes:{f.name}", getattr(self.notes, f.name)) for f in fields(AnnotationStats)),
        ):
            scaled = [(k, table[k] * x) for k in sorted(table, key=str) if (x := scale(kind, k)) > 0 and table[k]]
            if scaled:
                yield {
                    "kind": kind,
                    "keys": [list(k) if isinstance(k, tuple) else k for k, _ in scaled],
                    "n": [round(n, 4) for _, n in scaled],
                }

    # -- the file ------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        c, a = self.counts, self.notes
        return {
            "format": FORMAT,
            "version": self.version,
            "sources": self.sources,
            "images": sorted(self.images),
            "described": sorted(self.described),
            "counts": {
                "names": dict(sorted(c.names.items())),
                "attributes": dict(sorted(c.attributes.items())),
                "relations": dict(sorted(c.relations.items())),
                "full": dict(sorted(c.full.items())),
                "attribute_name": [[*k, n] for k, n in sorted(c.attribute_name.items())],
                "triples": [[*k, n] for k, n in sorted(c.triples.items())],
            },
            "notes": {
                **{kind: dict(sorted(getattr(a, kind).items())) for kind in NAME_TABLES},
                "partial": sorted(a.partial),
                "log_area": {k: round(v, 3) for k, v in sorted(a.log_area.items())},
                "together": [[*k, n] for k, n in sorted(a.together.items())],
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Prior:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a prior of format {FORMAT}: {data.get('format')!r}")
        c, a = data["counts"], data["notes"]
        counts = Counts(
            names=Counter(c["names"]),
            attributes=Counter(c["attributes"]),
            relations=Counter(c["relations"]),
            full=Counter(c["full"]),
            attribute_name=Counter({(x, n): k for x, n, k in c["attribute_name"]}),
            triples=Counter({(s, r, o): k for s, r, o, k in c["triples"]}),
        ).with_pairs()
        notes = AnnotationStats(
            **{kind: Counter(a[kind]) for kind in (*NAME_TABLES, "log_area")},
            together=Counter({(x, y): k for x, y, k in a["together"]}),
            graphs=Counter({"all": len(data["images"]), "described": len(data["described"])}),
            partial=Counter(dict.fromkeys(a["partial"], 1)),
        )
        return cls(data["version"], counts, notes, set(data["images"]), set(data["described"]), list(data["sources"]))

    @classmethod
    def load(cls, path: Path) -> Prior:
        """The prior in `path` (read once per process and file content)."""
        return _load(str(path), path.stat().st_mtime_ns)

    def write(self, path: Path) -> None:
        path.write_bytes(orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS) + b"\n")


@functools.lru_cache(maxsize=4)
def _load(path: str, _mtime: int) -> Prior:
    return Prior.from_json(orjson.loads(Path(path).read_bytes()))
