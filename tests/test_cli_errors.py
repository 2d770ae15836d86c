"""Every user error fails fast and clearly: one line on stderr, exit status 2, no traceback, found before
Prefect starts, and nothing left behind (no half-made run folder). Before this was built, a wrong
`--scene-graphs` failed after 21 s behind 68 lines of Prefect tracebacks and left a run folder, and a bad
cron string gave a raw pydantic error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pydantic
import pytest

from hardneg.cli import main
from hardneg.core.runner.lock import RunLock
from tests.helpers import REPO_ROOT


def _error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run the CLI, check the shape of the failure, and return the message."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hardneg: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.fixture
def graphs_folder(tmp_path: Path) -> Path:
    d = tmp_path / "gqa"
    d.mkdir()
    (d / "val_sceneGraphs.json").write_text("{}")
    return d


def _cases(tmp: Path, graphs: Path) -> list[tuple[list[str], str]]:
    """(extra `hardneg run` arguments, what the message says) for each user error."""
    (tmp / "empty").mkdir()
    (tmp / "a_file").write_text("x")
    (tmp / "theirs").mkdir()
    (tmp / "theirs" / "thesis.tex").write_text("x")
    configs = {
        "typo.yaml": "seeed: 3\n",
        "filter.yaml": "filters: {scorers: {clipp: {}}}\n",
        "threshold.yaml": "filters: {thresholds: {clip: {min_margin: 0.1}}}\n",
        "yaml.yaml": "seed: [\n",
        "base.yaml": "base: dmeo\n",
        "openai.yaml": "language: {backend: openai}\n",
    }
    for name, text in configs.items():
        (tmp / name).write_text(text)
    sg = ["--scene-graphs", str(graphs)]
    return [
        (["--scene-graphs", str(tmp / "nope.json")], "scene graphs not found"),
        (["--scene-graphs", str(tmp / "empty")], "holds no *sceneGraphs*.json"),
        ([*sg, "--images", str(tmp / "nope")], "images folder not found"),
        ([*sg, "--images", str(tmp / "a_file")], "images folder is not a folder"),
        (["--images", str(tmp)], "--images needs --scene-graphs"),
        (["--config", str(tmp / "missing.yaml")], "config file not found"),
        (["--config", str(tmp / "typo.yaml")], "seeed: unknown key (did you mean seed?)"),
        (["--config", str(tmp / "filter.yaml")], "unknown filter 'clipp' (did you mean 'clip'?)"),
        (["--config", str(tmp / "threshold.yaml")], "filters.thresholds.clip: clip does not run"),
        (["--config", str(tmp / "yaml.yaml")], "is not valid YAML at line"),
        (["--config", str(tmp / "base.yaml")], "did you mean 'demo'?"),
        (["--config", str(tmp / "openai.yaml")], "$OPENAI_BASE_URL is not set"),
        (["--output", str(tmp / "a_file")], "is a file"),
        (["--output", str(tmp / "theirs")], "is a folder that is not a hardneg run"),
    ]


def test_every_run_error_is_one_line_and_leaves_nothing_behind(tmp_path, graphs_folder, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    for extra, message in _cases(tmp_path, graphs_folder):
        out = tmp_path / "out"
        argv = ["run", "--output", str(out), *extra]
        err = _error(capsys, [*argv, "--no-prefect"])
        assert message in err, (extra, err)
        assert _error(capsys, argv) == err  # the Prefect path checks the same, before Prefect starts
        assert not out.exists(), extra


def test_an_images_folder_without_the_graphs_images_is_refused_before_anything_starts(tmp_path: Path, capsys):
    # a folder holding none (or too few) of the images the graphs name used to run to the end: "images
    # kept 0, rejected 40", exit 0, an empty dataset
    graphs = {f"{1000 + k}": {"width": 10, "height": 10, "objects": {}} for k in range(10)}
    sg = tmp_path / "val_sceneGraphs.json"
    sg.write_text(json.dumps(graphs))
    images = tmp_path / "images"
    images.mkdir()
    (images / "other.jpg").write_bytes(b"x")
    out = tmp_path / "out"
    argv = ["run", "--scene-graphs", str(sg), "--images", str(images), "--output", str(out), "--no-prefect"]
    err = _error(capsys, argv)
    assert "holds 0 of the first 10 images the scene graphs name (e.g. no 1000.jpg)" in err and not out.exists()
    for k in range(4):  # 4 of 10: below the default half
        (images / f"{1000 + k}.jpg").write_bytes(b"x")
    assert "holds 4 of the first 10" in _error(capsys, argv)
    (images / "1004.jpg").write_bytes(b"x")  # half: the check passes (the run then reads every image)
    from hardneg.flows.request import check_images_present

    check_images_present(sg, images, 200, 0.5)
    check_images_present(sg, tmp_path / "images", 3, 1.0)  # the first three are there


def test_a_wrong_scene_graph_path_fails_in_seconds_without_prefect(tmp_path: Path):
    out = tmp_path / "run"
    exe = Path(sys.executable).parent / "hardneg"
    t0 = time.perf_counter()
    r = subprocess.run(
        [str(exe), "run", "--scene-graphs", str(tmp_path / "nope.json"), "--output", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "scene graphs not found" in r.stderr
    assert time.perf_counter() - t0 < 15 and not out.exists()


def test_a_second_run_into_a_folder_being_written_refuses(tmp_path: Path, capsys):
    out = tmp_path / "run"
    with RunLock(out, "hardneg run"):
        err = _error(capsys, ["run", "--no-prefect", "--output", str(out)])
    assert "is being written by hardneg run (pid" in err and "wait for it to finish" in err


def test_serve_checks_cron_and_server_before_serving(tmp_path: Path, capsys, monkeypatch):
    out = str(tmp_path / "run")
    err = _error(capsys, ["serve", "--cron", "every monday", "--config", "demo", "--output", out])
    assert 'is not a cron schedule: five fields, minute hour day month weekday, e.g. "0 3 * * 1"' in err
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing listens on port 9
    assert "no Prefect server answers at PREFECT_API_URL=http://127.0.0.1:9/api" in _error(
        capsys, ["serve", "--cron", "0 3 * * 1", "--config", "demo", "--output", out]
    )
    assert "seeed: unknown key" in _error(
        capsys, ["serve", "--cron", "0 3 * * 1", "--output", out, "--config", _typo(tmp_path)]
    )
    assert not Path(out).exists()


def _typo(tmp_path: Path) -> str:
    p = tmp_path / "typo.yaml"
    p.write_text("seeed: 1\n")
    return str(p)


def test_split_errors_are_one_line(tmp_path: Path, capsys):
    assert "run folder not found" in _error(capsys, ["split", str(tmp_path / "nope")])
    assert "is not a hardneg run folder" in _error(capsys, ["split", str(tmp_path)])


def test_the_default_prefect_home_is_created(tmp_path: Path, monkeypatch):
    """Prefect makes only the last level of PREFECT_HOME: without ~/.hardneg the ephemeral server could not
    open its database and `hardneg run` timed out after 180 s."""
    from hardneg.cli import prefect_env_defaults

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("PREFECT_HOME", raising=False)
    prefect_env_defaults()
    assert Path(os.environ["PREFECT_HOME"]) == tmp_path / ".hardneg" / "prefect"
    assert (tmp_path / ".hardneg" / "prefect").is_dir()


def test_a_bug_shows_its_traceback_and_exit_1_while_a_user_error_stays_one_line(
    tmp_path: Path, graphs_folder: Path, capsys, monkeypatch
):
    """A scorer that returns one score too few is a bug in hardneg, not something the user can fix: it
    used to print "hardneg: error: zip() argument 2 is shorter than argument 1" and exit 2 like a typo in a
    config. It shows its traceback and exits 1; a user error in the same run stays one line and exit 2."""
    from hardneg.filters.scorers.text import NGramFilter

    score = NGramFilter.score
    monkeypatch.setattr(NGramFilter, "score", lambda self, items: score(self, items)[:-1])
    small = tmp_path / "small.yaml"
    small.write_text("demo: {n_scenes: 6}\n")
    argv = ["run", "--no-prefect", "--config", str(small), "--output", str(tmp_path / "run")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "zip() argument 2 is shorter than argument 1" in err
    assert "hardneg: internal error" in err and "hardneg: error:" not in err
    assert "images folder not found" in _error(
        capsys, [*argv, "--scene-graphs", str(graphs_folder), "--images", str(tmp_path / "nope")]
    )


@pytest.mark.parametrize(("sig", "status", "how"), [(15, 143, "SIGTERM"), (2, 130, "Ctrl+C")])
def test_a_stopped_run_says_how_to_resume_and_resumes(tmp_path: Path, sig: int, status: int, how: str):
    """Failed before: SIGTERM ended a run without a word, and Ctrl+C printed Python's traceback."""
    out = tmp_path / "run"
    small = "demo: {n_scenes: 8}\nshard_size: 4\nfilters: {scorers: {seam: {}}}\n"  # seconds, not half a minute
    (tmp_path / "small.yaml").write_text(small)
    cmd = [
        str(Path(sys.executable).parent / "hardneg"),
        "run",
        "--no-prefect",
        "--config",
        "small.yaml",
        "--output",
        str(out),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    seen = []
    for line in p.stderr:  # stop it once it is under way: a stage has finished
        seen.append(line)
        if line.startswith("paths "):
            break
    p.send_signal(sig)
    _, rest = p.communicate(timeout=120)
    err = "".join(seen) + rest
    assert p.returncode == status, err
    assert f"hardneg: stopped ({how}); finished work is kept" in err and "rerun the same command to resume" in err
    assert "Traceback" not in err
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "paths        done before" in done.stderr, done.stderr


class _Sends(pydantic.BaseModel):
    """A model whose serializer is where the signal lands: pydantic-core calls it from Rust, and wraps
    what it raises (the interrupt too) in a `PydanticSerializationError`."""

    sig: int

    @pydantic.field_serializer("sig")
    def _send(self, sig: int) -> int:
        os.kill(os.getpid(), sig)
        time.sleep(1)  # the handler runs at the next bytecode: here
        return sig


@pytest.mark.parametrize("swallow", [False, True])
@pytest.mark.parametrize(("sig", "status", "how"), [(15, 143, "SIGTERM"), (2, 130, "Ctrl+C")])
def test_a_stop_inside_a_c_extension_is_a_stop_and_stores_nothing_as_done(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sig: int,
    status: int,
    how: str,
    swallow: bool,
):
    """Failed before: a Ctrl+C that landed inside pydantic's serializer came out as "internal error" with
    a traceback and exit 1; and a stage whose `except Exception` took the wrapped interrupt for a bad
    sample stored its unit as done, so the run went on with the unit cut short."""
    from hardneg.generators.paths.stage import PathsStage

    def run(self: PathsStage, unit: object) -> None:
        try:
            _Sends(sig=sig).model_dump()
        except Exception as e:
            assert "Interrupt" in repr(e) or "Terminated" in repr(e), repr(e)  # wrapped, as the C extension does
            if not swallow:
                raise

    monkeypatch.setattr(PathsStage, "run", run)
    small = tmp_path / "small.yaml"
    small.write_text("demo: {n_scenes: 6}\n")
    out = tmp_path / "run"
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert main(["run", "--no-prefect", "--config", str(small), "--output", str(out)]) == status
    err = capsys.readouterr().err
    assert f"hardneg: stopped ({how}); finished work is kept" in err and "Traceback" not in err, err
    assert not list((out / "work" / "paths" / "_done").glob("*.json")), "a unit cut short was stored as done"
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # put back


def test_a_run_after_a_stopped_command_in_the_same_process_goes_on(tmp_path: Path):
    """Failed before: the stop a command answered stayed remembered, so the next run made in that process
    without the command (the Python API in a notebook, the next test of a pytest worker) raised Ctrl+C at its
    first unit. The command still reads the stop after its block; a run outside any block is not stopped."""
    from hardneg.core.runner import stop

    with pytest.raises(KeyboardInterrupt), stop.handled():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs at the next bytecode: here
    assert stop.requested() == "Ctrl+C"  # what the command reports after the block
    stop.check()  # outside a block: goes on
    from hardneg.core.config import load_config
    from hardneg.core.gqa.run_inputs import prepare_run
    from hardneg.core.runner.stage import Run
    from hardneg.flows.pipeline import STAGES

    cfg = load_config(None, {"demo": {"n_scenes": 4}})
    prepare_run(cfg, tmp_path / "run")
    assert Run(tmp_path / "run", cfg, list(STAGES[:2])).run_stage("ingest")["items_in"] == 4  # the API: runs
    with stop.handled():  # a new block forgets the old stop; a stop inside it still stops it
        assert stop.requested() is None
        stop._asked.append(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            stop.check()
        stop._asked.clear()
