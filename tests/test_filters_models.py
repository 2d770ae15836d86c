"""The filters stage with real model classes: a tiny random CLIP and DINOv2 saved to local dirs and named
in the config, end to end through the pipeline; then `hardneg split` re-decides without loading them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.splits import SPLITS
from hardneg.flows.pipeline import run_local
from tests.helpers import REPO_ROOT

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def model_run(tmp_path_factory) -> Path:
    from tests.tiny_scorer_models import save_tiny_clip, save_tiny_dinov2

    base = tmp_path_factory.mktemp("models")
    clip = save_tiny_clip(base / "clip")
    dino = save_tiny_dinov2(base / "dino")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models on a busy 2-core box are far faster single-threaded
    try:
        cfg = load_config(
            None,
            {
                "demo": {"n_scenes": 12},
                "shard_size": 6,
                "images": {"candidates": 2},
                "filters": {
                    "scorers": {
                        "clip": {"model": str(clip)},
                        "dinov2": {"loader": "transformers", "model": str(dino)},
                        "seam": {},
                    },
                },
            },
        )
        root = base / "run"
        run_local(cfg, root)
    finally:
        torch.set_num_threads(threads)
    return root


def _negatives(root: Path) -> list[dict]:
    return [r for s in SPLITS for r in orjson.loads((root / "splits" / s / "negative.json").read_bytes())]


def test_every_kept_negative_carries_its_model_scores(model_run: Path):
    rows = _negatives(model_run)
    text = [r for r in rows if r["negative_cate"] == "text"]
    image = [r for r in rows if r["negative_cate"] == "image"]
    assert text and image
    assert all(r["scores"]["clip_margin"] > 0 for r in text)  # the CLIP filter decided
    for r in image:
        assert r["scores"]["clip_margin"] > 0 and -1.0 <= r["scores"]["similarity"] <= 1.0 + 1e-5
    rejects = [orjson.loads(x) for x in (model_run / "rejects.jsonl").read_bytes().splitlines()]
    assert any(r["stage"] == "filter" and "CLIP margin" in r["reason"] for r in rejects)
    m = orjson.loads((model_run / "manifest.json").read_bytes())
    assert m["config"]["filters"]["scorers"]["clip"]["model"].endswith("clip")
    assert m["models"]["filters"]["clip"] == f"clip@v2 {m['config']['filters']['scorers']['clip']['model']}"
    assert m["models"]["filters"]["dinov2"].startswith("dinov2@v1 dinov2:")


def test_stored_scores_are_labelled_by_scorer_version(model_run: Path):
    rows = [orjson.loads(x) for f in sorted((model_run / "work" / "filters").glob("scores-*.jsonl"))
            for x in f.read_bytes().splitlines()]  # fmt: skip
    text = [r for r in rows if r["target"] == "text_negative"]
    image = [r for r in rows if r["target"] == "image_negative"]
    assert text and image
    assert all(set(r["scores"]) == {"clip@v2"} for r in text)
    cands = [c for r in image for c in r["candidates"]]
    assert all({"clip@v2", "dinov2@v1"} <= set(c) <= {"clip@v2", "dinov2@v1", "seam@v1", "edits@v1"} for c in cands)
    assert any("seam@v1" in c for c in cands)  # flips have none: no pixel was generated


def test_models_load_once_per_worker_across_shards(model_run: Path):
    from hardneg.backends.models import loaded_keys

    shards = len(list((model_run / "work" / "filters").glob("scores-*.jsonl")))
    assert shards >= 2  # 12 scenes in shards of 6: make sure the check means something
    clip_models = [k for k in loaded_keys() if k[0] == "clip"]
    dino_models = [k for k in loaded_keys() if k[0] == "dinov2"]
    assert len(clip_models) == 1 and len(dino_models) == 1


def test_split_rethresholds_model_scores_without_loading_models(model_run: Path, tmp_path: Path):
    root = tmp_path / "copy"
    shutil.copytree(model_run, root)
    margins = sorted(r["scores"]["clip_margin"] for r in _negatives(model_run) if r["negative_cate"] == "text")
    strict = tmp_path / "strict.yaml"
    strict.write_text(f"filters: {{thresholds: {{clip: {{min_margin: {margins[len(margins) // 2]}}}}}}}\n")
    code = (
        # --force: random CLIP weights score image negatives at chance, so the text margin drops them all
        "import sys; from hardneg.cli import main;"
        "rc = main(['split', sys.argv[1], '--config', sys.argv[2], '--force']);"
        "print('HEAVY', [m for m in ('torch', 'transformers') if m in sys.modules]); sys.exit(rc)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(strict)], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "HEAVY []" in out.stdout
    after = [r for r in _negatives(root) if r["negative_cate"] == "text"]
    assert 0 < len(after) < len(margins)
    assert all(r["scores"]["clip_margin"] > margins[len(margins) // 2] for r in after)
