"""The ImageCoDe export: retrieval sets of ten images, the original and nine distractors each certified
false of the description (the expression), in ImageCoDe's own layout (the ImageCoDe paper).

ImageCoDe's sets are ten minimally different images, and a description true of one of them alone. A set
here is the positive's image and nine distractors, each one an image in which the expression certainly
matches nothing, drawn from two sources, the first first:

1. **verified edits of the target** (up to `exports.imagecode.edits`): the image stage's negatives of the
   positive's image, the positive's own first, then other positives' whose edit also makes this
   expression false; kept by every configured filter (the decide stage's `passed`: realism, sharpness, ...)
   and re-checked by executing the path on the edit's graph (`core.edits.apply_edit`, `Certifier.nothing`).
   One image per distinct edit, its chosen candidate: a negative's other candidates are near-identical
   variants, and two negatives with one edit count once;
2. **the corpus's real images most like the target** (`exports/tricd/rank.py`'s likeness by the graph:
   the target's name first, then the expression's other names, its relations, the names the two images
   share, the location; and, when the run has the photos and `pixels` is on, the pixels: `exports/alike.py`),
   of the target's split. About `candidates` images are sampled (with the whole split when it has fewer),
   the `checked` most alike kept, and, with pixels, ordered by the sum of their two ranks; they are
   certified in that order (`Certifier.nothing`: a missing annotation proves nothing) until the set is full.

A positive whose set cannot be filled (fewer than `min_edits` edits, or too few certified images: a split
of fewer than ten images can make no set from real images alone) gets none, with the reason in the
rejects. One source image gives at most `max_sets_per_image` sets: its positives are tried one after the
other, those with the most edits first (ties broken by a keyed seed, so reruns choose the same), until that
many sets are full; the rest are counted (`positives_over_image_cap`).

The folder is in ImageCoDe's own layout, so its official scripts read it unchanged: the ten images,
shuffled by a keyed seed, at `imagecode/image-sets/<set>/img<k>.jpg`, and each split's descriptions in the
file the scripts name (`train_data.json`, `valid_data.json`, `test_data.json`, plus
`test_data_unlabeled.json`), `{set: {"k": description}}` with `k` the original's index. A split with no set
gets no file: every script divides by the number of sets it read. The set's name, `hardneg-open-images_<id>`,
is the same form for every set and says nothing of the order; `open-images` is how the scripts tell static
pictures from video frames. Our own record per set stays in `<split>.json` (and parquet), a file the
scripts never open: `set`, `images` (run-relative paths), `target`, `description`, the `edits` and the
corpus `distractors` with their certificates. It reads straight into `evaluation.imagecode.imagecode_accuracy`
(with a model's `scores`), as does the official layout through `evaluation.imagecode.read_official`.

A decision stage: `hardneg split` reruns it. It searches a batch of shards a unit
(`exports.imagecode.batch_images`), on every worker; `finish` places the images and writes the folder.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from pydantic import Field, model_validator

from hardneg.core.certify import VERSION as CERTIFIER
from hardneg.core.certify import Certifier
from hardneg.core.config_exports import ExportOptions
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.io import write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import Reject, SceneGraph, content_id, keyed_seed
from hardneg.core.runner.stage import Run, Unit
from hardneg.core.schema import outputs
from hardneg.exports.alike import Ranking
from hardneg.exports.base import ExportStage
from hardneg.exports.common import (
    SPLITS,
    ExportFolder,
    KeptImageNegative,
    KeptPositive,
    kept_image_negatives,
    kept_positives,
)
from hardneg.exports.corpus import Candidates, GraphChecks, Option, certifier, corpus
from hardneg.exports.corpus import shards_per_unit as batch_shards
from hardneg.exports.rows import IMAGECODE_SETS, ImageCodeSetRow

# v2: one image per distinct edit, `min_edits`, `max_sets_per_image`; certified edits. v3: ImageCoDe's layout.
# v4: ten images a set, corpus images as distractors, batches of shards, no file for a split without sets. v5: certified
# with the corpus's notes
VERSION = f"imagecode@v5+{CERTIFIER}"
# ImageCoDe's own layout, as its scripts read it (`evaluation.imagecode` reads the same names; a test keeps
# the two equal: the metrics module imports nothing of the pipeline)
OFFICIAL_FILES = {"train": "train_data.json", "val": "valid_data.json", "test": "test_data.json"}
UNLABELED_FILE = "test_data_unlabeled.json"  # the test split without targets, as ImageCoDe hands it out
IMAGE_SETS = "image-sets"
STATIC_MARK = "open-images"  # the official scripts' only sign of a static picture set (else: video frames)
FOLDER = "imagecode"
SET_SIZE = 10  # ImageCoDe's: the context models stack exactly ten images a set
DISTRACTORS = SET_SIZE - 1


Pair = tuple[KeptImageNegative, str]  # (image negative, the candidate image it gives a set)


def gather(p: KeptPositive, negs: list[KeptImageNegative], ok: dict[tuple[int, int], bool]) -> list[Pair]:
    """One (negative, chosen candidate) per distinct edit that falsifies the positive: its own negatives
    first, then the others' by id. Only the chosen candidate (the first of `passed`, the decide stage's
    best): the others are variants of the same edit. Two negatives with one edit count once."""
    falsify = sorted(
        (n for n in negs if ok.get((p.id, n.id)) and n.passed),
        key=lambda n: (n.positive_id != p.id, n.id),
    )
    out, seen = [], set()
    for n in falsify:
        key = orjson.dumps(n.edit, option=orjson.OPT_SORT_KEYS)
        if key not in seen:
            seen.add(key)
            out.append((n, n.passed[0]))
    return out


class ImageCodeExport(ExportOptions):
    """ImageCoDe retrieval sets (the ImageCoDe paper): the original and nine certified distractors, verified
    edits of it first, then the corpus's most alike images; at most `max_sets_per_image` sets an image."""

    enabled: bool = True
    edits: int = Field(DISTRACTORS, ge=0, le=DISTRACTORS)  # the most verified edits of the target a set takes
    min_edits: int = Field(0, ge=0, le=DISTRACTORS)  # the fewest a set needs (0: corpus images may fill it)
    max_sets_per_image: int = Field(1, ge=1)  # so that the sets spread over the corpus's images
    # corpus images sampled per positive (the target's name, the expression's relations, the scene's rarest
    # names; the whole split when it is smaller), of which the `checked` most alike are certified in order
    candidates: int = Field(200, ge=1)
    checked: int = Field(40, ge=1)
    pixels: bool = True  # with the photos, the corpus images ranked by their pixels too (`exports/alike.py`)
    batch_images: int = Field(12_500, ge=1)  # images of positives searched together (`shards_per_unit`)

    @model_validator(mode="after")
    def _min_at_most_edits(self) -> ImageCodeExport:
        if self.min_edits > self.edits:
            raise ValueError(f"min_edits ({self.min_edits}) must be at most edits ({self.edits})")
        return self


Dropped = tuple[KeptPositive, str, str]  # (positive, stats key, reason)


@dataclass(slots=True)
class Made:
    """A full set: the positive, its edits (negative, candidate) and its corpus distractors (image ids)."""

    positive: KeptPositive
    edits: list[Pair]
    images: list[str]


@dataclass(slots=True, eq=False)
class ImageSets:
    """The sets of one source image: its positives tried one after the other (most edits first, ties by a
    keyed seed) until `max_sets_per_image` are full; each positive's corpus distractors certified in rank
    order, only as many as its set still needs (`Candidates`), the next positive asked only if it failed."""

    queue: list[tuple[KeptPositive, list[Pair]]]
    opts: ImageCodeExport
    rank: Callable[[KeptPositive], list[str]]
    test: Callable[[KeptPositive], Callable[[SceneGraph, GraphIndex], bool]]
    checks: GraphChecks
    made: list[Made] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queue = list(self.queue)  # taken from as the positives are tried: the caller's list stays whole

    def next(self) -> None:
        while self.queue and len(self.made) < self.opts.max_sets_per_image:
            p, edits = self.queue.pop(0)
            if len(edits) < self.opts.min_edits:
                why = f"{len(edits)} distinct passing edits falsify the expression; a set needs {self.opts.min_edits}"
                self.dropped.append((p, "positives_with_too_few_edits", why))
                continue
            need = DISTRACTORS - len(edits)
            if need == 0:
                self.made.append(Made(p, edits, []))
                continue
            ranked = self.rank(p)
            test = self.test(p)
            found: Candidates[str] = Candidates({}, need, then=partial(self._done, p, edits, len(ranked)))
            found.add_all(Option(partial(str, img), [(img, test)]) for img in ranked)
            found.start(self.checks)  # `_done` goes on with the queue once it is decided
            return
        for p, _ in self.queue:
            cap = self.opts.max_sets_per_image
            why = f"image {p.image_id} already gives {cap} set(s) of positives tried before it"
            self.dropped.append((p, "positives_over_image_cap", why))
        self.queue = []

    def _done(self, p: KeptPositive, edits: list[Pair], ranked: int, found: Candidates[str]) -> None:
        won = found.won()
        if len(edits) + len(won) == DISTRACTORS:
            self.made.append(Made(p, edits, won))
        else:
            why = (f"{len(edits) + len(won)} of {DISTRACTORS} distractors certified ({len(edits)} edits, {len(won)} "
                   f"of the {ranked} most alike corpus images of its split)")  # fmt: skip
            self.dropped.append((p, "positives_with_too_few_distractors", why))
        self.next()


@EXPORTS.add("imagecode", order=50)
class ImageCodeStage(ExportStage):
    """ImageCoDe sets of ten from the decided positives: verified edits, then the corpus's most alike images."""

    version = VERSION
    Options = ImageCodeExport
    title = "ImageCoDe retrieval sets"
    about = (
        "the original image and nine distractors each certified false of the expression: verified edits of "
        "it (one per distinct edit that passes every filter), then the corpus's images most like it (by the "
        "graph, and by the pixels when the run has the photos); at most `max_sets_per_image` sets a source "
        "image; shuffled, with the expression as the description, in ImageCoDe's own layout "
        "(`image-sets/<set>/img<k>.jpg`, `train_data.json`, `valid_data.json`, `test_data.json`) for its "
        "official scripts; `evaluation.imagecode`"
    )
    reads = ("hygiene", "plausibility", "language", "images", "decide")
    writes = outputs(IMAGECODE_SETS)
    # a unit covers shards of the corpus; the certifier reads what a small thing is
    config = ("seed", "splits", "exports.imagecode", "shard_size", "language.small_unannotated")
    data = ("attribute_table",)
    decision = True
    publishes = (FOLDER,)

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def shards_per_unit(self, run: Run) -> int:
        return batch_shards(run.cfg, run.cfg.exports.imagecode.batch_images)

    def run(self, unit: Unit) -> None:
        """The sets of the unit's positives (a batch of shards), each image the file it shows (`finish` places
        them); the corpus's images per split, for the summary's notes."""
        if unit.cfg.exports.imagecode.enabled:
            unit.write("sets", self._sets(unit))

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Every unit's sets in the run's folder, in shard order: the images placed, our tables, and the
        official descriptions files of the splits that have sets."""
        opts = run.cfg.exports.imagecode
        folder = ExportFolder(run.root, FOLDER)
        folder.reset()
        described: dict[str, dict[str, dict[str, str]]] = {s: {} for s in SPLITS}
        tally: Counter = Counter()
        with folder.tables() as tables:
            for r in run.records_all(IMAGECODE_SETS):
                at = f"{IMAGE_SETS}/{r.set}/img{{}}.jpg"
                r.images = [folder.place(run.root / src, at.format(k)) for k, src in enumerate(r.images)]
                tables.add(r.split, r)
                described[r.split].update(descriptions([r]))
                _count(tally, r)
        official = {}
        for split, sets in described.items():
            if sets:  # the scripts divide by the number of sets: a split without any gets no file
                write_json(folder.dir / OFFICIAL_FILES[split], sets)
                official[split] = OFFICIAL_FILES[split]
        if described["test"]:
            write_json(folder.dir / UNLABELED_FILE, {n: list(d.values()) for n, d in described["test"].items()})
            official["test (unlabeled)"] = UNLABELED_FILE
        if official:
            official["images"] = f"{IMAGE_SETS}/<set>/img<k>.jpg"
        kinds = sorted({k for k, _ in tally}, key=lambda k: (k != "sets", k))
        counts = {k: {s: tally.get((k, s), 0) for s in SPLITS} for k in kinds} or {"sets": dict.fromkeys(SPLITS, 0)}
        notes = _notes(run, units, described) if opts.enabled else []
        summary = {"shape": "imagecode", "version": VERSION, "enabled": opts.enabled, "official": official,
                   "counts": counts, "notes": notes}  # fmt: skip
        folder.write_summary(summary)
        return {"meta": {"counts": counts}}

    def _sets(self, unit: Unit) -> list[ImageCodeSetRow]:
        cfg, opts = unit.cfg, unit.cfg.exports.imagecode
        positives = kept_positives(unit)
        unit.items_in = len(positives)
        images = unit.images
        if images is None:  # no photos to put in a set
            unit.meta["no_images"] = True
            return []
        _, table, cert = certifier(unit)
        index = corpus(unit)
        unit.meta["split_images"] = dict(Counter(info.split for info in index.images.values()))
        if not positives:
            return []
        negs_by_image: dict[str, list[KeptImageNegative]] = defaultdict(list)
        for n in kept_image_negatives(unit, {p.id for p in positives}):
            negs_by_image[n.source_image_id].append(n)
        by_image: dict[str, list[KeptPositive]] = defaultdict(list)
        for p in positives:
            by_image[p.image_id].append(p)
        ok: dict[tuple[int, int], bool] = {}
        checks = GraphChecks(table, index)
        for image_id, ps in by_image.items():
            if negs_by_image.get(image_id):
                checks.add(image_id, _falsifies(ps, negs_by_image[image_id], cert, ok))
        checks.run()  # the edits are decided before any positive is chosen
        ranking = Ranking(index, opts, cfg.seed, images if opts.pixels else None, _signatures(unit))
        searches = []
        for ps in by_image.values():
            pools = [(p, gather(p, negs_by_image.get(p.image_id, []), ok)[: opts.edits]) for p in ps]
            pools.sort(key=lambda c: (-len(c[1]), keyed_seed(cfg.seed, "imagecode", "pick", c[0].id)))
            search = ImageSets(pools, opts, ranking.rank, partial(_distractor_test, cert), checks)
            search.next()
            searches.append(search)
        checks.run()
        folder = ExportFolder(unit.root, FOLDER)
        made: dict[int, Made] = {}
        for search in searches:
            for p, stat, why in search.dropped:
                unit.stats[stat] += 1
                unit.reject(Reject("imagecode", why, p.image_id, p.id))
            made.update((m.positive.id, m) for m in search.made)
        # in the positives' order (their shards'), so that batches of shards write what one search writes
        return [_record(made[p.id], folder, images, cfg.seed) for p in positives if p.id in made]


def _signatures(unit: Unit) -> dict[str, np.ndarray]:
    """The photos' pixel signatures, one per image, kept per worker for every unit it runs (about 450 bytes
    an image)."""
    return unit.shared("hygiene", "imagecode:signatures", dict)


def _distractor_test(cert: Certifier, p: KeptPositive) -> Callable[[SceneGraph, GraphIndex], bool]:
    bare = p.node().without_ids()  # once, not once a candidate
    return lambda g, ix: cert.nothing(bare, g, ix) is None


def set_name(set_id: int) -> str:
    """The set's folder name: one form for every set, so it tells nothing of the order; `open-images` marks
    it as static pictures for the official scripts (positional embeddings off, counted under images)."""
    return f"hardneg-{STATIC_MARK}_{set_id:013x}"


def descriptions(sets: Iterable[ImageCodeSetRow]) -> dict[str, dict[str, str]]:
    """A split's official descriptions file, `{set: {"k": description}}`: one description a set, keyed by
    the original's index as a string, as ImageCoDe's `*_data.json` files are."""
    return {r.set: {str(r.target): r.description} for r in sets}


def _count(tally: Counter, r: ImageCodeSetRow) -> None:
    """A set in the summary's counts: the sets, its edits of each negative type, its corpus images."""
    tally[("sets", r.split)] += 1
    for e in r.edits:
        tally[(f"distractors: edit ({e['negative_type']})", r.split)] += 1
    tally[("distractors: corpus image", r.split)] += len(r.distractors)


def _notes(run: Run, units: list[dict[str, Any]], described: dict[str, dict[str, Any]]) -> list[str]:
    """What stats.md says of the splits without sets: that no official file is written for them, and why
    when the split is too small to fill a set from its own images."""
    if any(u.get("meta", {}).get("no_images") for u in units):
        return ["no sets: the run has no photos (`--images`), and a set is made of them"]
    sizes: Counter = Counter()
    for u in units[:1]:
        sizes.update(u.get("meta", {}).get("split_images", {}))
    out = []
    for split in SPLITS:
        if described[split]:
            continue
        n = sizes.get(split, 0)
        small = f"; it has {n} image(s) and a set needs {DISTRACTORS} others of its split (edits of the target count)"
        out.append(f"{split}: no sets, so no `{OFFICIAL_FILES[split]}` (the official scripts divide by the "
                   f"number of sets){small if n < SET_SIZE else ''}")  # fmt: skip
    return out


def _falsifies(
    positives: list[KeptPositive], negs: list[KeptImageNegative], certifier: Certifier, ok: dict[tuple[int, int], bool]
) -> Any:
    """A check that records, per (positive, negative), whether the negative's edited picture certainly
    makes the positive's expression false (the edit's graph follows the pixels; `Certifier.nothing`)."""
    paths = [(p.id, p.node().without_ids()) for p in positives]

    def check(g: SceneGraph, index: GraphIndex) -> None:
        for n in negs:
            try:
                edited = apply_edit(g, n.edit)
            except ValueError:
                continue
            at = GraphIndex(edited, certifier.table)
            for pid, path in paths:
                ok[(pid, n.id)] = certifier.nothing(path, edited, at) is None

    return check


def _record(m: Made, folder: ExportFolder, images: Path, seed: int) -> ImageCodeSetRow:
    """A set's row: `images` are the files it shows, in order (`finish` places them), the target's index."""
    p = m.positive
    set_id = content_id("imagecode", str(p.id))
    sources = [image_file(images, p.image_id)]
    sources += [folder.root / cand for _, cand in m.edits] + [image_file(images, i) for i in m.images]
    order = list(range(len(sources)))
    random.Random(keyed_seed(seed, "imagecode", p.id)).shuffle(order)  # order[k]: which image sits at k
    at = {i: k for k, i in enumerate(order)}
    false = p.node().without_ids().to_json()
    edits = [
        {"index": at[i + 1], "negative_id": n.id, "negative_type": n.negative_type,
         "edit": n.edit, "candidate": cand, "source_image_id": n.source_image_id}
        for i, (n, cand) in enumerate(m.edits)
    ]  # fmt: skip
    first = 1 + len(m.edits)
    distractors = [
        {"index": at[first + i], "image_id": img, "certificate": {"kind": "distractor", "false": false}}
        for i, img in enumerate(m.images)
    ]
    return ImageCodeSetRow(id=set_id, set=set_name(set_id), images=[folder.source(sources[i]) for i in order],
                           target=at[0], description=p.expression, split=p.split, positive_id=p.id,
                           image_id=p.image_id, is_video=False, tuple_type=p.tuple_type, level=p.level, path=p.path,
                           edits=edits, distractors=distractors)  # fmt: skip
