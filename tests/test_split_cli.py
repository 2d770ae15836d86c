"""`hardneg split` is honest: it starts from the run's own config each call, prints counts before and
after, refuses (exit 2, run unchanged) a rule that would drop everything unless `--force`, and refuses
thresholds of a filter that never ran. Which tests fail on the code before this was built and which guard the
stage redesign's fixes against regressions is said on each."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from hardneg.cli import main
from hardneg.core.runner.lock import LOCK_FILE
from hardneg.exports.stats import build_stats, markdown
from hardneg.flows.pipeline import resplit
from tests.runs import copy_of_small_run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return copy_of_small_run(tmp_path / "run")


def _yaml(tmp_path: Path, text: str) -> str:
    p = tmp_path / "split.yaml"
    p.write_text(text)
    return str(p)


def _manifest(root: Path) -> dict:
    return orjson.loads((root / "manifest.json").read_bytes())


def _image_negatives(root: Path) -> int:
    return sum(_manifest(root)["counts"]["image_negatives_by_split_type_level"].values())


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "report_assets" not in p.parts and p.name != LOCK_FILE  # the lock says who held it
    }


def test_split_prints_counts_before_and_after(run: Path, tmp_path: Path, capsys):
    """Failed before this was built: split printed two dicts, no table."""
    assert main(["split", str(run), "--config", _yaml(tmp_path, "filters: {thresholds: {seam: {max: 0.002}}}\n")]) == 0
    out = capsys.readouterr().out
    assert "before" in out and "after" in out and "change" in out
    row = next(line for line in out.splitlines() if line.startswith("image negatives") and " test " in line)
    before, after = (int(x) for x in row.split()[3:5])
    assert after == _image_negatives(run) and before >= after


def test_a_rule_that_drops_everything_is_refused_and_leaves_the_run_as_it_was(run: Path, tmp_path: Path, capsys):
    """Failed before this was built: `require_clip`-like rules dropped every negative with exit 0."""
    assert _image_negatives(run) > 0
    before = _snapshot(run)
    drop_all = _yaml(tmp_path, "filters: {thresholds: {seam: {max: -1.0}}}\n")
    assert main(["split", str(run), "--config", drop_all]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the decide stage's line
    assert err.startswith("hardneg: error: split refused, the run is unchanged: ")
    assert "image_negative would keep none of" in err and "(--force applies it anyway)" in err
    assert _snapshot(run) == before  # byte for byte, the decide stage's work included
    assert main(["split", str(run), "--config", drop_all, "--force"]) == 0
    assert _image_negatives(run) == 0


def test_each_split_starts_from_the_run_config(run: Path):
    """Regression guard for the redesign (`resplit` starts from the stored config): settings used to pile
    up across calls."""
    resplit(run, {"filters": {"thresholds": {"seam": {"max": 0.002}}}})  # drops some of the demo's recolours
    assert _manifest(run)["thresholds"]["seam"]["max"] == 0.002
    resplit(run, {"refine": {"bins_1d": 4}})
    m = _manifest(run)
    assert m["thresholds"]["seam"]["max"] == 0.2 and m["config"]["refine"]["bins_1d"] == 4  # no pile-up


def test_thresholds_of_a_filter_that_never_ran_are_refused(run: Path, tmp_path: Path, capsys):
    """Regression guard for the redesign (`filters/decide.py: rules`): a CLIP threshold without CLIP scores
    once dropped every negative with exit 0."""
    clip = _yaml(tmp_path, "filters: {thresholds: {clip: {min_margin: 0.1}}}\n")
    assert main(["split", str(run), "--config", clip]) == 2
    assert "clip does not run; add it to filters.scorers" in capsys.readouterr().err
    typo = _yaml(tmp_path, "filters: {threshods: {seam: {max: 0.1}}}\n")
    assert main(["split", str(run), "--config", typo]) == 2
    assert "split cannot change filters.threshods.seam.max (did you mean filters.thresholds?)" in (
        capsys.readouterr().err
    )


def test_a_filter_that_did_not_run_reads_not_run_never_100_percent():
    """Regression guard for the redesign (`exports/stats.py`): CLIP showed "100% passed" when it never ran."""
    filters = {"clip": {"passed": None, "seen": None, "not_run": True}, "seam": {"passed": 3, "seen": 4}}
    md = markdown(build_stats(Counter(), Counter(), Counter(), filters))
    assert "| clip | - | - | not run |" in md and "| seam | 3 | 4 | 75.0% |" in md
    assert "100" not in md


def test_every_stage_summary_and_the_manifest_carry_time_items_and_rejects(run: Path):
    """Regression guard for the redesign (per-stage timings, items in/out and rejects were nowhere)."""
    m = _manifest(run)
    stages = [d.name for d in sorted((run / "work").iterdir()) if (d / "_stage.json").is_file()]
    assert set(stages) == set(m["versions"]["stages"])
    for name in stages:
        s = orjson.loads((run / "work" / name / "_stage.json").read_bytes())
        assert s["seconds"] >= 0 and s["items_in"] >= 0 and s["rejects"] >= 0 and isinstance(s["written"], dict)
    for name, s in m["stages"].items():
        assert set(s) >= {"seconds", "items_in", "written", "rejects"}, name
    assert m["stages"]["paths"]["items_in"] > 0 and m["stages"]["paths"]["rejects"] > 0


def test_split_drops_positives_above_the_risk_threshold_and_counts_them(run: Path, tmp_path: Path):
    """`risk.max`: positives whose risk (what their graph cannot rule out) is above it go, with their
    negatives, each to rejects.jsonl with the reason; stats.md counts the positives per risk band."""

    def risk_rejects() -> list[dict]:
        rejects = [orjson.loads(x) for x in (run / "rejects.jsonl").read_bytes().splitlines()]
        return [r for r in rejects if r["stage"] == "risk"]

    before = sum(_manifest(run)["counts"]["positives"].values())
    dropped_before = {r["sample_id"] for r in risk_rejects()}  # the run's own per-level drops (risk.drop_twin)
    assert main(["split", str(run), "--config", _yaml(tmp_path, "risk: {max: 0.3}\n")]) == 0
    after = sum(_manifest(run)["counts"]["positives"].values())
    dropped = risk_rejects()
    assert all("above risk.max 0.3" in r["reason"] for r in dropped)  # the first rule a positive fails is named
    assert dropped and after == before - len({r["sample_id"] for r in dropped} - dropped_before)
    assert all(r["reason"].startswith("risk: ") and r["detail"]["annotation_risk"] > 0.3 for r in dropped)
    kept = [
        p for s in ("train", "val", "test") for p in orjson.loads((run / "splits" / s / "positive.json").read_bytes())
    ]
    assert all(p["scores"]["annotation_risk"] <= 0.3 and p["risk_reasons"] for p in kept)
    assert f"`risk.max` 0.3 dropped {len(dropped)}" in (run / "stats.md").read_text()


def test_a_run_on_outside_photos_splits_again_and_again_and_once_moved_without_its_inputs(tmp_path: Path):
    """Failed before fingerprints were by content: the write stage hard-linked the input photos into `data/`,
    which changed their ctime, which ingest's fingerprint held, so every split of a run made with `--images`
    was refused ("stage ingest was made under another config")."""
    import shutil

    from hardneg.core.demo.world import build_demo_world

    world = build_demo_world(tmp_path / "world", n_scenes=6, seed=2)
    inputs = tmp_path / "gqa"
    shutil.copytree(world.images, inputs / "images")
    shutil.copyfile(world.scene_graphs, inputs / "sceneGraphs.json")
    run = tmp_path / "run"
    cfg = _yaml(tmp_path, "images: {types: [flip], candidates: 1}\nfilters: {scorers: {seam: {}}}\n")
    args = ["--scene-graphs", str(inputs / "sceneGraphs.json"), "--images", str(inputs / "images")]
    assert main(["run", "--no-prefect", "--config", cfg, "--output", str(run), *args]) == 0
    stricter = tmp_path / "stricter.yaml"
    stricter.write_text("negative_mix: {per_positive: 0.3}\n")  # fewer text negatives: it changes the splits
    for _ in range(2):
        assert main(["split", str(run), "--config", str(stricter)]) == 0
    published = run / "data" / "positives"
    photo = next(published.rglob("*.jpg"))
    source = inputs / "images" / photo.name
    assert photo.read_bytes() == source.read_bytes() and not photo.samefile(source)  # a copy, not the input
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(run, moved)
    shutil.rmtree(inputs)  # the inputs are gone: split reads the run folder only
    stricter.write_text("negative_mix: {per_positive: 0.5}\n")  # a real re-split, with the inputs gone
    assert main(["split", str(moved), "--config", str(stricter)]) == 0
    assert _manifest(moved)["config"]["negative_mix"]["per_positive"] == 0.5


def test_split_names_the_keys_it_changed_and_shows_the_exports(run: Path, tmp_path: Path, capsys):
    """Failed before: the table had the splits only (an export that lost every set said nothing), and
    no line said which settings had changed."""
    assert main(["split", str(run), "--config", _yaml(tmp_path, "filters: {thresholds: {seam: {max: 0.002}}}\n")]) == 0
    out = capsys.readouterr().out
    assert "  filters.thresholds.seam.max: default -> 0.002" in out.splitlines()
    kinds = {line.split("  ")[0].strip() for line in out.splitlines()}
    assert {"tricd: positive pairs", "probes: probe_c/composition"} <= kinds, out


def test_a_split_that_changes_nothing_says_so_and_leaves_the_run_as_it_was(run: Path, tmp_path: Path, capsys):
    """Failed before: a threshold that keeps and drops the same samples rebuilt every output and the
    report (18 s on the demo), and said nothing."""
    loose = _yaml(tmp_path, "filters: {thresholds: {seam: {max: 0.999}}}\n")  # looser than any score kept
    before = _snapshot(run)
    assert main(["split", str(run), "--config", loose]) == 0
    out = capsys.readouterr().out
    assert "nothing changed" in out and "they keep and drop the same samples" in out
    assert _snapshot(run) == before  # the decide stage's work included: the run is as it was
    assert main(["split", str(run)]) == 0  # the run's own settings: nothing to do at all
    assert "its outputs were made with these settings" in capsys.readouterr().out
    assert _snapshot(run) == before


def test_a_misspelt_threshold_names_the_key_it_meant(run: Path, tmp_path: Path, capsys):
    assert main(["split", str(run), "--config", _yaml(tmp_path, "filters: {thresholds: {seam: {maxx: 0.1}}}\n")]) == 2
    assert "(did you mean filters.thresholds.seam.max?)" in capsys.readouterr().err


def test_a_risk_cut_that_drops_every_positive_is_refused_like_any_rule(run: Path, tmp_path: Path, capsys):
    """Failed before: `risk: {max: 0.0}` emptied the benchmark (every positive dropped) with exit 0 and
    no --force: the guard counted the filters' rules, not the risk cut."""
    before = _snapshot(run)
    cut = _yaml(tmp_path, "risk: {max: 0.0}\n")
    assert main(["split", str(run), "--config", cut]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("hardneg: error: split refused, the run is unchanged: ") and "risk would keep none of" in err
    assert _snapshot(run) == before
    assert main(["split", str(run), "--config", cut, "--force"]) == 0
    assert sum(_manifest(run)["counts"]["positives"].values()) == 0
