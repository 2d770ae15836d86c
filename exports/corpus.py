"""The corpus as the export stages see it: one light index per run, and graphs read by their place.

One pass over the cleaned graphs (`Corpus.build`) keeps, per image, its split, location and names, its
(name, attribute) and (name, relation) pairs, and where its line lies in the hygiene stage's files; and
images by (split, name), (split, name, attribute) and (split, name, relation), to draw candidate images
from. Every export stage run in one process takes the same index (`corpus(unit)`, built once for the
hygiene output's digest and the split proportions), so the corpus is parsed once per run, not once per
export.

`GraphChecks` then runs checks registered per image id in rounds: each round reads only the lines of the
images with checks, in file order, parses each once and runs its checks on it. A check may register more
checks (the next candidate once the first failed, an image set once a swap is certified); those run in
the same round when their image's line is still ahead, else in the next. So a search certifies candidates in
order and stops at the first that passes, instead of certifying every candidate it might have wanted.

A distractor or second image is always taken from the first image's split (`core/splits.py`), so no
image of one split shows up in another's records.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import os
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from hardneg.core.certify import Certifier
from hardneg.core.config import RunConfig, SplitsConfig
from hardneg.core.executor import GraphIndex
from hardneg.core.gqa.plausibility import corpus_notes
from hardneg.core.io import file_digest
from hardneg.core.records import SceneGraph, keyed_seed
from hardneg.core.rows import GraphRow
from hardneg.core.runner.stage import Unit
from hardneg.core.schema import to_record
from hardneg.core.splits import split_of
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words

Edge = tuple[str, str]  # (subject name, relation)
Place = tuple[int, int, int]  # (file number, start, end) of an image's line
Check = Callable[[SceneGraph, GraphIndex], None]


@dataclass(slots=True, frozen=True)
class ImageInfo:
    split: str
    location: str | None
    names: frozenset[str]


class SortedIds(Sequence[str]):
    """Distinct image ids in sorted order, with at most one left out, never copied: what `sample` draws from.

    The corpus index keeps its image lists in this form, so drawing a few candidates for one positive costs
    the few draws, not a sort of every image of the split that shows the name (which, once per positive,
    made the exports quadratic in the corpus)."""

    __slots__ = ("_ids", "_skip")

    def __init__(self, ids: tuple[str, ...], skip: int | None = None) -> None:
        self._ids, self._skip = ids, skip

    @classmethod
    def of(cls, ids: Iterable[str]) -> SortedIds:
        return cls(tuple(sorted(set(ids))))

    def without(self, image_id: str) -> SortedIds:
        """These ids less `image_id` (itself when it is not one of them)."""
        j = bisect.bisect_left(self._ids, image_id)
        return (
            SortedIds(self._ids, j) if self._skip is None and j < len(self._ids) and self._ids[j] == image_id else self
        )

    def __len__(self) -> int:
        return len(self._ids) - (self._skip is not None)

    def __iter__(self) -> Iterator[str]:
        if self._skip is None:
            return iter(self._ids)
        return itertools.chain(self._ids[: self._skip], self._ids[self._skip + 1 :])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        return self._ids[i + 1 if self._skip is not None and i >= self._skip else i]


NO_IDS = SortedIds(())


def sample(ids: Iterable[str], k: int, *key: object) -> list[str]:
    """At most `k` of `ids`, a keyed random choice (the same every run, whatever the order of `ids`)."""
    pool = ids if isinstance(ids, SortedIds) else sorted(set(ids))
    if len(pool) <= k:
        return list(pool)
    if isinstance(pool, SortedIds) and pool._skip is None:  # the same items, indexed in C: the same draw
        pool = pool._ids
    return sorted(random.Random(keyed_seed(*key)).sample(pool, k))


def drawn(items: Sequence[Any], *key: object) -> Iterator[Any]:
    """`items` in a keyed random order, drawn as they are taken: a search that stops at its first few hits
    pays for those, not for shuffling every corpus name per item (a Fisher-Yates shuffle run forwards, only
    the positions it swapped kept)."""
    rng, moved = random.Random(keyed_seed(*key)), {}
    for i in range(len(items)):
        j = i + rng.randrange(len(items) - i)
        yield moved.get(j, items[j])
        moved[j] = moved.get(i, items[i])


class Corpus:
    """The one pass over the cleaned graphs (see the module docstring)."""

    def __init__(self, splits: SplitsConfig, files: Sequence[Path] = ()) -> None:
        self.splits, self.files = splits, list(files)
        self.images: dict[str, ImageInfo] = {}
        self.edge_ids: dict[Edge, int] = {}  # each (name, relation) pair of the corpus, numbered
        self.edges: dict[str, tuple[int, ...]] = {}  # an image's pairs by number: a tuple, a sixth of a set's memory
        self.places: dict[str, Place] = {}
        self.by_name: dict[tuple[str, str], Sequence[str]] = defaultdict(list)  # SortedIds once built
        self.by_pair: dict[tuple[str, str, str], Sequence[str]] = defaultdict(list)
        self.by_edge: dict[tuple[str, str, str], Sequence[str]] = defaultdict(list)
        self.names_by_attribute: dict[tuple[str, str], set[str]] = defaultdict(set)  # (split, attribute) -> names
        self._seen: dict[Any, Any] = {}  # one object per distinct name and pair, not one per image that has it
        self.derived: dict[str, Any] = {}  # what a stage works out from the index, once per process

    @classmethod
    def build(cls, files: Sequence[Path], splits: SplitsConfig) -> Corpus:
        """The index of the graph rows in `files` (JSON lines, one image each), with their places."""
        corpus = cls(splits, files)
        for k, path in enumerate(corpus.files):
            data = path.read_bytes()
            start = 0
            while start < len(data):
                end = data.find(b"\n", start)
                end = len(data) if end < 0 else end
                if data[start:end].strip():
                    image_id = corpus.add(to_record(orjson.loads(data[start:end]), GraphRow))
                    corpus.places[image_id] = (k, start, end)
                start = end + 1
        return corpus.done()

    @classmethod
    def of_rows(cls, rows: Iterable[GraphRow], splits: SplitsConfig) -> Corpus:
        """The index of graph rows held in memory (no places: `GraphChecks` cannot read them)."""
        corpus = cls(splits)
        for row in rows:
            corpus.add(row)
        return corpus.done()

    def add(self, row: GraphRow) -> str:
        image_id, g = row.image_id, row.graph
        split = split_of(image_id, self.splits)
        objects = g.get("objects", {}).values()
        one = self._one
        names = frozenset(one(o["name"]) for o in objects)
        self.images[image_id] = ImageInfo(split, g.get("location"), names)
        for n in names:
            self.by_name[(split, n)].append(image_id)
        for n, a in {(o["name"], a) for o in objects for a in o.get("attributes", [])}:
            self.by_pair[(split, n, a)].append(image_id)
            self.names_by_attribute[(split, a)].add(n)
        # one tuple object per distinct (name, relation) of the corpus; an image's repeats collapse before
        edges = {one(e) for e in {(o["name"], r["name"]) for o in objects for r in o.get("relations", [])}}
        ids = self.edge_ids
        self.edges[image_id] = tuple(sorted(ids.setdefault(e, len(ids)) for e in edges))
        for name, relation in edges:
            self.by_edge[(split, name, relation)].append(image_id)
        return image_id

    def _one(self, value: Any) -> Any:
        return self._seen.setdefault(value, value)

    def done(self) -> Corpus:
        for table in (self.by_name, self.by_pair, self.by_edge):
            frozen = {k: SortedIds.of(v) for k, v in table.items()}
            table.clear()
            table.update(frozen)
        self.by_name, self.by_pair, self.by_edge = dict(self.by_name), dict(self.by_pair), dict(self.by_edge)
        self._seen = {}
        return self

    def edge_numbers(self, edges: Iterable[Edge]) -> frozenset[int]:
        """The numbers of those of `edges` (name, relation) some graph has, as `edges` holds them per image."""
        return frozenset(self.edge_ids[e] for e in edges if e in self.edge_ids)

    def reader(self) -> GraphReader:
        return GraphReader(self)


class GraphReader:
    """Graphs read from their places in the corpus's files, the files kept open while it is."""

    def __init__(self, corpus: Corpus) -> None:
        self.files, self._fds = corpus.files, {}

    def graph(self, place: Place) -> SceneGraph:
        k, start, end = place
        if k not in self._fds:
            self._fds[k] = os.open(self.files[k], os.O_RDONLY)
        row = orjson.loads(os.pread(self._fds[k], end - start, start))
        return to_record(row, GraphRow).scene_graph()

    def __enter__(self) -> GraphReader:
        return self

    def __exit__(self, *exc: object) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def certifier(unit: Unit) -> tuple[Words, AttributeTable, Certifier]:
    """The word tables and a certifier on them, one per worker for the run's attribute table: its memo of
    word verdicts serves every unit the worker runs. It reads how the corpus annotates (the plausibility
    stage's notes, the run's counts and the prior's), as the text negatives' does: a name usually annotated
    beside one of an image's names, or in many, carries no claim of absence there ("the plate" where a fork
    is), so no export certifies an expression false on the graph's silence about it."""
    path = unit.cfg.resolve(unit.cfg.attribute_table)
    small = unit.cfg.language.small_unannotated

    def build() -> tuple[Words, AttributeTable, Certifier]:
        words, table = Words.load(), AttributeTable.load(path)
        return words, table, Certifier(words, table, corpus_notes(unit), small)

    return unit.shared("plausibility", f"certifier:{file_digest(path)}:{small}", build)


def shards_per_unit(cfg: RunConfig, images: int) -> int:
    """The corpus shards one unit of a search covers for about `images` images (`batch_images`): the
    positives of a unit share its graph reads (a candidate image two of them try is read once), while a
    unit holds its search's state until it is done."""
    return max(1, round(images / cfg.shard_size))


def corpus(unit: Unit) -> Corpus:
    """The run's corpus index, built once per process for the hygiene output and the split proportions."""
    splits = unit.cfg.splits
    files = unit.run.files("hygiene", "graphs")

    return unit.shared("hygiene", f"corpus:{splits.model_dump_json()}", lambda: Corpus.build(files, splits))


class GraphChecks:
    """Checks registered per image id, run in rounds over the graphs they need (see the module docstring)."""

    def __init__(self, table: AttributeTable, corpus: Corpus) -> None:
        self.table, self.corpus = table, corpus
        self.by_image: dict[str, list[Check]] = defaultdict(list)  # for the next round
        self._ahead: dict[str, list[Check]] = {}  # this round's images not yet read
        self._queue: list[tuple[Place, str]] = []  # their places, a heap
        self._at: Place | None = None  # the place being read

    def add(self, image_id: str, check: Check) -> None:
        todo = self._ahead.get(image_id)
        if todo is not None:
            todo.append(check)
            return
        place = self.corpus.places.get(image_id)
        if self._at is not None and place is not None and place > self._at:  # still ahead in this round
            self._ahead[image_id] = [check]
            heapq.heappush(self._queue, (place, image_id))
        else:
            self.by_image[image_id].append(check)

    def run(self) -> None:
        """Run every check, and every check they register, until none is left."""
        while self.by_image:
            places = self.corpus.places
            self._ahead = {i: c for i, c in self.by_image.items() if i in places}  # others never run
            self._queue = [(places[i], i) for i in self._ahead]
            heapq.heapify(self._queue)
            self.by_image = defaultdict(list)
            with self.corpus.reader() as reader:
                while self._queue:
                    self._at, image_id = heapq.heappop(self._queue)
                    g = reader.graph(self._at)
                    checks = self._ahead.pop(image_id)
                    index = GraphIndex(g, self.table)
                    for check in checks:  # one a check adds on this image runs in the next round
                        check(g, index)
            self._at = None


Test = Callable[[SceneGraph, GraphIndex], bool]


V = TypeVar("V")


@dataclass(slots=True, eq=False)
class Option(Generic[V]):
    """One candidate: its value (made only if it wins: a probe's row, or an image's id) and the tests on
    graphs it must pass."""

    make: Callable[[], V]
    tests: list[tuple[str, Test]]
    ok: bool = True
    pending: int = 0
    done: bool = False
    value: V | None = None


@dataclass(slots=True, eq=False)
class Candidates(Generic[V]):
    """Options certified in order until `want` pass (a probe in the making, with its fixed fields). The
    winners are the first `want` that pass, as if every option had been certified; options past them are
    never tried. While winners are missing, `window` options (or as many as are missing, if more) are in
    flight at once: each round of checks reads the graphs it needs, so one try a round would read the
    corpus once per try, and most items pass within their first few. Options may come from a generator,
    made as they are needed; one that fails is dropped."""

    fields: dict[str, Any]
    want: int = 1
    window: int = 4
    checks: GraphChecks | None = None
    then: Callable[[Candidates[V]], None] | None = None  # called once when it is decided
    _source: list[Iterator[Option[V]]] = field(default_factory=list)
    _started: dict[int, Option[V]] = field(default_factory=dict)  # started and not failed, by position
    _next: int = 0  # the position of the next option to start
    _won: int = 0
    _running: int = 0

    def add(self, make: Callable[[], V], tests: list[tuple[str, Test]] | None = None) -> None:
        """An option; without tests it is certified already (on the positive's own image)."""
        self._source.append(iter((Option(make, tests or []),)))

    def add_all(self, options: Iterable[Option[V]]) -> None:
        """Options in order, taken from `options` only as they are needed."""
        self._source.append(iter(options))

    def start(self, checks: GraphChecks | None = None) -> None:
        """Begin certifying (`checks` runs the tests; options without tests need none)."""
        self.checks = checks
        self._fill()

    def _take(self) -> Option[V] | None:
        while self._source:
            o = next(self._source[0], None)
            if o is not None:
                return o
            self._source.pop(0)
        return None

    def _fill(self) -> None:
        while self._won < self.want and self._running < max(self.window, self.want - self._won):
            if (o := self._take()) is None:
                break
            self._started[self._next] = o
            self._next += 1
            if not o.tests:
                o.done = True
                self._won += 1
                continue
            self._running += 1
            o.pending = len(o.tests)
            for image_id, test in o.tests:
                self.checks.add(image_id, partial(self._test, self._next - 1, test))  # type: ignore[union-attr]
        if self.then is not None and not self._running:
            then, self.then = self.then, None
            then(self)

    def _test(self, k: int, test: Test, g: SceneGraph, ix: GraphIndex) -> None:
        o = self._started[k]
        o.ok = o.ok and bool(test(g, ix))
        o.pending -= 1
        if o.pending == 0:
            o.done, o.tests = True, []
            self._running -= 1
            self._won += o.ok
            if not o.ok:
                del self._started[k]
            self._fill()

    @property
    def passed(self) -> int:
        return min(self._won, self.want)

    def won(self) -> list[V]:
        """The values of the first `want` certified options, in their order."""
        out: list[V] = []
        for o in self._started.values():  # in the order they were started, which is theirs
            if o.done and o.ok and len(out) < self.want:
                if o.value is None:
                    o.value = o.make()
                out.append(o.value)
        return out
