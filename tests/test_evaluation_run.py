"""The FineCops-Ref metrics read what a hardneg run writes: an oracle scores perfectly, a blind model not."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from hardneg.evaluation.finecops import evaluate, to_markdown
from tests.runs import SIXTEEN, shared_run


@pytest.fixture(scope="module")
def coco_file() -> Path:
    return shared_run(SIXTEEN) / "splits" / "test" / "coco.json"


def _predictions(coco: dict, oracle: bool) -> list[dict]:
    rng = random.Random(0)
    anns = {a["image_id"]: a for a in coco["annotations"]}
    out = []
    for img in coco["images"]:
        ann = anns[img["id"]]
        negative = "negative_type" in ann
        if oracle:  # the target box, confident on positives, unsure on negatives
            box, score = ann["bbox"], 0.1 if negative else 0.9
        else:  # a box anywhere, with a score that ignores the text
            w, h = img["width"] // 4, img["height"] // 4
            box, score = [rng.randrange(img["width"] - w), rng.randrange(img["height"] - h), w, h], rng.random()
        out.append({"id": img["id"], "boxes": [box], "scores": [score]})
    return out


def test_oracle_is_perfect_and_blind_is_not(coco_file: Path):
    coco = json.loads(coco_file.read_text())
    assert any(a.get("negative_cate") == "image" for a in coco["annotations"])
    best = evaluate(coco_file, _predictions(coco, oracle=True))
    blind = evaluate(coco_file, _predictions(coco, oracle=False))
    assert best["precision_at_1"]["overall"]["value"] == 1.0
    assert best["recall_at_1"]["overall"]["value"] == 1.0
    assert best["auroc"]["overall"]["value"] == 1.0
    assert blind["precision_at_1"]["overall"]["value"] < 0.5
    assert blind["auroc"]["overall"]["value"] < 0.9
    assert "precision" in to_markdown(best).lower()
