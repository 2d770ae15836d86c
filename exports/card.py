"""The dataset card, `<run>/README.md`: the YAML header `datasets.load_dataset(run_folder)` reads
(configs, splits, features, license) and what a reader needs: how the data was made, its statistics,
its fields and where its images come from. Written with the run's statistics (`exports/summary.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hardneg.exports.dataset import COLUMNS, CONFIGS, DATA, IMAGE_COLUMNS

SPLIT_ORDER = ("train", "val", "test")
LICENSE = "cc-by-4.0"  # GQA's scene graphs and Visual Genome's images are CC BY 4.0

_YAML_TYPES = {
    "string": "string",
    "json": "string",
    "int64": "int64",
    "bool": "bool",
    "list<string>": {"list": "string"},
    "list<int64>": {"list": "int64"},
    "list<list<int64>>": {"list": {"list": "int64"}},
    "list<list<string>>": {"list": {"list": "string"}},
}


def _features(config: str, has_images: bool) -> list[dict[str, Any]]:
    out = []
    for name, kind, _ in COLUMNS[config]:
        if has_images and name in IMAGE_COLUMNS:
            out.append({"name": IMAGE_COLUMNS[name], "dtype": "image"})
            continue
        t = _YAML_TYPES[kind]
        out.append({"name": name, "dtype": t} if isinstance(t, str) else {"name": name, **t})
    return out


def _splits(rows: dict[str, int]) -> list[str]:
    return sorted(rows, key=lambda s: (SPLIT_ORDER.index(s) if s in SPLIT_ORDER else 9, s))


def is_demo(manifest: dict[str, Any]) -> bool:
    """Whether the run read the demo world (drawn by hardneg), not GQA."""
    return ((manifest.get("config") or {}).get("inputs") or {}).get("scene_graphs") is None


def card_header(dataset: dict[str, Any], run_name: str, demo: bool = False) -> dict[str, Any]:
    rows, has_images = dataset["rows"], dataset["has_images"]
    configs, infos = [], []
    for config in CONFIGS:
        splits = _splits(rows[config])
        if not splits:
            continue
        entry: dict[str, Any] = {"config_name": config}
        if config == "positives":
            entry["default"] = True
        entry["data_files"] = [
            {"split": s, "path": [f"{DATA}/{config}/{s}/metadata.parquet", f"{DATA}/{config}/{s}/images/*.jpg"]}
            for s in splits
        ]
        if has_images:
            entry["drop_labels"] = True  # image folders of one split, not classes
        configs.append(entry)
        infos.append(
            {
                "config_name": config,
                "features": _features(config, has_images),
                "splits": [
                    {"name": s, "num_bytes": dataset["bytes"][config][s], "num_examples": rows[config][s]}
                    for s in splits
                ],
            }
        )
    if not configs:  # no rows at all: still declare the data, so a loader says it is empty instead of
        # finding the COCO json files beside it and loading those as if they were the dataset
        files = [{"split": s, "path": f"{DATA}/positives/{s}/metadata.parquet"} for s in SPLIT_ORDER]
        configs.append({"config_name": "positives", "default": True, "data_files": files})
    total = sum(n for r in rows.values() for n in r.values())
    bounds = ((1e3, "n<1K"), (1e4, "1K<n<10K"), (1e5, "10K<n<100K"), (1e6, "100K<n<1M"), (1e7, "1M<n<10M"))
    size = next((c for n, c in bounds if total < n), "n>10M")
    return {
        "pretty_name": f"hardneg {run_name}",
        "license": "apache-2.0" if demo else LICENSE,  # the demo world is drawn by hardneg: hardneg's license
        "language": ["en"],
        "task_categories": ["zero-shot-object-detection"],
        "tags": ["referring-expression-comprehension", "hard-negatives", "finecops-ref"]
        + ([] if demo else ["gqa", "visual-genome"]),
        "size_categories": [size],
        "configs": configs,
        "dataset_info": infos,
    }


def card(root: Path, dataset: dict[str, Any], manifest: dict[str, Any], stats_md: str) -> str:
    """The card's text: its YAML header, then how the data was made, `stats_md`, the fields, the images."""
    header = yaml.safe_dump(card_header(dataset, root.name, is_demo(manifest)), sort_keys=False, width=1000)
    return f"---\n{header}---\n\n{_body(root, dataset, manifest, stats_md)}"


def _body(root: Path, dataset: dict[str, Any], manifest: dict[str, Any], stats_md: str) -> str:
    placed = dataset["images"]
    versions = manifest.get("versions", {})
    models = manifest.get("models", {})
    inputs = manifest.get("inputs", {})
    if not dataset["has_images"]:
        images = (
            "This run was made without an images folder: `file_name` is null, and the COCO files name "
            "images as `<image_id>.jpg` under the GQA images folder."
        )
    else:
        images = (
            f"The images each split uses are in `{DATA}/<config>/<split>/images/`: "
            f"{placed.get('linked', 0)} hard links to the run's own copies of its photos and "
            f"{placed.get('copied', 0)} copies (where the file system has no hard links). Edited images are the "
            "candidates the filters chose, from `images/`. The COCO files' `file_name`s are relative to this folder."
        )
    fields = {
        config: "\n".join(
            f"| `{IMAGE_COLUMNS.get(n, n) if dataset['has_images'] else n}` | "
            f"{'image' if dataset['has_images'] and n in IMAGE_COLUMNS else ('JSON string' if k == 'json' else k)}"
            f" | {what} |"
            for n, k, what in COLUMNS[config]
        )
        for config in CONFIGS
    }
    stage_versions = ", ".join(f"{k} `{v}`" for k, v in versions.get("stages", {}).items())
    demo = is_demo(manifest)
    if demo:
        made_from = "Scene graphs and images: the demo world, drawn by hardneg (no GQA data)."
        licence = (
            "The demo world's scenes and images are drawn by hardneg itself and carry hardneg's license, the "
            "Apache License 2.0 (hardneg's LICENSE file); this run holds no GQA data."
        )
    else:
        sg, im = inputs.get("scene_graphs"), inputs.get("images")
        made_from = f"Scene graphs: `{Path(sg).name if sg else None}`; images: `{Path(im).name if im else None}`."
        licence = (
            "The scene graphs come from GQA and the images from Visual Genome, both under the Creative Commons\n"
            "Attribution 4.0 license (CC BY 4.0); this derived data is shared under the same license. Cite GQA\n"
            "(Hudson and Manning, 2019), Visual Genome (Krishna et al., 2017) and FineCops-Ref (Liu et al., 2024)."
        )
    return f"""# hardneg: {root.name}

Hard-negative referring expressions built from GQA scene graphs by hardneg with the
FineCops-Ref method: templated referring paths that pick out exactly one object, graded into levels 1-3,
with text negatives (an altered path that matches nothing in the image) and image negatives (an edited
image in which the positive's path matches nothing).

```python
import datasets  # from the folder that holds this run
positives = datasets.load_dataset("{root.name}")               # the default config: positives
negatives = datasets.load_dataset("{root.name}", "negatives")  # text and image negatives
```

## How it was made

- {made_from}
- hardneg {manifest.get("hardneg_version")}, seed {manifest.get("seed")}, config fingerprint
  `{manifest.get("config_fingerprint")}` (the whole config is in `manifest.json`).
- Stages: {stage_versions}.
- Language backend: {", ".join(models.get("language_backend", [])) or "none"}; spaCy:
  {", ".join(models.get("spacy", [])) or "none"}; filters: {models.get("filters") or "none"}; refinement scorers:
  {", ".join(models.get("refine_scorers", [])) or "none"}.
- Every sample carries its `path` (JSON), so it can be re-executed against its scene graph; `rejects.jsonl`
  lists every dropped candidate with its reason.

## Images

{images}

## License

{licence}

## Fields

Positives (`positives`):

| field | type | what |
|---|---|---|
{fields["positives"]}

Negatives (`negatives`): one schema for text and image negatives; a field a kind lacks is null.

| field | type | what |
|---|---|---|
{fields["negatives"]}

## Statistics

{stats_md.replace("# Run statistics", "").strip()}
"""
