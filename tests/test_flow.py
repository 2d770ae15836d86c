"""The Prefect flow and the CLI, on the demo world and on GQA-format input with bad records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from hardneg.cli import main as cli_main
from hardneg.core.config import load_config
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.world import build_demo_world
from hardneg.core.splits import SPLITS
from hardneg.flows.pipeline import run_local
from tests.helpers import REPO_ROOT, prefect_harness_in
from tests.runs import SIXTEEN, shared_run


@pytest.fixture(scope="module")
def prefect_harness(tmp_path_factory):
    """An isolated ephemeral Prefect API; results storage in a fresh dir so no cache leaks across sessions."""
    with prefect_harness_in(tmp_path_factory.mktemp("prefect")):
        yield


@pytest.mark.slow
def test_flow_writes_the_same_run_folder_as_the_plain_stages(prefect_harness, tmp_path: Path):
    from hardneg.flows.generate import run_generate

    # A small world so every task runs (negative images and filters too) in reasonable time.
    manifest = run_generate(load_config(None, SIXTEEN), tmp_path / "flow")
    plain = shared_run(SIXTEEN)
    assert sum(manifest["counts"]["positives"].values()) > 50
    assert sum(manifest["counts"]["negatives"].values()) > 50
    for s in SPLITS:
        for f in ("positive.json", "negative.json", "coco.json"):
            assert (tmp_path / "flow" / "splits" / s / f).read_bytes() == (plain / "splits" / s / f).read_bytes()
    # One task per shard: 16 demo images in shards of 16.
    assert len(list((tmp_path / "flow" / "work" / "ingest").glob("graphs-*.jsonl"))) == 1
    assert (tmp_path / "flow" / "stats.md").exists()


@pytest.mark.slow
def test_a_run_into_a_locked_folder_is_skipped_not_failed(prefect_harness, tmp_path: Path):
    from prefect import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    from hardneg.core.runner.lock import RunBusy, RunLock
    from hardneg.flows.generate import run_flow

    with RunLock(tmp_path / "run", "the test"), pytest.raises(RunBusy, match="is being written by the test"):
        run_flow(None, tmp_path / "run", overrides={"demo": {"n_scenes": 2}})
    with get_client(sync_client=True) as client:
        [last] = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=1)
    assert last.state is not None and last.state.is_completed() and last.state.name == "Skipped", last.state
    assert "skipped: " in str(last.state.message) and "is being written by the test" in str(last.state.message)


@pytest.mark.slow
def test_a_user_error_inside_the_flow_fails_it_with_one_line(prefect_harness, tmp_path: Path):
    """A config a deployment reads when its run starts may have been edited wrong: the run ends Failed
    with the error's line as its message (no traceback), and `hardneg run` gets the error back as raised."""
    from prefect import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    from hardneg.core.errors import ConfigError
    from hardneg.flows.generate import run_flow

    typo = tmp_path / "typo.yaml"
    typo.write_text("seeed: 1\n")
    with pytest.raises(ConfigError, match="seeed: unknown key"):
        run_flow(str(typo), tmp_path / "run")
    with get_client(sync_client=True) as client:
        [last] = client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=1)
    assert last.state is not None and last.state.is_failed(), last.state
    assert "seeed: unknown key" in str(last.state.message) and "Traceback" not in str(last.state.message)
    assert not (tmp_path / "run").exists()


def _gqa_with_problems(tmp_path: Path) -> tuple[Path, Path]:
    """A GQA-format folder: the demo graphs and images, plus malformed graphs and broken images."""
    world = build_demo_world(tmp_path / "world", n_scenes=8, seed=3)
    graphs = orjson.loads(world.scene_graphs.read_bytes())
    ids = sorted(graphs)
    graphs["9000001"] = {"height": 300, "objects": {}}  # missing width
    graphs["9000002"] = {"width": 100, "height": 0, "objects": {}}  # non-positive size
    graphs["9000003"] = {"width": 100, "height": 100, "objects": {"1": {"name": "cup", "x": 1, "y": 1, "w": 0, "h": 5}}}
    (world.images / f"{ids[0]}.jpg").unlink()  # missing image
    (world.images / f"{ids[1]}.jpg").write_bytes(b"not a jpeg at all")  # corrupt image
    # Spilled boxes and a dangling relation are repaired and counted, not rejected.
    first_obj = next(iter(graphs[ids[2]]["objects"].values()))
    first_obj["w"] += 10_000
    first_obj["relations"].append({"name": "near", "object": "no-such-id"})
    folder = tmp_path / "gqa"
    folder.mkdir()
    (folder / "val_sceneGraphs.json").write_bytes(orjson.dumps(graphs))
    return folder, world.images


def test_bad_input_is_rejected_with_reasons_and_the_run_goes_on(tmp_path: Path):
    folder, images = _gqa_with_problems(tmp_path)
    cfg = load_config(
        None, {"inputs": {"scene_graphs": str(folder), "images": str(images)}, "images": {"candidates": 2}}
    )
    manifest = run_local(cfg, tmp_path / "run")
    rejects = [orjson.loads(x) for x in (tmp_path / "run" / "rejects.jsonl").read_bytes().splitlines()]
    ingest = {r["image_id"]: r["reason"] for r in rejects if r["stage"] == "ingest"}
    assert "width" in ingest["9000001"]
    assert "height" in ingest["9000002"]
    assert "w=0" in ingest["9000003"] or "size" in ingest["9000003"]
    assert any("missing" in v for v in ingest.values())
    assert any("corrupt" in v for v in ingest.values())
    assert len(ingest) == 5
    assert manifest["counts"]["ingest"]["images_kept"] == 6
    assert manifest["counts"]["repairs"].get("clipped_box", 0) >= 1
    assert manifest["counts"]["repairs"].get("dropped_dangling_relation", 0) >= 1
    assert sum(manifest["counts"]["positives"].values()) > 0
    assert manifest["inputs"]["scene_graphs"] == folder.name  # by name: never an absolute path


def test_adding_images_never_moves_old_ones_between_splits(tmp_path: Path):
    graphs = generate_graphs(30, seed=11)
    ids = sorted(graphs)
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    small.write_bytes(orjson.dumps({i: graphs[i] for i in ids[:15]}))
    big.write_bytes(orjson.dumps(graphs))
    where: dict[str, dict[str, str]] = {}
    for name, f in (("small", small), ("big", big)):
        run_local(
            load_config(None, {"inputs": {"scene_graphs": str(f)}, "images": {"enabled": False}}), tmp_path / name
        )
        where[name] = {
            r["image_id"]: s
            for s in SPLITS
            for r in orjson.loads((tmp_path / name / "splits" / s / "positive.json").read_bytes())
        }
    assert where["small"]
    assert all(where["big"].get(i, s) == s for i, s in where["small"].items())


def test_cli_rejects_a_bad_config_with_a_clear_message(tmp_path: Path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seeed: 3\n")
    assert cli_main(["run", "--config", str(bad), "--no-prefect", "--output", str(tmp_path / "x")]) == 2
    assert "seeed: unknown key" in capsys.readouterr().err
    assert cli_main(["run", "--images", str(tmp_path), "--no-prefect"]) == 2
    assert "--images needs --scene-graphs" in capsys.readouterr().err


def test_cli_runs_on_gqa_format_input(tmp_path: Path):
    folder, images = _gqa_with_problems(tmp_path)
    out = tmp_path / "cli-run"
    args = ["run", "--no-prefect", "--scene-graphs", str(folder), "--images", str(images), "--output", str(out)]
    assert cli_main(args) == 0
    assert (out / "splits" / "train" / "coco.json").exists()


def test_console_script_is_installed():
    exe = Path(sys.executable).parent / "hardneg"
    assert exe.exists(), "pip install -e . should install the hardneg command"
    out = subprocess.run([str(exe), "run", "--help"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert out.returncode == 0 and "--scene-graphs" in out.stdout


def test_scheduled_deployment_carries_the_cron_and_parameters(tmp_path: Path):
    from hardneg.flows.deploy import make_deployment

    dep = make_deployment("configs/demo.yaml", str(tmp_path / "run"), "0 3 * * 1")
    assert dep.name == "hardneg-scheduled" and dep.flow_name == "hardneg-generate"
    # readable parameters, a config path that means the same from a worker's directory, and an
    # entrypoint that does not depend on where `serve` was started
    assert dep.parameters == {"config": str(REPO_ROOT / "configs" / "demo.yaml"), "output": str(tmp_path / "run")}
    assert dep.entrypoint == "hardneg.flows.generate.generate"
    assert [s.schedule.cron for s in dep.schedules] == ["0 3 * * 1"]
    assert make_deployment("gqa", str(tmp_path), "0 3 * * 1").parameters["config"] == "gqa"
    with pytest.raises(ValueError):
        make_deployment(None, str(tmp_path), "not a cron")


def test_serve_refuses_without_a_server(monkeypatch, capsys, tmp_path: Path):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert cli_main(["serve", "--cron", "0 3 * * *", "--config", "demo", "--output", str(tmp_path / "x")]) == 2
    assert "running Prefect server" in capsys.readouterr().err


@pytest.mark.parametrize("config", [None, "gqa"])
def test_serve_refuses_to_schedule_the_demo_world_unless_asked_for_by_name(config, monkeypatch, capsys, tmp_path):
    """Failed before: `hardneg serve --config gqa` scheduled the 40-image demo world (the config names no
    inputs, and serve took no --scene-graphs)."""
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # never reached: refused first
    args = ["serve", "--cron", "0 3 * * *", "--output", str(tmp_path / "x"), *(["--config", config] if config else [])]
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert "names no inputs, so every scheduled run would build the demo world" in err and "--scene-graphs" in err
    assert not (tmp_path / "x").exists()


def test_serve_takes_the_inputs_as_run_does(tmp_path: Path):
    """The deployment `serve` makes carries the inputs as absolute paths in its overrides."""
    from hardneg.flows.deploy import make_deployment

    overrides = {"inputs": {"scene_graphs": "/data/gqa/val_sceneGraphs.json", "images": "/data/gqa/images"}}
    dep = make_deployment("gqa", str(tmp_path / "run"), "0 3 * * 1", overrides)
    assert dep.parameters == {"config": "gqa", "output": str(tmp_path / "run"), "overrides": overrides}
