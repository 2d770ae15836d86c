"""The filters stage with a registered test filter: it sees each sample once, grouped by source image, and
never more than a chunk of decoded images at a time (before the redesign a shard held all of them)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import load_config
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Item, Scores
from hardneg.flows.pipeline import run_local

SEEN: list[list[Item]] = []


class CountingFilter(Filter):
    """Scores the length of the negative expression; records every batch it was given. Registered as
    "counting" for this module's run only."""

    version = "counting@v1"
    targets = frozenset({"text_negative"})

    def score(self, items: Sequence[Item]) -> list[Scores]:
        SEEN.append(list(items))
        return [{"neg_length": float(len(it.negative_text or ""))} for it in items]


@pytest.fixture(scope="module")
def counted_run(tmp_path_factory) -> Path:
    SEEN.clear()
    with FILTERS.scoped():
        FILTERS.add("counting")(CountingFilter)
        root = tmp_path_factory.mktemp("filters") / "run"
        cfg = {
            "demo": {"n_scenes": 10},
            "shard_size": 10,
            "images": {"enabled": False},
            "filters": {"scorers": {"counting": {}}, "batch_size": 4},
        }
        run_local(load_config(None, cfg), root)
    return root


def test_each_text_negative_is_scored_once_under_its_versioned_name(counted_run: Path):
    scored = [it.id for batch in SEEN for it in batch]
    assert len(scored) == len(set(scored)) > 0
    negatives = [
        orjson.loads(x) for x in (counted_run / "work" / "language" / "negatives-00000.jsonl").read_bytes().splitlines()
    ]
    assert set(scored) == {n["id"] for n in negatives}
    rows = [
        orjson.loads(x) for x in (counted_run / "work" / "filters" / "scores-00000.jsonl").read_bytes().splitlines()
    ]
    assert all(set(r["scores"]) == {"counting@v1"} for r in rows if r["target"] == "text_negative")


def test_a_batch_never_spans_more_than_a_chunk_of_source_images(counted_run: Path):
    assert len(SEEN) >= 2  # 10 images in chunks of 4: the shard was not scored in one go
    assert max(len({id(it.image) for it in batch}) for batch in SEEN) <= 4
    assert all(it.image is not None and it.image.size == (it.record.width, it.record.height) for b in SEEN for it in b)


@pytest.mark.parametrize("stage", ["filters", "refine"])
def test_a_new_filter_version_scores_again(tmp_path: Path, monkeypatch, stage: str):
    """Scores are stored under each filter's version; a new version with the config unchanged must change
    the stage's fingerprint, or decide finds no scores under the new name and keeps everything."""
    from hardneg.core.runner.stage import Run
    from hardneg.filters.scorers.seam import SeamFilter
    from hardneg.filters.scorers.text import NGramFilter
    from hardneg.flows.pipeline import STAGES

    cfg = load_config(None, {"filters": {"scorers": {"seam": {}}}})
    run = Run(tmp_path / "run", cfg, STAGES)
    before = run.config_fingerprint(stage)
    cls = SeamFilter if stage == "filters" else NGramFilter
    monkeypatch.setattr(cls, "version", cls.version + "-next")
    assert Run(tmp_path / "run", cfg, STAGES).config_fingerprint(stage) != before
