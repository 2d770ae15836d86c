"""Are the image negatives a run emits really false of their pictures? An audit from outside the pipeline.

    python -m benchmarks.image_truth                                   # the demo world
    python -m benchmarks.image_truth --scene-graphs DIR/sceneGraphs.json --images DIR/images --all-test
    python -m benchmarks.image_truth --run outputs/demo-1a2b3c4d       # a finished run folder

For every image negative the run made, this re-derives what the edited picture shows from the source
graph and the edit's words alone, by the rules a person checking the picture would use, and re-executes
the positive's path on that graph with the certificate text negatives get (`Certifier.nothing`):

- a swap of two objects' crops moves each crop's looks (every attribute but size and position) and the
  objects each crop holds;
- a donor pasted for a rename brings the donor's own looks and whatever its crop holds (read from the
  donor's graph);
- recolours, removals and flips change what they say.

It prints, per negative type: made, kept by the filters (verified), dropped by them (rejected) with
their reasons, and how many kept ones are still true of the picture; then the same truth check for every
ImageCoDe distractor. `--all-test` puts every image in the test split, where image negatives are made.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from hardneg.core.certify import Certifier
from hardneg.core.config import load_config
from hardneg.core.edits import BOX_BOUND, apply_edit, flip_graph
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.io import read_jsonl
from hardneg.core.plugins import IMAGE_NEGATIVES
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.core.rows import GraphRow
from hardneg.core.runner.stage import Run
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.exports.stats import gist
from hardneg.flows.pipeline import STAGES
from hardneg.generators.images.edits import CARRIED, intersection

TYPES = IMAGE_NEGATIVES.names()


def rows(root: Path, stage: str, kind: str) -> list[dict[str, Any]]:
    return [r for f in sorted((root / "work" / stage).glob(f"{kind}-*.jsonl")) for r in read_jsonl(f)]


def _looks(attrs: tuple[str, ...], table: AttributeTable) -> tuple[str, ...]:
    return tuple(a for a in attrs if table.category(a) not in BOX_BOUND)


def _inside(graph: SceneGraph, box: tuple[int, int, int, int], into: tuple[int, int, int, int], *skip: str) -> list:
    """Objects of `graph` mostly inside `box`, re-placed (stretched) into `into`."""
    x, y, w, h = box
    X, Y, W, H = into
    out = []
    for o in graph.objects.values():
        if o.id in skip or o.area <= 0 or intersection(o.box, box) < CARRIED * o.area:
            continue
        sx, sy = W / max(w, 1), H / max(h, 1)
        nb = (X + round((o.x - x) * sx), Y + round((o.y - y) * sy), max(1, round(o.w * sx)), max(1, round(o.h * sy)))
        out.append((o.name, o.attributes, nb))
    return out


def _with_objects(graph: SceneGraph, changed: list[SceneObject], added: list[tuple]) -> SceneGraph:
    objects = dict(graph.objects)
    for o in changed:
        objects[o.id] = o
    for k, (name, attrs, box) in enumerate(added):
        objects[f"audit+{k}"] = SceneObject(f"audit+{k}", name, *box, attributes=attrs)
    return replace(graph, objects=objects)


def pixel_graph(
    edit: dict[str, Any], graph: SceneGraph, graphs: dict[str, SceneGraph], table: AttributeTable
) -> SceneGraph | None:
    """What the edited picture shows, derived from the edit's core words and the graphs (None: cannot tell)."""
    op = edit["op"]
    if op == "flip":
        return flip_graph(graph)
    if op in ("set_attribute", "swap_attributes", "remove"):
        return apply_edit(graph, {k: edit[k] for k in ("op", "object", "objects", "from", "to") if k in edit})
    if op == "swap_names":
        a, b = (graph.objects[i] for i in edit["objects"])
        own_a = tuple(x for x in a.attributes if x not in _looks(a.attributes, table))
        own_b = tuple(x for x in b.attributes if x not in _looks(b.attributes, table))
        a2 = replace(a, name=b.name, attributes=own_a + _looks(b.attributes, table))
        b2 = replace(b, name=a.name, attributes=own_b + _looks(a.attributes, table))
        added = _inside(graph, b.box, a.box, a.id, b.id) + _inside(graph, a.box, b.box, a.id, b.id)
        return _with_objects(graph, [a2, b2], added)
    if op == "rename":
        o = graph.objects[edit["object"]]
        donor = edit.get("donor")
        if donor is None or donor["image_id"] not in graphs:
            return None
        dg = graphs[donor["image_id"]]
        d = dg.objects[donor["object"]]
        own = tuple(x for x in o.attributes if x not in _looks(o.attributes, table))
        o2 = replace(o, name=edit["name"], attributes=own + _looks(d.attributes, table))
        return _with_objects(graph, [o2], _inside(dg, d.box, o.box, d.id))
    raise ValueError(f"unknown edit {edit!r}")


def audit(root: Path, attribute_table: Path | None = None) -> dict[str, Any]:
    table = AttributeTable.load(attribute_table) if attribute_table else AttributeTable.load()
    certifier = Certifier(Words.load(), table)
    graphs = {g.image_id: g for g in (GraphRow(**r).scene_graph() for r in rows(root, "hygiene", "graphs"))}
    decisions = {d["id"]: d for d in rows(root, "decide", "negatives")}
    positives = {p["id"]: p for p in rows(root, "language", "positives")}
    made: Counter = Counter()
    kept: Counter = Counter()
    why: dict[str, Counter] = defaultdict(Counter)
    true_kept: Counter = Counter()
    unknown: Counter = Counter()
    examples: list[str] = []
    negs = {r["id"]: r for r in rows(root, "images", "image-negatives")}

    def still_true(path: dict[str, Any], edit: dict[str, Any], image_id: str) -> str | bool | None:
        g = pixel_graph(edit, graphs[image_id], graphs, table)
        if g is None:
            return False
        return certifier.nothing(PathNode.from_json(path).without_ids(), g)

    for r in negs.values():
        t = r["negative_type"]
        made[t] += 1
        d = decisions.get(r["id"], {})
        if not d.get("keep"):
            why[t][gist(d.get("reason") or "no decision")] += 1
            continue
        kept[t] += 1
        res = still_true(r["path"], r["edit"], r["source_image_id"])
        if res is False:
            unknown[t] += 1
        elif res:
            true_kept[t] += 1
            if len(examples) < 8:
                examples.append(f'{t}: "{r["expression"]}" with {orjson.dumps(r["edit"]).decode()[:120]}: {res}')
    sets = rows(root, "imagecode", "sets")
    distractors: Counter = Counter()
    true_distractors: Counter = Counter()
    for s in sets:
        p = positives.get(s["positive_id"])
        for e in s["edits"]:
            t = e["negative_type"]
            distractors[t] += 1
            res = still_true(s["path"] if p is None else p["path"], e["edit"], s["image_id"])
            true_distractors[t] += bool(res)
    stage = orjson.loads((root / "work" / "images" / "_stage.json").read_bytes()).get("stats", {})
    refused = Counter({t: stage.get(f"refused:{t}", 0) + stage.get(f"uncertified:{t}", 0) for t in TYPES})
    return {"made": made, "kept": kept, "why": why, "true": true_kept, "unknown": unknown, "examples": examples,
            "sets": len(sets), "distractors": distractors, "true_distractors": true_distractors,
            "refused": refused}  # fmt: skip


def report(m: dict[str, Any], what: str, seconds: float) -> str:
    lines = [f"## Image negatives of {what} ({seconds:.0f} s)", "",
             "| type | refused before painting | made | verified (kept) | rejected | still true (kept) |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for t in TYPES:
        if m["made"][t] or m["refused"][t]:
            extra = f" ({m['unknown'][t]} not derivable)" if m["unknown"][t] else ""
            lines.append(f"| {t} | {m['refused'][t]} | {m['made'][t]} | {m['kept'][t]} | "
                         f"{m['made'][t] - m['kept'][t]} | {m['true'][t]}{extra} |")  # fmt: skip
    total = sum(m["made"].values())
    lines.append(f"| all | {sum(m['refused'].values())} | {total} | {sum(m['kept'].values())} | "
                 f"{total - sum(m['kept'].values())} | {sum(m['true'].values())} |")  # fmt: skip
    lines += ["", "### Why the filters rejected", ""]
    for t in TYPES:
        for reason, n in m["why"][t].most_common(6):
            lines.append(f"- {t}: {n} x {reason}")
    if m["examples"]:
        lines += ["", "### Kept but still true", "", *(f"- {e}" for e in m["examples"])]
    lines += ["", f"### ImageCoDe: {m['sets']} sets", "", "| edit type | distractors | still true |", "|---|---|---|"]
    for t in TYPES:
        if m["distractors"][t]:
            lines.append(f"| {t} | {m['distractors'][t]} | {m['true_distractors'][t]} |")
    return "\n".join(lines) + "\n"


def run_all(root: Path, config: str | None, overrides: dict[str, Any]) -> None:
    cfg = load_config(config, overrides)
    prepare_run(cfg, root)
    run = Run(root, cfg, list(STAGES))
    for name in run.order:
        run.run_stage(name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="a finished run folder to audit (default: make one)")
    ap.add_argument("--scene-graphs", type=Path, help="a GQA *_sceneGraphs.json (default: the demo world)")
    ap.add_argument("--images", type=Path, help="the folder of <image_id>.jpg for --scene-graphs")
    ap.add_argument("--config", help="config name or file (default: the embedded demo config)")
    ap.add_argument("--all-test", action="store_true", help="every image in the test split (image negatives)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, help="keep the made run here instead of a temp folder")
    args = ap.parse_args(argv)
    if args.run is not None:
        sys.stdout.write(report(audit(args.run), f"`{args.run}`", 0.0))
        return 0
    overrides: dict[str, Any] = {"seed": args.seed}
    what = "the demo world"
    if args.scene_graphs is not None:
        overrides["inputs"] = {"scene_graphs": str(args.scene_graphs.resolve())}
        if args.images is not None:
            overrides["inputs"]["images"] = str(args.images.resolve())
        what = f"`{args.scene_graphs.name}` ({args.scene_graphs.resolve().parent.name})"
    if args.all_test:
        overrides["splits"] = {"train": 0.0, "val": 0.0, "test": 1.0}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.workdir or Path(tmp) / "run"
        t0 = time.perf_counter()
        run_all(root, args.config, overrides)
        sys.stdout.write(report(audit(root), what, time.perf_counter() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
