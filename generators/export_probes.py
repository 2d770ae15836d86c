"""The probes export: Probe-R, Probe-C and Probe-B in `RUN/probes/` (the probing paper).

- `probes/probe_r/<split>.json`: one record per comparison, `{"id", "kind", "image", "correct",
  "swapped", ...}`: a model scores (image, correct) and (image, swapped) and the pair goes to
  `evaluation.probes.probe_accuracy` as `{"id", "kind", "score_correct", "score_swapped"}`;
- `probes/probe_c/<split>.json`: one record per 2 x 2 group, `{"id", "kind", "images": [x1, x2],
  "prompts": [p1, p2], ...}`, prompt i true of image i and false of the other: `evaluation.probes.
  group_scores` takes `scores[i][j]` = f(prompt i, image j);
- `probes/probe_b/<split>.json`: the Probe-B stage's groups (`generators/export_probe_b.py`): per variant
  image, the target's prompt against each absent name's (`probe_accuracy`, kind `probe_b/<variant>`).
Every record keeps its certificate (the paths that must match, or certainly match nothing, in which
image), and its `split` is its first image's (`core/splits.py`). Source images are linked under
`probes/images/`. Probe-R and Probe-C come from the decided positives (`generators/export_probe_rc.py`);
this is a decision stage: `hardneg split` reruns it, while the Probe-B images it publishes stay as made.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hardneg.core.attributes import AttributeTable
from hardneg.core.hygiene import words_digest
from hardneg.core.ids import safe_name
from hardneg.core.plausibility import Counts
from hardneg.core.records import PathNode, Reject, content_id
from hardneg.core.runfolder import image_file, resolve_inputs
from hardneg.core.stage import Run, Stage, Unit
from hardneg.core.words import Words
from hardneg.generators.export_certify import VERSION as CERTIFIER
from hardneg.generators.export_certify import Certifier
from hardneg.generators.export_common import (
    SPLITS,
    CorpusIndex,
    ExportFolder,
    GraphChecks,
    by_split,
    hygiene_graphs,
    kept_positives,
)
from hardneg.generators.export_probe_rc import ProbeSearch

VERSION = f"probes@v1+{CERTIFIER}"
FOLDER = "probes"
TABLES = ("probe_r", "probe_c", "probe_b")


def probe_facts(path: PathNode) -> tuple[list[tuple[str, str, str, str, str]], list[tuple[str, str, str]]]:
    """A positive path's grounded relation triples (subject id, s, r, o, object id) and attributes
    (object id, name, attribute)."""
    triples, attrs = [], []
    for n in path.nodes():
        for a in n.attributes:
            attrs.append((n.id or "", n.name, a))
        for e in n.relations:
            triples.append((n.id or "", n.name, e.name, e.object.name, e.object.id or ""))
    return triples, attrs


class ProbesStage(Stage):
    """Probe-R and Probe-C from the decided positives; publishes Probe-B's groups beside them."""

    name = "probes"
    version = VERSION
    reads = ("hygiene", "plausibility", "language", "decide", "probe_b")
    config = ("seed", "splits", "exports.probes")
    data = ("attribute_table",)
    sharded = False
    decision = True

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        folder = ExportFolder(unit.root, FOLDER)
        folder.reset(*TABLES, "images")
        tables: dict[str, list[dict[str, Any]]] = {"probe_r": [], "probe_c": []}
        if cfg.exports.probes.enabled:
            tables.update(self._probes(unit, folder))
        tables["probe_b"] = list(unit.read_all("probe_b", "groups"))
        counts: dict[str, dict[str, int]] = {}
        for name, rows in tables.items():
            for split, part in by_split(rows).items():
                folder.write_table(f"{name}/{split}", part)
            c = Counter((r["kind"] if name != "probe_b" else "probe_b/groups", r["split"]) for r in rows)
            for kind in sorted({k for k, _ in c}):
                counts[kind] = {s: c.get((kind, s), 0) for s in SPLITS}
            unit.write(name, rows)
        summary = {"shape": "probes", "version": VERSION, "enabled": cfg.exports.probes.enabled, "counts": counts}
        folder.write_summary(summary)
        unit.meta["counts"] = counts

    def _probes(self, unit: Unit, folder: ExportFolder) -> dict[str, list[dict[str, Any]]]:
        cfg, opts = unit.cfg, unit.cfg.exports.probes
        words, table = Words.load(), AttributeTable.load(cfg.resolve(cfg.attribute_table))
        cert = Certifier(words, table)
        counts = Counts.from_rows(unit.read_all("plausibility", "counts"))
        index = CorpusIndex(unit.read_all("hygiene", "graphs"), cfg.splits, pairs=True)
        checks = GraphChecks(table)
        search = ProbeSearch(words, cert, counts, index, checks, cfg.seed, opts.candidates, opts.subject_only_images)
        positives = sorted(kept_positives(unit), key=lambda p: p["id"])
        unit.items_in = len(positives)
        seen: set[tuple[str, ...]] = set()
        for p in positives:
            triples, attrs = probe_facts(PathNode.from_json(p["path"]))
            for sid, s, r, o, oid in triples:
                if (key := (p["image_id"], sid, r, oid)) not in seen:
                    seen.add(key)
                    search.relation(p, s, r, o)
            for oid, n, a in attrs:
                if (key := (p["image_id"], oid, a)) not in seen:
                    seen.add(key)
                    search.attribute(p, n, a)
        checks.run(hygiene_graphs(unit))
        found, missed = search.results()
        for kind, n in missed.items():
            unit.stats[f"not_certified:{kind}"] += n
            unit.reject(Reject("probes", f"{kind}: no swap or image certified for {n} probes"))
        images = resolve_inputs(unit.root, cfg)[1]

        def link(image_id: str) -> str | None:
            if images is None:
                return None
            return folder.place(image_file(images, image_id), f"images/{safe_name(image_id)}.jpg")

        out: dict[str, list[dict[str, Any]]] = {"probe_r": [], "probe_c": []}
        ids: set[int] = set()
        for r in found:  # one record per distinct (kind, images, prompts): two cups on one table ask one thing
            if r["kind"].startswith("probe_r/"):
                r["id"] = content_id("probe", r["kind"], r["image_id"], r["correct"], r["swapped"])
            else:
                r["id"] = content_id("probe", r["kind"], *r["image_ids"], *r["prompts"])
            if r["id"] in ids:
                continue
            ids.add(r["id"])
            if r["kind"].startswith("probe_r/"):
                r["image"] = link(r["image_id"])
                out["probe_r"].append(r)
            else:
                r["images"] = [link(i) for i in r["image_ids"]]
                out["probe_c"].append(r)
        for rows in out.values():
            rows.sort(key=lambda r: r["id"])
        return out
