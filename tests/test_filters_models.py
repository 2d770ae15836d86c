"""The filters stage with real model classes: a tiny random CLIP and DINOv2 saved to local dirs and named
in the config, end to end through the pipeline; then `hardneg split` re-decides without loading them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from core.config import REPO_ROOT, load_config
from core.pipeline import SPLITS, run_local

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
                "images": {"candidates": 2},
                "filters": {
                    "clip_model": str(clip),
                    "similarity": "dinov2",
                    "dinov2": {"loader": "transformers", "model": str(dino)},
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
    assert m["config"]["filters"]["clip_model"].endswith("clip")


def test_split_rethresholds_model_scores_without_loading_models(model_run: Path, tmp_path: Path):
    root = tmp_path / "copy"
    shutil.copytree(model_run, root)
    margins = sorted(r["scores"]["clip_margin"] for r in _negatives(model_run) if r["negative_cate"] == "text")
    strict = tmp_path / "strict.yaml"
    strict.write_text(f"filters: {{min_clip_margin: {margins[len(margins) // 2]}}}\n")
    code = (
        "import sys; from core.cli import main; rc = main(['split', sys.argv[1], '--config', sys.argv[2]]);"
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
