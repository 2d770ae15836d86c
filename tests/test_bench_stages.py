"""The per-stage timing harness runs on a tiny corpus, and timing a stage again leaves its output as it was.

Not a timed test: it checks the instrument works (every stage named is timed, the table is printed) and that
running a stage alone after the run rewrites each of its files with the same bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from benchmarks import bench_stages
from benchmarks.synthetic_gqa import write_synthetic_gqa


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(f.relative_to(folder)): hashlib.sha1(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != "_stage.json" and f.parent.name != "_done"  # their files' stat: rewritten
    }


def test_bench_stages_times_each_stage_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_synthetic_gqa(tmp_path / "sceneGraphs.json", n_images=6, seed=1)
    work = tmp_path / "bench"
    argv = ["--n-images", "12", "--repeat", "1", "--no-exports", "--stages", "paths,language"]
    bench_stages.main([*argv, "--source", f"{source}:1", "--workdir", str(work)])
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.split()}
    assert set(rows) >= {"paths", "language", "sum"}
    assert float(rows["paths"][0]) > 0 and float(rows["language"][0]) > 0
    assert "ingest" not in rows  # only the stages asked for are timed
    assert "12 images" in out

    run_dir = next(work.glob("run_n12_*"))
    before = {s: _digests(run_dir / "work" / s) for s in ("paths", "language")}
    run = bench_stages.plan_existing(run_dir)
    for s in ("paths", "language"):
        bench_stages.stage_once(run, s)
    assert {s: _digests(run_dir / "work" / s) for s in ("paths", "language")} == before


def test_bench_stages_refuses_an_unknown_stage(tmp_path: Path) -> None:
    source = write_synthetic_gqa(tmp_path / "sceneGraphs.json", n_images=6, seed=1)
    argv = ["--n-images", "12", "--repeat", "1", "--no-exports", "--stages", "pathz"]
    with pytest.raises(SystemExit, match="pathz"):
        bench_stages.main([*argv, "--source", f"{source}:1", "--workdir", str(tmp_path / "b")])
