"""A terminal that talks: a line per finished stage (time, items in and out, rejects), a closing summary
naming stats.md and report.html, bars only on a terminal, and Prefect's and httpx's chatter only with -v.
The runner's progress hooks (`core/runner/progress.py`) drive it the same way for `run_local` and the Prefect
flow. All of it fails on the code before this was built, which printed nothing for the whole run, then a dict."""

from __future__ import annotations

import io
import logging
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from rich.console import Console

from hardneg.cli import main, setup_logging
from hardneg.core.config import load_config
from hardneg.core.runner.progress import Progress
from hardneg.flows.pipeline import STAGES, run_local
from hardneg.flows.progress import Terminal

TINY = "demo: {n_scenes: 4}\nshard_size: 2\nimages: {enabled: false}\n"


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def stage_start(self, stage: str, units: int, pending: int) -> None:
        self.events.append(("start", stage))

    def unit_done(self, stage: str, marker: dict[str, Any]) -> None:
        self.events.append(("unit", stage))

    def stage_done(self, stage: str, summary: dict[str, Any]) -> None:
        self.events.append(("done", stage))

    def stage_skipped(self, stage: str, summary: dict[str, Any]) -> None:
        self.events.append(("skipped", stage))


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    base = tmp_path_factory.mktemp("talk")
    (base / "tiny.yaml").write_text(TINY)
    out = base / "run"
    capture = pytest.MonkeyPatch()
    err, std = io.StringIO(), io.StringIO()
    capture.setattr("sys.stderr", err)
    capture.setattr("sys.stdout", std)
    try:
        assert main(["run", "--no-prefect", "--config", str(base / "tiny.yaml"), "--output", str(out)]) == 0
    finally:
        capture.undo()
    return out, err.getvalue(), std.getvalue()


def test_a_line_per_stage_in_order_with_time_items_and_rejects(cli_run):
    _, err, _ = cli_run
    lines = [line for line in err.splitlines() if line.strip()]
    assert [line.split()[0] for line in lines] == [s.name for s in STAGES]
    paths = next(line for line in lines if line.startswith("paths"))
    assert paths.split()[1].endswith("s") and " in 4 " in paths and " out " in paths and " rejects " in paths
    assert "\x1b[" not in err  # not a terminal: no bars, no colour codes


def test_decide_and_write_report_what_they_kept_as_the_summary_counts_it(cli_run):
    # decide said "out 848 (positives 0)" and write "out 0" beside a summary of 459 negatives
    out, err, std = cli_run
    lines = {line.split()[0]: line for line in err.splitlines() if line.strip()}
    m = orjson.loads((out / "manifest.json").read_bytes())["counts"]
    kept = f"kept: negatives {sum(m['negatives'].values())}, positives {sum(m['positives'].values())}"
    assert kept in lines["decide"] and kept in lines["write"], (lines["decide"], lines["write"])
    assert f"negatives {sum(m['negatives'].values())}" in std


def test_the_closing_summary_names_where_to_look(cli_run):
    out, _, std = cli_run
    assert f"run folder: {out}" in std
    assert str(out / "stats.md") in std and str(out / "report.html") in std
    assert f'datasets.load_dataset("{out}")' in std


def test_hooks_come_in_order_and_a_finished_stage_says_it_was_skipped(cli_run, tmp_path: Path):
    out, _, _ = cli_run
    root = tmp_path / "copy"
    shutil.copytree(out, root)
    shutil.rmtree(root / "work" / "write")  # only write and report run again
    rec = Recorder()
    run_local(load_config(None, {"demo": {"n_scenes": 4}, "shard_size": 2, "images": {"enabled": False}}), root, rec)
    rerun = ("write", "report")  # the exports read what `decide` made, not the splits: they stay done
    assert [e for e in rec.events if e[0] == "skipped"] == [("skipped", s.name) for s in STAGES if s.name not in rerun]
    assert [e for e in rec.events if e[0] != "skipped"] == [
        ("start", "write"),
        ("unit", "write"),
        ("done", "write"),
        ("start", "report"),
        ("unit", "report"),
        ("done", "report"),
    ]


def test_a_terminal_shows_bars_and_lines():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with Terminal(console) as t:
        t.stage_start("paths", 3, 2)
        t.unit_done("paths", {})
        t.stage_done("paths", {"items_in": 40, "written": {"positives": 938}, "rejects": 623})
    assert "paths" in buf.getvalue() and "in 40  out 938  rejects 623" in buf.getvalue()
    assert t.lines == [t.lines[0]] and t.lines[0].startswith("paths")


@pytest.mark.parametrize("verbose", [False, True])
def test_prefect_and_httpx_chatter_only_with_verbose(verbose: bool, capsys):
    setup_logging(verbose)
    try:
        logging.getLogger("httpx").warning("HTTP Request: POST http://127.0.0.1/api/logs")
        # as Prefect's flow-run logger sends it: with the run's name, which Prefect's own console handler
        # (on the root logger once any earlier test has imported Prefect) formats
        logging.getLogger("prefect.flow_runs").error("Finished in state Failed()", extra={"flow_run_name": "r"})
        logging.getLogger("hardneg").warning("a hardneg warning")
        err = capsys.readouterr().err
    finally:
        setup_logging(False)
    assert "a hardneg warning" in err
    assert ("HTTP Request" in err) is verbose and ("Finished in state" in err) is verbose
