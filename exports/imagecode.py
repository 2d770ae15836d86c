"""The ImageCoDe export: retrieval sets of one original and up to `exports.imagecode.edits` minimally
different edited images, the expression as the description that singles out the original (the ImageCoDe
paper).

The edits are the image stage's negatives of the positive's source image: the positive's own first, then
the other positives' negatives of the same image (an edit made for "the cup left of the plate" often makes
"the red cup" false too). A negative joins the set only when it was kept, its chosen candidate passed
every configured filter (the decide stage's `passed`: realism, sharpness, ...), and executing the
positive's path on the edit's graph (`core.edits.apply_edit`) matches nothing. Each distinct edit gives
one image, its chosen candidate (the decide stage's best): a negative's other candidates are
near-identical variants of the same edit, and a set of variants would test telling one edit from its
copies, not the expression. Two negatives with one edit (two positives' flips of one image) count once.

A set needs at least `min_edits` distinct edits and takes up to `edits` of them; a positive with fewer
gets no set (a reject says so). So that the sets spread over the corpus instead of piling up on the few
images with many edits, a source image gives at most `max_sets_per_image` sets: the fullest first, ties
broken by a keyed seed, so reruns choose the same positives; the rest are counted
(`positives_over_image_cap`) and rejected with the reason.

The export is in ImageCoDe's own layout, so its official scripts read it unchanged: the images, shuffled by
a keyed seed, sit at `imagecode/image-sets/<set>/img<k>.jpg`, and each split's descriptions in the file the
scripts name (`train_data.json`, `valid_data.json`, `test_data.json`, plus `test_data_unlabeled.json`), as
`{set: {"k": description}}` with `k` the original's index. The set's name, `hardneg-open-images_<id>`, is
the same form for every set and says nothing of the order; `open-images` is how the official scripts tell
a set of static pictures (no frame order) from video frames. Sets of every size are written: the scripts
that score a description (zero-shot CLIP, `evaluate_clip.py`, the dataset class one set a batch) sort and
count a set's files themselves; only the context-module models assume 10 images, which `min_edits: 9`
gives. Our own record per set stays in `<split>.json` (and parquet), a file the scripts never open:
`set`, `images` (run-relative paths), `target`, `description`, and the edits with their certificates. It
reads straight into `evaluation.imagecode.imagecode_accuracy` (with a model's `scores`), as does the
official layout through `evaluation.imagecode.read_official`. A decision stage.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import orjson
from pydantic import Field, model_validator

from hardneg.core.certify import Certifier
from hardneg.core.config_exports import ExportOptions
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex
from hardneg.core.io import write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import PathNode, Reject, SceneGraph, content_id, keyed_seed
from hardneg.core.runner.folder import image_file, resolve_inputs
from hardneg.core.runner.stage import Unit
from hardneg.core.schema import outputs
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.exports.base import ExportStage
from hardneg.exports.common import ExportFolder, by_split, kept_image_negatives, kept_positives
from hardneg.exports.corpus import GraphChecks, corpus
from hardneg.exports.rows import ImageCodeSetRow

# v2: one image per distinct edit, `min_edits`, `max_sets_per_image`; certified edits. v3: ImageCoDe's layout
VERSION = "imagecode@v3"
# ImageCoDe's own layout, as its scripts read it (`evaluation.imagecode` reads the same names; a test keeps
# the two equal: the metrics module imports nothing of the pipeline)
OFFICIAL_FILES = {"train": "train_data.json", "val": "valid_data.json", "test": "test_data.json"}
UNLABELED_FILE = "test_data_unlabeled.json"  # the test split without targets, as ImageCoDe hands it out
IMAGE_SETS = "image-sets"
STATIC_MARK = "open-images"  # the official scripts' only sign of a static picture set (else: video frames)
FOLDER = "imagecode"
SPLITS = ("train", "val", "test")


Pair = tuple[dict[str, Any], str]  # (image negative, the candidate image it gives a set)
Dropped = tuple[dict[str, Any], str, str]  # (positive, stats key, reason)


def gather(p: dict[str, Any], negs: list[dict[str, Any]], ok: dict[tuple[int, int], bool]) -> list[Pair]:
    """One (negative, chosen candidate) per distinct edit that falsifies the positive: its own negatives
    first, then the others' by id. Only the chosen candidate (the first of `passed`, the decide stage's
    best): the others are variants of the same edit. Two negatives with one edit count once."""
    falsify = sorted(
        (n for n in negs if ok.get((p["id"], n["id"])) and n["passed"]),
        key=lambda n: (n["positive_id"] != p["id"], n["id"]),
    )
    out, seen = [], set()
    for n in falsify:
        key = orjson.dumps(n["edit"], option=orjson.OPT_SORT_KEYS)
        if key not in seen:
            seen.add(key)
            out.append((n, n["passed"][0]))
    return out


Choice = tuple[dict[str, Any], list[Pair]]  # (positive, the edits of its set)


class ImageCodeExport(ExportOptions):
    """ImageCoDe retrieval sets (the ImageCoDe paper): the original and between `min_edits` and `edits`
    edited images, one per distinct edit, at most `max_sets_per_image` sets per source image."""

    enabled: bool = True
    edits: int = Field(9, ge=1, le=63)  # the paper: 9 (10 images a set); the most distinct edits a set holds
    min_edits: int = Field(5, ge=1)  # the fewest; a positive with fewer distinct edits gets no set
    max_sets_per_image: int = Field(1, ge=1)  # so that the sets spread over the corpus's images

    @model_validator(mode="before")
    @classmethod
    def _min_follows_edits(cls, data: Any) -> Any:
        """A config that asks for fewer `edits` than the default minimum and names no minimum asks for
        sets of exactly that many edits: `edits: 3` alone is a valid config, not a clash with the default."""
        if isinstance(data, dict) and "min_edits" not in data and isinstance(data.get("edits"), int):
            default = cls.model_fields["min_edits"].default
            return {**data, "min_edits": min(default, data["edits"])}
        return data

    @model_validator(mode="after")
    def _min_at_most_edits(self) -> ImageCodeExport:
        if self.min_edits > self.edits:
            raise ValueError(f"min_edits ({self.min_edits}) must be at most edits ({self.edits})")
        return self


def choose(pools: list[Choice], opts: ImageCodeExport, seed: int) -> tuple[list[Choice], list[Dropped]]:
    """The sets to make from each positive's distinct edits, and the positives left out, both in the
    input's order. A set takes the first `edits` edits and needs `min_edits`; one source image gives at
    most `max_sets_per_image` sets, the fullest first, ties broken by a keyed seed, so the choice depends
    on neither order nor sharding and reruns agree."""
    why: dict[int, tuple[str, str]] = {}
    by_image: dict[str, list[Choice]] = defaultdict(list)
    for p, pool in pools:
        if len(pool) < opts.min_edits:
            reason = f"{len(pool)} distinct passing edits falsify the expression; a set needs {opts.min_edits}"
            why[p["id"]] = ("positives_with_too_few_edits", reason)
        else:
            by_image[p["image_id"]].append((p, pool[: opts.edits]))
    kept: dict[int, list[Pair]] = {}
    for image_id, sets in by_image.items():
        sets.sort(key=lambda c: (-len(c[1]), keyed_seed(seed, "imagecode", "pick", c[0]["id"])))
        kept.update((p["id"], pool) for p, pool in sets[: opts.max_sets_per_image])
        for p, _ in sets[opts.max_sets_per_image :]:
            cap = opts.max_sets_per_image
            why[p["id"]] = ("positives_over_image_cap", f"image {image_id} already gives {cap} fuller or tied set(s)")
    chosen = [(p, kept[p["id"]]) for p, _ in pools if p["id"] in kept]
    dropped = [(p, *why[p["id"]]) for p, _ in pools if p["id"] in why]
    return chosen, dropped


@EXPORTS.add("imagecode", order=50)
class ImageCodeStage(ExportStage):
    """ImageCoDe sets from the decided positives and the candidates of their images' negatives."""

    version = VERSION
    Options = ImageCodeExport
    title = "ImageCoDe retrieval sets"
    about = (
        "the original image and minimally different edits (one image per distinct edit that passes every "
        "filter and makes the expression false; `min_edits` to `edits` a set, at most `max_sets_per_image` "
        "sets a source image), shuffled, with the expression as the description, in ImageCoDe's own layout "
        "(`image-sets/<set>/img<k>.jpg`, `train_data.json`, `valid_data.json`, `test_data.json`) for its "
        "official scripts; `evaluation.imagecode`"
    )
    reads = ("hygiene", "language", "images", "decide")
    writes = outputs({"sets": ImageCodeSetRow})
    config = ("seed", "splits", "exports.imagecode")
    data = ("attribute_table",)
    sharded = False
    decision = True
    publishes = (FOLDER,)

    def run(self, unit: Unit) -> None:
        opts = unit.cfg.exports.imagecode
        folder = ExportFolder(unit.root, FOLDER)
        folder.reset()
        records = self._sets(unit, folder) if opts.enabled else []
        splits = by_split(records)
        folder.write_tables(splits)
        for split, rows in splits.items():
            write_json(folder.dir / OFFICIAL_FILES[split], descriptions(rows))
        write_json(folder.dir / UNLABELED_FILE, {n: list(d.values()) for n, d in descriptions(splits["test"]).items()})
        counts = _counts(records)
        official = {**OFFICIAL_FILES, "test (unlabeled)": UNLABELED_FILE, "images": f"{IMAGE_SETS}/<set>/img<k>.jpg"}
        folder.write_summary(
            {"shape": "imagecode", "version": VERSION, "enabled": opts.enabled, "official": official, "counts": counts}
        )
        unit.meta["counts"] = counts
        unit.write("sets", records)

    def _sets(self, unit: Unit, folder: ExportFolder) -> list[dict[str, Any]]:
        cfg = unit.cfg
        table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
        positives = kept_positives(unit)
        negs_by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n in kept_image_negatives(unit, {p["id"] for p in positives}):
            negs_by_image[n["source_image_id"]].append(n)
        positives = [p for p in positives if negs_by_image.get(p["image_id"])]
        unit.items_in = len(positives)
        ok: dict[tuple[int, int], bool] = {}
        certifier = Certifier(Words.load(), table)
        by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in positives:
            by_image[p["image_id"]].append(p)
        if by_image:  # the corpus index is built only when there is something to check on it
            checks = GraphChecks(table, corpus(unit))
            for image_id, ps in by_image.items():
                checks.add(image_id, _falsifies(ps, negs_by_image[image_id], certifier, ok))
            checks.run()
        images = resolve_inputs(unit.root, cfg)[1]
        if images is None:  # no source images: the images stage made no negatives either
            return []
        pools = [(p, gather(p, negs_by_image[p["image_id"]], ok)) for p in positives]
        chosen, dropped = choose(pools, cfg.exports.imagecode, cfg.seed)
        for p, stat, why in dropped:
            unit.stats[stat] += 1
            unit.reject(Reject("imagecode", why, p["image_id"], p["id"]))
        return [_record(p, pool, folder, image_file(images, p["image_id"]), cfg.seed) for p, pool in chosen]


def set_name(set_id: int) -> str:
    """The set's folder name: one form for every set, so it tells nothing of the order; `open-images` marks
    it as static pictures for the official scripts (positional embeddings off, counted under images)."""
    return f"hardneg-{STATIC_MARK}_{set_id:013x}"


def descriptions(rows: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """A split's official descriptions file, `{set: {"k": description}}`: one description a set, keyed by
    the original's index as a string, as ImageCoDe's `*_data.json` files are."""
    return {r["set"]: {str(r["target"]): r["description"]} for r in rows}


def _counts(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Rows of the summary's table, each per split: the sets, the sets of each size (sizes vary between
    `min_edits` and `edits` plus the original) and the edits of each negative type."""
    counts = {"sets": {s: len(v) for s, v in by_split(records).items()}}
    per_split = {s: 0 for s in SPLITS}
    sizes = Counter((len(r["images"]), r["split"]) for r in records)
    for n in sorted({n for n, _ in sizes}):
        counts[f"sets of {n} images"] = {**per_split, **{s: c for (m, s), c in sizes.items() if m == n}}
    types = Counter((e["negative_type"], r["split"]) for r in records for e in r["edits"])
    for t in sorted({t for t, _ in types}):
        counts[f"edits: {t}"] = {**per_split, **{s: c for (u, s), c in types.items() if u == t}}
    return counts


def _falsifies(
    positives: list[dict[str, Any]], negs: list[dict[str, Any]], certifier: Certifier, ok: dict[tuple[int, int], bool]
) -> Any:
    """A check that records, per (positive, negative), whether the negative's edited picture certainly
    makes the positive's expression false (the edit's graph follows the pixels; `Certifier.nothing`)."""
    paths = [(p["id"], PathNode.from_json(p["path"]).without_ids()) for p in positives]

    def check(g: SceneGraph, index: GraphIndex) -> None:
        for n in negs:
            try:
                edited = apply_edit(g, n["edit"])
            except ValueError:
                continue
            at = GraphIndex(edited, certifier.table)
            for pid, path in paths:
                ok[(pid, n["id"])] = certifier.nothing(path, edited, at) is None

    return check


def _record(p: dict[str, Any], pool: list[Pair], folder: ExportFolder, src: Any, seed: int) -> dict:
    set_id = content_id("imagecode", str(p["id"]))
    name = set_name(set_id)
    sources: list[Any] = [src] + [folder.root / cand for _, cand in pool]
    order = list(range(len(sources)))
    random.Random(keyed_seed(seed, "imagecode", p["id"])).shuffle(order)  # order[k]: which image sits at k
    paths = [folder.place(sources[i], f"{IMAGE_SETS}/{name}/img{k}.jpg") for k, i in enumerate(order)]
    edits = [
        {"index": order.index(i + 1), "negative_id": n["id"], "negative_type": n["negative_type"],
         "edit": n["edit"], "candidate": cand, "source_image_id": n["source_image_id"]}
        for i, (n, cand) in enumerate(pool)
    ]  # fmt: skip
    return {
        "id": set_id,
        "set": name,
        "images": paths,
        "target": order.index(0),
        "description": p["expression"],
        "split": p["split"],
        "positive_id": p["id"],
        "image_id": p["image_id"],
        "is_video": False,
        "tuple_type": p["tuple_type"],
        "level": p["level"],
        "path": p["path"],
        "edits": edits,
    }
