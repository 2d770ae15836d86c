"""The TRICD export: contextual phrase detection pairs (the TRICD paper).

For each decided positive (an expression on image I0) the export writes a *positive pair* (I0, the
expression) whose phrases, the spaCy noun chunks of the expression (`exports/phrases.py`, with
their character spans), carry the boxes of every object they name in context on I0
(`export_certify.context_objects`), and *negative pairs* with the same caption and phrases and no boxes:

- **distractors**: the corpus images of I0's split most confusable with it, as TRICD's pairs are: the
  target's name, then the scene by the graph (the expression's other names, its relations stored for an
  object of the same name, the names the two images share, the location: `exports/tricd/rank.py`), in
  which the expression's path certainly matches nothing (`Certifier.nothing`: the executor finds nothing,
  and the graph contradicts every object that could match; the absence of a crowd name proves nothing).
  About `exports.tricd.candidates` images are sampled per positive, the `checked` best ranked are
  certified in rank order until `distractors` pass, and those are kept;
- **image edits**: the run's own image negatives of the positive (the candidate the decide stage chose),
  re-checked on the edited graph, which follows the pixels (`image_edits.falsified`: the executor and the
  certificate).

Pairs are made for the positives of `exports.tricd.splits` (val and test by default: TRICD is an evaluation
benchmark, and its paper has no train split). A positive with no negative pair is left out (its reasons go to
rejects). The primary output, `RUN/tricd/TRICD_grounding_<split>.json`, is in TRICD's own layout, which its
official evaluation code reads unchanged (`export_tricd_official`). Beside it, `RUN/tricd/<split>.json`
keeps one record per pair, `{"id", "phrases": {phrase id: [xywh, ...]}, "subset", "positive_id"}` plus
what a reader needs (`image` relative to the run folder, `caption`, `phrase_text`, `phrase_span`, the
certificate), for the report and for `evaluation.tricd`, which reads either. `subset` is the path type.
A decision stage: no model (the phrases were parsed before), so `hardneg split` reruns it. It searches a
batch of shards a unit (`exports.tricd.batch_images`), on every worker; `finish` writes the folder from the
units' pairs, the files one search over every positive would write.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from functools import partial
from typing import Any

from pydantic import Field

from hardneg.core.certify import VERSION as CERTIFIER
from hardneg.core.certify import Certifier, context_objects
from hardneg.core.config import SplitName
from hardneg.core.config_exports import ExportOptions
from hardneg.core.executor import GraphIndex
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.io import iter_json_array
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import PathNode, Reject, SceneGraph, content_id
from hardneg.core.runner.stage import Run, Unit
from hardneg.core.schema import outputs, to_record
from hardneg.exports.base import ExportStage
from hardneg.exports.common import (
    SPLITS,
    ExportFolder,
    KeptImageNegative,
    KeptPositive,
    kept_image_negatives,
    kept_positives,
)
from hardneg.exports.corpus import (
    Candidates,
    GraphChecks,
    Option,
    certifier,
    corpus,
    shards_per_unit,
)
from hardneg.exports.rows import PHRASES, TRICD_PAIRS, TricdPairRow
from hardneg.exports.tricd.official import file_name, write_official
from hardneg.exports.tricd.rank import rank_distractors
from hardneg.generators.images.edits import falsified

# v2: image edits certified on graphs that follow the pixels; v3: TRICD's own layout, confusable distractors; v4: the
# summary says what the official script gets of a split without pairs; v5: certified with the corpus's notes
VERSION = f"tricd@v5+{CERTIFIER}"
FOLDER = "tricd"
SHOWN = 5  # a dropped positive's rejects line shows why its first candidates failed
Size = tuple[int, int]


class TricdExport(ExportOptions):
    """TRICD contextual phrase detection pairs (the TRICD paper)."""

    enabled: bool = True
    # an evaluation benchmark (the TRICD paper has no train split): pairs for these splits' positives
    splits: list[SplitName] = Field(default_factory=lambda: ["val", "test"])
    distractors: int = Field(1, ge=0, le=10)  # corpus images per positive in which the expression is false
    # about this many images sampled per positive (the target's name, the expression's relations, the scene's
    # rarest names) before they are ranked by how confusable they are with the positive image
    candidates: int = Field(200, ge=1)
    checked: int = Field(20, ge=1)  # the most confusable of them checked by the certificate, in rank order
    image_negatives: bool = True  # the run's chosen edited images are negative pairs too
    batch_images: int = Field(12_500, ge=1)  # images of positives searched together (`shards_per_unit`)


@EXPORTS.add("tricd", order=30)
class TricdStage(ExportStage):
    """TRICD pairs from the decided positives: corpus distractors and the run's image negatives."""

    version = VERSION
    Options = TricdExport
    title = "TRICD contextual phrase detection pairs"
    about = (
        "a positive pair (image, expression) with its noun phrases' boxes, and negative pairs with the same "
        "caption and no boxes: the most confusable corpus images (the same names, a similar scene by the "
        "graph) and the run's edited images in which the expression certainly matches nothing, in TRICD's own "
        "layout (`TRICD_grounding_<split>.json`) for its official evaluation code; `evaluation.tricd`"
    )
    reads = ("hygiene", "plausibility", "language", "images", "decide", "phrases")
    writes = outputs(TRICD_PAIRS)
    config = (
        "seed",
        "splits",
        "exports.tricd.enabled",
        "exports.tricd.splits",
        "exports.tricd.distractors",
        "exports.tricd.candidates",
        "exports.tricd.checked",
        "exports.tricd.image_negatives",
        "exports.tricd.batch_images",
        "shard_size",  # a unit covers shards of the corpus
        "language.small_unannotated",  # the certifier's: a small thing is often there unboxed
    )
    data = ("attribute_table",)
    decision = True
    publishes = (FOLDER,)

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def shards_per_unit(self, run: Run) -> int:
        return shards_per_unit(run.cfg, run.cfg.exports.tricd.batch_images)

    def run(self, unit: Unit) -> None:
        """The pairs of the unit's positives (a batch of shards), each `image` the file it shows (`finish`
        places it)."""
        if unit.cfg.exports.tricd.enabled:
            unit.write("pairs", self._pairs(unit))

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Every unit's pairs, in shard order, in the run's folder: the tables, then TRICD's own layout from
        them, a record at a time (GQA train's pairs are hundreds of thousands)."""
        folder = ExportFolder(run.root, FOLDER)
        folder.reset()
        counts: Counter = Counter()
        with folder.tables(splits=[s for s in SPLITS if s in run.cfg.exports.tricd.splits]) as tables:
            for r in run.records_all(TRICD_PAIRS):
                if r.image is not None:
                    r.image = folder.place(run.root / r.image, f"images/{r.id:x}.jpg")
                tables.add(r.split, r)
                _count(counts, r)
        for split in tables.splits:
            pairs = (to_record(r, TricdPairRow) for r in iter_json_array(folder.dir / f"{split}.json"))
            write_official(folder.dir / file_name(split), pairs, FOLDER)
        kinds = sorted({k for k, _ in counts})
        counts_out = {k: {s: counts.get((k, s), 0) for s in SPLITS} for k in kinds}
        enabled = run.cfg.exports.tricd.enabled
        chosen = run.cfg.exports.tricd.splits
        notes = [
            f"{s}: no pairs; `{file_name(s)}` is written empty, and the official `main.py` runs on it to 0 items"
            if s in chosen
            else f"{s}: not emitted (TRICD is an evaluation benchmark; `exports.tricd.splits` adds it)"
            for s in SPLITS
            if enabled and not counts.get(("positive pairs", s))
        ]
        summary = {"shape": "tricd", "version": VERSION, "enabled": enabled, "counts": counts_out, "notes": notes}
        folder.write_summary(summary)
        return {"meta": {"counts": counts_out}}

    def _pairs(self, unit: Unit) -> list[TricdPairRow]:
        cfg, opts = unit.cfg, unit.cfg.exports.tricd
        _, table, cert = certifier(unit)
        positives = kept_positives(unit, opts.splits)
        unit.items_in = len(positives)
        phrases = {r.id: r.phrases for r in unit.records(PHRASES)}
        edits: dict[int, list[dict[str, Any]]] = defaultdict(list)
        if opts.image_negatives:
            for n in kept_image_negatives(unit, {p.id for p in positives}):
                edits[n.positive_id].append(n)
        index = corpus(unit)
        checks = GraphChecks(table, index)
        boxes: dict[int, list[list[list[int]]]] = {}
        sizes: dict[str, Size] = {}  # graph image id -> (width, height); an edit keeps its source's size
        found: dict[int, dict[int, tuple[str, str | None]]] = defaultdict(dict)  # rank -> (image, why not)
        distractors: dict[int, Candidates[str]] = {}
        edit_ok: dict[int, bool] = {}
        todo = []
        for p in positives:
            ph = phrases.get(p.id, [])
            if not any(x["node"] == 0 for x in ph):
                unit.stats["dropped:no_phrase_names_the_target"] += 1
                unit.reject(Reject("tricd", "no noun phrase names the target", p.image_id, p.id))
                continue
            path = p.node()
            todo.append((p, path, ph))
            checks.add(p.image_id, _boxes_check(p, path, boxes, sizes))
            if opts.distractors:
                ranked = rank_distractors(index, p, path, opts.candidates, opts.checked, cfg.seed)
                distractors[p.id] = _distractors(cert, checks, path, ranked, opts.distractors, found[p.id], sizes)
            for n in edits[p.id]:
                checks.add(p.image_id, _edit_check(path, n, cert, edit_ok))
        checks.run()
        images = unit.images
        folder = ExportFolder(unit.root, FOLDER)
        out: list[TricdPairRow] = []
        for p, _path, ph in todo:
            chosen = [(img, why) for _, (img, why) in sorted(found[p.id].items())]
            kept = distractors[p.id].won() if p.id in distractors else []
            negs = [n for n in edits[p.id] if edit_ok.get(n.id)]
            unit.stats["image_edits_refused"] += len(edits[p.id]) - len(negs)
            if not kept and not negs:
                unit.stats["dropped:no_negative_pair"] += 1
                detail = {"candidates": [{"image_id": i, "why": w} for i, w in chosen[:SHOWN]]}
                reason = "no distractor image is certified and no image negative re-checks"
                unit.reject(Reject("tricd", reason, p.image_id, p.id, detail=detail))
                continue
            out += _records(p, ph, boxes[p.id], kept, negs, folder, images, sizes)
        return out


def _boxes_check(
    p: KeptPositive, path: PathNode, boxes: dict[int, list[list[list[int]]]], sizes: dict[str, Size]
) -> Any:
    def check(g: SceneGraph, index: GraphIndex) -> None:
        sizes[g.image_id] = (g.width, g.height)
        ctx = context_objects(path, index, path.id or "")
        boxes[p.id] = [[list(g.objects[o].box) for o in sorted(objs)] for objs in ctx]

    return check


def _distractors(
    cert: Certifier,
    checks: GraphChecks,
    path: PathNode,
    ranked: list[str],
    wanted: int,
    found: dict[int, tuple[str, str | None]],
    sizes: dict[str, Size],
) -> Candidates[str]:
    """One positive's ranked candidates certified in rank order until `wanted` pass (`Candidates`: the
    first `wanted` certified, as if all were), the verdicts of the first `SHOWN` kept by rank for the rejects."""
    bare = path.without_ids()  # once, not once a candidate

    def test(rank: int, g: SceneGraph, index: GraphIndex) -> bool:
        sizes[g.image_id] = (g.width, g.height)
        why = cert.nothing(bare, g, index)
        if rank < SHOWN:  # the rejects show the first few; the ranks tried are always the first ones
            found[rank] = (g.image_id, why)
        return why is None

    out: Candidates[str] = Candidates({}, wanted)
    out.add_all(Option(partial(str, img), [(img, partial(test, rank))]) for rank, img in enumerate(ranked))
    out.start(checks)
    return out


def _edit_check(path: PathNode, n: KeptImageNegative, cert: Certifier, ok: dict[int, bool]) -> Any:
    def check(g: SceneGraph, index: GraphIndex) -> None:
        ok[n.id] = falsified(path, g, n.edit, cert) is None

    return check


def _records(
    p: KeptPositive,
    phrases: list[dict[str, Any]],
    node_boxes: list[list[list[int]]],
    distractors: list[str],
    negs: list[KeptImageNegative],
    folder: ExportFolder,
    images: Any,
    sizes: dict[str, Size],
) -> list[TricdPairRow]:
    ids = [f"p{k}" for k in range(len(phrases))]
    common = {
        "caption": p.expression,
        "phrase_text": {i: ph["text"] for i, ph in zip(ids, phrases, strict=True)},
        "phrase_span": {i: [ph["start"], ph["end"]] for i, ph in zip(ids, phrases, strict=True)},
        "phrase_node": {i: ph["node"] for i, ph in zip(ids, phrases, strict=True)},
        "subset": p.tuple_type,
        "split": p.split,
        "sample_id": p.id,
        "level": p.level,
        "path": p.path,
    }
    pos_id = content_id("tricd", str(p.id))

    def image(image_id: str) -> str | None:  # the source file: the stage's `finish` places it
        return folder.source(image_file(images, image_id)) if images is not None else None

    out = [
        TricdPairRow(
            id=pos_id,
            image=image(p.image_id),
            image_id=p.image_id,
            width=sizes[p.image_id][0],
            height=sizes[p.image_id][1],
            phrases={i: node_boxes[ph["node"]] for i, ph in zip(ids, phrases, strict=True)},
            positive_id=None,
            negative=None,
            certificate=None,
            **common,
        )
    ]
    empty = {i: [] for i in ids}
    for img in distractors:
        nid = content_id("tricd-distractor", str(p.id), img)
        cert = {"kind": "distractor", "image_id": img}
        out.append(
            TricdPairRow(id=nid, image=image(img), image_id=img, width=sizes[img][0], height=sizes[img][1],
                         phrases=empty, positive_id=pos_id, negative="distractor", certificate=cert, **common)
        )  # fmt: skip
    for n in negs:
        nid = content_id("tricd-edit", str(n.id))
        cert = {"kind": "image_edit", "image_id": n.source_image_id, "edit": n.edit, "negative_id": n.id}
        out.append(
            TricdPairRow(id=nid, image=n.chosen, image_id=n.image_id, width=sizes[n.source_image_id][0],
                         height=sizes[n.source_image_id][1], phrases=empty, positive_id=pos_id,
                         negative="image_edit", certificate=cert, **common)
        )  # fmt: skip
    return out


def _count(c: Counter, r: TricdPairRow) -> None:
    """A pair in the summary's counts: (kind, split) -> pairs, and phrases of positive pairs."""
    kind = "positive pairs" if r.positive_id is None else f"negative pairs: {r.negative}"
    c[(kind, r.split)] += 1
    if r.positive_id is None:
        c[("phrases", r.split)] += len(r.phrases)
