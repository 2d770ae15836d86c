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

The images are shuffled by a keyed seed and linked as `imagecode/images/<set id>_<k>.jpg`, so neither the
order nor a file name tells the original from an edit. One record per set: `images` (run-relative
paths), `target` (the original's index), `description`, and the edits with their certificates. It reads
straight into `evaluation.imagecode.imagecode_accuracy` (with a model's `scores`). A decision stage.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from typing import Any

import orjson

from hardneg.core.attributes import AttributeTable
from hardneg.core.edits import apply_edit
from hardneg.core.executor import GraphIndex
from hardneg.core.export_config import ImageCodeExport
from hardneg.core.records import PathNode, Reject, SceneGraph, content_id, keyed_seed
from hardneg.core.runfolder import image_file, resolve_inputs
from hardneg.core.stage import Stage, Unit
from hardneg.core.words import Words
from hardneg.generators.export_certify import Certifier
from hardneg.generators.export_common import (
    ExportFolder,
    GraphChecks,
    by_split,
    hygiene_graphs,
    kept_image_negatives,
    kept_positives,
)

VERSION = "imagecode@v2"  # v2: one image per distinct edit, `min_edits`, `max_sets_per_image`; certified edits
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


class ImageCodeStage(Stage):
    """ImageCoDe sets from the decided positives and the candidates of their images' negatives."""

    name = "imagecode"
    version = VERSION
    reads = ("hygiene", "language", "images", "decide")
    config = ("seed", "splits", "exports.imagecode")
    data = ("attribute_table",)
    sharded = False
    decision = True

    def run(self, unit: Unit) -> None:
        opts = unit.cfg.exports.imagecode
        folder = ExportFolder(unit.root, FOLDER)
        folder.reset()
        records = self._sets(unit, folder) if opts.enabled else []
        for split, rows in by_split(records).items():
            folder.write_table(split, rows)
        counts = _counts(records)
        folder.write_summary({"shape": "imagecode", "version": VERSION, "enabled": opts.enabled, "counts": counts})
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
        checks = GraphChecks(table)
        certifier = Certifier(Words.load(), table)
        by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in positives:
            by_image[p["image_id"]].append(p)
        for image_id, ps in by_image.items():
            checks.add(image_id, _falsifies(ps, negs_by_image[image_id], certifier, ok))
        checks.run(hygiene_graphs(unit))
        images = resolve_inputs(unit.root, cfg)[1]
        if images is None:  # no source images: the images stage made no negatives either
            return []
        pools = [(p, gather(p, negs_by_image[p["image_id"]], ok)) for p in positives]
        chosen, dropped = choose(pools, cfg.exports.imagecode, cfg.seed)
        for p, stat, why in dropped:
            unit.stats[stat] += 1
            unit.reject(Reject("imagecode", why, p["image_id"], p["id"]))
        return [_record(p, pool, folder, image_file(images, p["image_id"]), cfg.seed) for p, pool in chosen]


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
    sources: list[Any] = [src] + [folder.root / cand for _, cand in pool]
    order = list(range(len(sources)))
    random.Random(keyed_seed(seed, "imagecode", p["id"])).shuffle(order)  # order[k]: which image sits at k
    paths = [folder.place(sources[i], f"images/{set_id:x}_{k}.jpg") for k, i in enumerate(order)]
    edits = [
        {"index": order.index(i + 1), "negative_id": n["id"], "negative_type": n["negative_type"],
         "edit": n["edit"], "candidate": cand, "source_image_id": n["source_image_id"]}
        for i, (n, cand) in enumerate(pool)
    ]  # fmt: skip
    return {
        "id": set_id,
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
