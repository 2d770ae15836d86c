"""The photo as evidence in a run: the pixels stage and what the decide stage does with its findings and with
each positive's risk (filters/pixels_stage.py, filters/evidence.py), on the eight real photos of
tests/data/photos8, with and without `--images`."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import pytest

from hardneg.core.config import RunConfig
from hardneg.core.records import PathNode, RiskReason
from hardneg.core.words.table import Words
from hardneg.filters.evidence import level_drop
from hardneg.flows.pipeline import resplit
from hardneg.review.priority import in_default_queue, priority_key
from tests.helpers import PHOTOS
from tests.runs import shared_run

pytestmark = pytest.mark.slow
GRAPHS = str(PHOTOS / "sceneGraphs.json")
# the eight photos, no negative images (their own tests pay for those)
WITH_PHOTOS = {"inputs": {"scene_graphs": GRAPHS, "images": str(PHOTOS / "images")}, "images": {"enabled": False}}
GRAPHS_ONLY = {"inputs": {"scene_graphs": GRAPHS}, "images": {"enabled": False}}


def _rows(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def _work(root: Path, stage: str, kind: str) -> list[dict]:
    return [r for f in sorted((root / "work" / stage).glob(f"{kind}-*.jsonl")) for r in _rows(f)]


def _published(root: Path) -> list[dict]:
    splits = ("train", "val", "test")
    return [r for s in splits for r in orjson.loads((root / "splits" / s / "positive.json").read_bytes())]


def _kept(root: Path) -> set[int]:
    return {r["id"] for r in _published(root)}


def test_the_photo_drops_what_it_contradicts_and_stats_say_what_each_rule_did() -> None:
    """Failed before: with --images no positive or text negative was checked against its photo; the raw
    graph's "the walking man sharing the same color as the crosswalk" (the man "white": his skin) and its
    L2 positives another chair may fit were published; stats.md said nothing of the pixels."""
    root = shared_run(WITH_PHOTOS)
    rejects = _rows(root / "rejects.jsonl")
    by_stage = Counter(r["stage"] for r in rejects)
    assert by_stage["pixels"] >= 3 and by_stage["risk"] >= 2, by_stage
    # the raw graph's "white" man (his skin) is no fact any sample states: hygiene drops it before any path
    person = [r for r in rejects if r["stage"] == "hygiene" and "not said of a person: 'white'" in r["reason"]]
    assert person
    words = Words.load()
    for p in _published(root):
        for node in PathNode.from_json(p["path"]).nodes():
            assert not (words.is_person(node.name) and any(words.is_person_attribute(a) for a in node.attributes))
    twins = [r for r in rejects if r["stage"] == "risk" and r["reason"].startswith("risk: another object may fit")]
    assert twins and {r["detail"]["level"] for r in twins} <= {2, 3}
    stats = (root / "stats.md").read_text()
    section = stats[stats.index("### Pixel evidence") :]
    for rule in ("colour_contradicted", "multicoloured", "same_colour_contradicted", "photo_twin", "colour_still_true"):
        assert f"| {rule} |" in section
    assert "Risk acted on where it hurts most" in section
    checked = {r["id"]: r for r in _work(root, "pixels", "positives")}
    assert len(checked) == len(_work(root, "language", "positives"))  # every positive was looked at
    pixels = orjson.loads((root / "work" / "pixels" / "_stage.json").read_bytes())["stats"]
    assert f"{pixels['images']} images, {pixels['masks']} of their {pixels['objects']} objects masked" in section
    assert 0 < pixels["masks"] < pixels["objects"] / 2  # only the objects a claim needs were masked


def test_split_changes_what_the_photo_drops_without_looking_again(tmp_path: Path) -> None:
    root = tmp_path / "run"
    shutil.copytree(shared_run(WITH_PHOTOS), root)
    before = _kept(root)
    positives = {r["id"] for r in _work(root, "language", "positives")}
    dropped = {r["sample_id"] for r in _rows(root / "rejects.jsonl") if r["stage"] in ("pixels", "risk")} & positives
    resplit(root, {"pixels": {"drop": []}, "risk": {"max": None, "drop_twin": None, "drop_box": None}})
    after = _kept(root)
    assert before < after and dropped and dropped <= after and not dropped & before
    assert not [r for r in _rows(root / "rejects.jsonl") if r["stage"] == "pixels"]


def test_without_images_the_graph_rules_decide_alone_and_stats_say_so() -> None:
    root = shared_run(GRAPHS_ONLY)
    assert _work(root, "pixels", "positives") == []
    stats = (root / "stats.md").read_text()
    assert "Not checked: no images" in stats
    assert not [r for r in _rows(root / "rejects.jsonl") if r["stage"] == "pixels"]


def test_risk_is_acted_on_by_level_and_the_queue_starts_with_what_is_kept_at_risk() -> None:
    cfg = RunConfig()
    twin = [RiskReason("unannotated_twin", "", 0.4), RiskReason("no_detector", "", 0.1)]
    box = [RiskReason("box_misfit", "", 0.5)]
    stats: Counter = Counter()
    assert level_drop(2, twin, cfg, stats)[0].startswith("risk: another object may fit (twin risk 0.40")
    assert level_drop(3, box, cfg, stats)[0].startswith("risk: the box may not be what its name says")
    assert level_drop(1, twin, cfg, stats) == (None, True)  # flagged, kept
    assert level_drop(2, [RiskReason("many", "", 0.2)], cfg, stats) == (None, False)
    assert stats == Counter({"risk_level_dropped:twin": 1, "risk_level_dropped:box": 1, "risk_flagged:twin": 1})
    lenient = cfg.model_copy(update={"risk": cfg.risk.model_copy(update={"drop_twin": None})})
    assert level_drop(2, twin, lenient, Counter()) == (None, False)
    flagged = {"id": 1, "level": 1, "scores": {"annotation_risk": 0.46, "at_risk": 1.0}}
    plain = {"id": 2, "level": 1, "scores": {"annotation_risk": 0.1}}
    l2 = {"id": 3, "level": 2, "scores": {"annotation_risk": 0.3}}
    assert in_default_queue(flagged) and not in_default_queue(plain) and in_default_queue(l2)
    assert sorted([l2, flagged], key=priority_key)[0] is flagged
