"""The pixels stage: each positive's and each colour text negative's claims checked against the photo.

Per shard, for every positive the language stage kept and every text negative it made, when the run has
images (`pixels.enabled`): `core/pixels/claims.py` judges the colour attributes and same-colour edges of the
path, settles the graph's doubt of an unannotated twin where the claim is a colour, searches the photo for
another region like the target (`pixels.twin_search`), and checks whether the colour a text negative puts on
an object is there after all. Nothing is decided here: the decide stage drops what `pixels.drop` names and
adds the risks (`filters/evidence.py`), so `hardneg split` can change that without looking again.

Each photo is decoded once for all its samples, and an object is masked only when a claim needs it.
Without images the stage writes nothing and says so; the graph-only rules are untouched.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from hardneg.core.certify import Certifier
from hardneg.core.executor import GraphIndex
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.pixels.claims import Photo, judge_negative, judge_positive
from hardneg.core.records import Reject
from hardneg.core.rows import (
    HYGIENE_GRAPHS,
    LANGUAGE_NEGATIVES,
    LANGUAGE_POSITIVES,
    PIXELS_NEGATIVES,
    PIXELS_POSITIVES,
    PixelNegativeRow,
    PixelPositiveRow,
    PositiveRow,
    TextNegativeRow,
)
from hardneg.core.runner.stage import Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.filters.score import open_rgb

VERSION = "pixels@v1"


class PixelsStage(Stage):
    name = "pixels"
    version = VERSION
    reads = ("hygiene", "language")
    writes = outputs(PIXELS_POSITIVES, PIXELS_NEGATIVES)
    config = ("seed", "attribute_table", "pixels.enabled", "pixels.twin_search")
    data = ("attribute_table",)

    def extra_fingerprint(self, run: Any) -> Any:
        return words_digest()  # the certifier's word tables decide which objects a claim is about

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        images = unit.images
        positives = list(unit.records(LANGUAGE_POSITIVES))
        negatives = list(unit.records(LANGUAGE_NEGATIVES))
        unit.items_in = len(positives) + len(negatives)
        if images is None or not cfg.pixels.enabled:
            unit.stats["not_run:no images" if images is None else "not_run:pixels.enabled is false"] += 1
            unit.write("positives", [])
            unit.write("negatives", [])
            return
        graphs = {r.image_id: r.scene_graph() for r in unit.records(HYGIENE_GRAPHS)}
        words = Words.load()
        table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
        certifier = Certifier(words, table)
        by_image: dict[str, list[PositiveRow | TextNegativeRow]] = defaultdict(list)
        for p in positives:
            by_image[p.image_id].append(p)
        by_id = {p.id: p for p in positives}
        for n in negatives:
            if n.positive_id in by_id:
                by_image[n.image_id].append(n)
        pos_rows: list[PixelPositiveRow] = []
        neg_rows: list[PixelNegativeRow] = []
        for image_id in sorted(by_image):
            graph = graphs.get(image_id)
            if graph is None:
                continue
            start = time.perf_counter()
            try:
                rgb = np.asarray(open_rgb(image_file(images, image_id)))
            except (OSError, SyntaxError, ValueError) as e:
                unit.stats["unreadable"] += 1
                unit.rejects.append(Reject(self.name, f"photo unreadable: {e}", image_id))
                continue
            photo = Photo(rgb, graph, seed=cfg.seed)
            index = GraphIndex(graph, table)
            for r in by_image[image_id]:
                path = (r if isinstance(r, PositiveRow) else by_id[r.positive_id]).node()
                target = path.id
                if target not in graph.objects:
                    continue
                if isinstance(r, PositiveRow):
                    check = judge_positive(photo, path, target, index, certifier, words, twins=cfg.pixels.twin_search)
                    unit.stats.update(f"checked:{rule}" for rule in check.checked)
                    unit.stats.update(f"found:{f.rule}" for f in check.findings)
                    unit.stats["found:twin_resolved"] += check.resolved is not None
                    findings = [f.to_json() for f in check.findings]
                    pos_rows.append(PixelPositiveRow(id=r.id, checked=sorted(check.checked), findings=findings,
                                                     resolved=check.resolved))  # fmt: skip
                else:
                    checked, found = judge_negative(photo, path, r.node(), target, index, words)
                    if checked:
                        unit.stats["checked:colour_still_true"] += 1
                        unit.stats["found:colour_still_true"] += found is not None
                        neg_rows.append(PixelNegativeRow(id=r.id, finding=None if found is None else found.to_json()))
            unit.stats["images"] += 1
            unit.stats["objects"] += len(graph.objects)
            unit.stats["masks"] += photo.masks_made
            unit.stats["ms"] += round(1000 * (time.perf_counter() - start))
        unit.write("positives", sorted(pos_rows, key=lambda x: x.id))
        unit.write("negatives", sorted(neg_rows, key=lambda x: x.id))
