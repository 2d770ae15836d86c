"""The write stage: the run folder's outputs from the decided samples.

Splits by image (`core/splits.py`): positives and their text negatives from the language stage, image
negatives from the images stage, each kept or dropped by the decide stage (which also picks an image
negative's candidate); `splits/<split>/{positive,negative,coco}.json`, `rejects.jsonl` (every stage's
rejects in stage order), `manifest.json`, and the Hugging Face dataset's `data/` (`exports/dataset.py`).
It reruns in seconds (`hardneg split`). The splits, rejects and manifest are written beside the old ones and
swapped in together when complete (`core/runner/publish.py`), so a write that fails half-way leaves the
previous outputs whole. What it counts (the tables of `stats.md`) and what the dataset card says of `data/`
it keeps with its summary, for the run's last stage to publish with the exports' counts
(`exports/summary.py`).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson

from hardneg import __version__
from hardneg.core.demo.world import GENERATOR_VERSION as DEMO_WORLD_VERSION
from hardneg.core.gqa.hygiene import CHANGES as HYGIENE_CHANGES
from hardneg.core.gqa.run_inputs import demo_dir
from hardneg.core.io import temp_path, write_json
from hardneg.core.rows import DECIDED_NEGATIVES, DECIDED_POSITIVES
from hardneg.core.runner.folder import created_on
from hardneg.core.runner.publish import begin, publish
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.exports.dataset import DatasetFiles
from hardneg.exports.published import SplitFiles, kept_digest, published
from hardneg.exports.stats import (
    build_stats,
    image_edit_table,
    pixel_rules,
    positive_risk,
    rejects_summary,
    run_header,
    text_mix,
)


class WriteStage(Stage):
    name = "write"
    # v2: the Hugging Face dataset (data/, README.md); COCO file names under the run. v3: stats.md says which
    # splits FineCops-Ref's own evaluation script can score. v4: what hygiene changed in the graphs (manifest, stats.md)
    version = "write@v5"  # v5: stats and the card are published by the run's last stage (once, whole)
    reads_all = True
    reports = True  # the manifest's counts and timings describe the latest run of every stage
    # stats.md names the risk cut; the manifest records the whole config that made the outputs, and a change
    # that alters none of them leaves that record as it was (`hardneg split`: "nothing changed")
    config = ("splits", "risk.max")
    sharded = False
    decision = True
    publishes = ("splits", "rejects.jsonl", "manifest.json", "data")

    def run(self, unit: Unit) -> None:
        root = unit.root
        out = begin(root)  # written beside the old outputs, swapped in when complete (core/runner/publish.py)
        decisions = {d.id: d for d in unit.records_all(DECIDED_NEGATIVES)}
        positive_decisions = {d.id: d for d in unit.records_all(DECIDED_POSITIVES)}
        files = SplitFiles(out, unit.images is not None)
        dataset = DatasetFiles(root, unit.images)  # the Hugging Face form: data/*/*/metadata.parquet and images
        edits: dict[str, Counter] = defaultdict(Counter)  # per negative image type: made, verified, why not
        for sample in published(unit, positive_decisions, decisions, edits):
            files.add(sample)
            dataset.add(sample, sample.split)
        files.close()
        # only the stages before this one: a later stage's rejects from an earlier run are stale here
        earlier = set(unit.run.reads[self.name])
        reject_files = [f for f in unit.run.reject_files() if f.parent.parent.name in earlier]
        _concat(reject_files, out / "rejects.jsonl")

        summaries = {name: unit.run.summary(name) for name in unit.run.reads[self.name]}
        filters = _filter_rates(summaries)
        decide = summaries["decide"]["meta"]
        mix = text_mix(summaries["language"]["stats"], decide)
        stats = build_stats(
            files.positives,
            files.text_negatives,
            files.image_negatives,
            filters,
            decide.get("review"),
            mix,
            decide.get("audit"),
        )
        stats["positive_risk"] = positive_risk(summaries["decide"]["stats"], unit.cfg.risk.max)
        stats["image_edits"] = image_edit_table(edits, summaries["images"]["stats"])
        stats["pixel_rules"] = pixel_rules(summaries["pixels"]["stats"], summaries["decide"]["stats"])
        manifest = publishable(_manifest(unit.run, summaries, files), root)
        # what made the run, as the manifest records it: the whole config that made these outputs
        stats["run"] = {**run_header(manifest, unit.run.cfg), "date": created_on(root)}
        stats["hygiene"] = manifest["counts"]["hygiene"]
        stats["rejects"] = rejects_summary([(f, unit.run.reject_reasons(f)) for f in reject_files])
        # what a reader must see first: the stages' own warnings, then the text-negative mix's
        stats["warnings"] = [w for name in unit.run.reads[self.name] for w in summaries[name].get("warnings", [])]
        stats["warnings"] += mix.get("warnings", [])
        unit.meta["stats"] = stats
        manifest["counts"]["filters"] = stats["filters"]
        manifest["thresholds"] = summaries["decide"]["meta"].get("thresholds", {})
        manifest["review"] = summaries["decide"]["meta"].get("review", {})
        manifest["counts"]["text_negative_mix"] = mix
        manifest["counts"]["warnings"] = stats["warnings"]
        write_json(out / "manifest.json", manifest)
        publish(root)
        unit.stats.update({f"positives:{s}": n for s, n in files.counts().items()})
        unit.stats.update({f"negatives:{s}": n for s, n in files.counts(negatives=True).items()})
        unit.stats["kept:positives"] = sum(files.counts().values())
        unit.stats["kept:negatives"] = sum(files.counts(negatives=True).values())
        unit.meta["dataset"] = dataset.close()  # in place once the splits are (what the card says of it)
        # what `hardneg split` compares: the decisions this wrote out
        unit.meta["kept"] = kept_digest(positive_decisions.values(), decisions.values(), summaries["decide"]["meta"])


def _concat(files: list[Path], out: Path) -> None:
    tmp = temp_path(out)
    with tmp.open("wb") as dst:
        for f in files:
            with f.open("rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
    tmp.replace(out)


def _filter_rates(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Pass rates per filter: balance, refine, each configured filter that ran; "not run" for the rest."""
    sel = summaries["select"]["stats"]
    out: dict[str, dict[str, Any]] = {"balance": {"passed": sel["kept"], "seen": sel["kept"] + sel["dropped"]}}
    decide = summaries["decide"]["meta"]
    out.update(decide["passes"])
    for name in decide["not_run"]:
        out[name] = {"passed": None, "seen": None, "not_run": True}
    for name in decide.get("not_configured", []):
        out[name] = {"passed": None, "seen": None, "not_configured": True}
    return out


def _manifest(run: Run, summaries: dict[str, dict[str, Any]], files: SplitFiles) -> dict[str, Any]:
    table, neg_table, image_table = files.positives, files.text_negatives, files.image_negatives
    cfg = run.cfg
    ingest = summaries["ingest"]
    language = summaries["language"]
    sel = summaries["select"]["stats"]
    refine = summaries["decide"]["meta"]["passes"].get("refine")
    return {
        "hardneg_version": __version__,
        "run": run.root.name,
        "seed": cfg.seed,
        "config": publishable(cfg.model_dump(mode="json"), run.root),
        "config_fingerprint": cfg.fingerprint(),
        "inputs": published_inputs(run, ingest),
        "versions": {
            "stages": {name: run.stages[name].version for name in run.order},
            "data": {
                **summaries["paths"].get("data_versions", {}),
                **summaries["plausibility"].get("data_versions", {}),
            },
            **({"demo_world": DEMO_WORLD_VERSION} if cfg.inputs.scene_graphs is None else {}),
        },
        "models": {
            "language_backend": language.get("backends", []),
            "spacy": language.get("spacy", []),
            "filters": summaries["filters"].get("identities", {}),
            "refine_scorers": summaries["refine"]["meta"].get("scorers", []),
        },
        "stages": {
            name: {k: s[k] for k in ("fingerprint", "seconds", "items_in", "written", "rejects")}
            for name, s in summaries.items()
        },
        "counts": {
            "ingest": {k: v for k, v in ingest["stats"].items()},
            "repairs": ingest["meta"]["repairs"],
            "hygiene": {k: v for k, v in summaries["hygiene"]["stats"].items() if k in HYGIENE_CHANGES},
            "paths": summaries["paths"]["stats"],
            "positives_candidates": sel["kept"] + sel["dropped"],
            "positives_kept": sel["kept"],
            "balance_dropped": sel["dropped"],
            "balance_dropped_by_reason": {k.split(":", 1)[1]: v for k, v in sel.items() if k.startswith("dropped:")},
            "language": language["stats"],
            "refine_kept": refine["passed"] if refine else None,
            "refine_dropped": refine["seen"] - refine["passed"] if refine else 0,
            "images": summaries["images"]["stats"],
            "positives": files.counts(),
            "negatives": files.counts(negatives=True),
            "positives_by_split_type_level": {f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(table.items())},
            "negatives_by_split_type_level": {f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(neg_table.items())},
            "image_negatives_by_split_type_level": {
                f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(image_table.items())
            },
        },
    }


def published_inputs(run: Run, ingest: dict[str, Any]) -> dict[str, Any]:
    """What the run read, as the manifest publishes it: by name (a path inside the run folder, as the demo's
    are, relative to it), never an absolute path, with the scene graphs' content digest."""
    cfg = run.cfg
    if cfg.inputs.scene_graphs is None:  # the demo world, inside the run folder
        sg, images = demo_dir(run.root) / "demo_sceneGraphs.json", demo_dir(run.root) / "images"
    else:  # as the config names them: split reads no input, and they may be gone
        sg = cfg.resolve(cfg.inputs.scene_graphs)
        images = cfg.resolve(cfg.inputs.images) if cfg.inputs.images is not None else None
    return {
        "scene_graphs": _public_path(str(sg), run.root),
        "images": _public_path(str(images), run.root) if images is not None else None,
        "scene_graphs_digest": ingest["meta"].get("graphs_digest"),
    }


def _public_path(value: str, root: Path) -> str:
    """A path as a published file may name it: relative to the run folder when inside it, else its last
    part (the folder above it is the maintainer's machine, not the dataset's)."""
    p = Path(value)
    if not p.is_absolute():
        return value
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return p.name


# An absolute path inside a string: at its start, or after a space or a separator of the names hardneg
# builds ("clip@v2 /models/clip", "dinov2:hub:/models/dinov2:..."); never the "//" of a URL.
_ABSOLUTE = re.compile(r"(?:^|(?<=[\s:=(\[,]))~?/(?!/)[^\s:@,)\]]+")


def publishable(value: Any, root: Path) -> Any:
    """A config, a manifest (any JSON value) with every absolute path in it, whole or inside a string,
    made `_public_path`: a published file names no place on the maintainer's machine."""
    if isinstance(value, dict):
        return {k: publishable(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [publishable(v, root) for v in value]
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda m: _public_path(str(Path(m.group()).expanduser()), root), value)
    return value


def read_manifest(root: Path) -> dict[str, Any]:
    return orjson.loads((root / "manifest.json").read_bytes())
