"""The ImageCoDe export: retrieval sets of one original and `exports.imagecode.edits` minimally different
edited images, the expression as the description that singles out the original (the ImageCoDe paper).

The edits are the image stage's candidates, gathered across the image negatives of the positive's source
image: the positive's own negatives first, then the other positives' negatives of the same image (an edit
made for "the cup left of the plate" often makes "the red cup" false too). A candidate joins the set only
when every configured filter keeps it (the decide stage's `passed`: realism, sharpness, ...), its negative
was kept, and executing the positive's path on the edit's graph (`core.edits.apply_edit`) matches nothing.
Candidates are taken round-robin over the negatives (each negative's chosen candidate first), so a set
mixes kinds of edit before it repeats one. A positive with fewer passing edits than the set needs gets no
set (the paper: 9, 10 images a set; the demo's 4 candidates per image negative reach 9 this way).

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
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathNode, Reject, SceneGraph, content_id, keyed_seed
from hardneg.core.runfolder import image_file, resolve_inputs
from hardneg.core.stage import Stage, Unit
from hardneg.generators.export_common import (
    ExportFolder,
    GraphChecks,
    by_split,
    hygiene_graphs,
    kept_image_negatives,
    kept_positives,
)

VERSION = "imagecode@v1"
FOLDER = "imagecode"


def gather(p: dict[str, Any], negs: list[dict[str, Any]], ok: dict[tuple[int, int], bool]) -> list[tuple[dict, str]]:
    """(negative, candidate) pairs that falsify the positive, round-robin: its own negatives first. Two
    negatives with one edit (two positives' flips of one image) count once: their images are the same."""
    falsify = sorted(
        (n for n in negs if ok.get((p["id"], n["id"]))), key=lambda n: (n["positive_id"] != p["id"], n["id"])
    )
    order, seen = [], set()
    for n in falsify:
        key = orjson.dumps(n["edit"], option=orjson.OPT_SORT_KEYS)
        if key not in seen:
            seen.add(key)
            order.append(n)
    out = []
    for k in range(max((len(n["passed"]) for n in order), default=0)):
        out += [(n, n["passed"][k]) for n in order if k < len(n["passed"])]
    return out


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
        counts = {"sets": {s: len(v) for s, v in by_split(records).items()}}
        c = Counter((e["negative_type"], r["split"]) for r in records for e in r["edits"])
        for t in sorted({t for t, _ in c}):
            counts[f"edits: {t}"] = {s: c.get((t, s), 0) for s in ("train", "val", "test")}
        folder.write_summary({"shape": "imagecode", "version": VERSION, "enabled": opts.enabled, "counts": counts})
        unit.meta["counts"] = counts
        unit.write("sets", records)

    def _sets(self, unit: Unit, folder: ExportFolder) -> list[dict[str, Any]]:
        cfg, need = unit.cfg, unit.cfg.exports.imagecode.edits
        table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
        positives = kept_positives(unit)
        negs_by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n in kept_image_negatives(unit, {p["id"] for p in positives}):
            negs_by_image[n["source_image_id"]].append(n)
        positives = [p for p in positives if negs_by_image.get(p["image_id"])]
        unit.items_in = len(positives)
        ok: dict[tuple[int, int], bool] = {}
        checks = GraphChecks(table)
        by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in positives:
            by_image[p["image_id"]].append(p)
        for image_id, ps in by_image.items():
            checks.add(image_id, _falsifies(ps, negs_by_image[image_id], table, ok))
        checks.run(hygiene_graphs(unit))
        images = resolve_inputs(unit.root, cfg)[1]
        out = []
        for p in positives:
            pool = gather(p, negs_by_image[p["image_id"]], ok)
            if images is None:  # no source images: the images stage made no negatives either
                continue
            if len(pool) < need:
                unit.stats["positives_with_too_few_edits"] += 1
                why = f"{len(pool)} passing edits falsify the expression; a set needs {need}"
                unit.reject(Reject("imagecode", why, p["image_id"], p["id"]))
                continue
            out.append(_record(p, pool[:need], folder, image_file(images, p["image_id"]), cfg.seed))
        return out


def _falsifies(
    positives: list[dict[str, Any]], negs: list[dict[str, Any]], table: AttributeTable, ok: dict[tuple[int, int], bool]
) -> Any:
    paths = [(p["id"], PathNode.from_json(p["path"]).without_ids()) for p in positives]

    def check(g: SceneGraph, index: GraphIndex) -> None:
        for n in negs:
            try:
                edited = GraphIndex(apply_edit(g, n["edit"]), table)
            except ValueError:
                continue
            for pid, path in paths:
                ok[(pid, n["id"])] = not execute(path, edited)

    return check


def _record(p: dict[str, Any], pool: list[tuple[dict, str]], folder: ExportFolder, src: Any, seed: int) -> dict:
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
