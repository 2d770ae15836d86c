"""The language stage through the OpenAI backend against a local OpenAI-compatible server: resumes
from the response cache with zero calls, and a dead server fails the stage with a clear message."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

from hardneg.backends.language import BackendUnavailable
from hardneg.cli import main as cli_main
from hardneg.core.config import load_config
from hardneg.core.splits import SPLITS
from hardneg.flows.pipeline import run_local
from tests.test_openai_backend import FakeServer, Reply


def answer(body: dict[str, Any], n: int) -> Reply:
    """A well-behaved model: rewrites that keep every word, replacements from the offered options."""
    user = body["messages"][-1]["content"].splitlines()
    fields = dict(line.split(": ", 1) for line in user if ": " in line)
    if "expressions" in json.dumps(body.get("response_format", {})) or "Keep these words" in fields:
        e = fields["Expression"]
        return Reply(json.dumps({"expressions": [e, f"{e} in the image", f"{e} in the picture"]}))
    options = [o for o in fields.get("Options", "").split(", ") if o]
    return Reply(json.dumps({"replacements": options[:3] or ["purple"]}))


def _config(url: str, **language: Any):
    return load_config(
        None,
        {
            "demo": {"n_scenes": 10},
            "images": {"enabled": False},
            "language": {"backend": "openai", "openai": {"base_url": url, "model": "test-model"}, **language},
        },
    )


def _splits(root: Path) -> dict[str, bytes]:
    return {
        f"{s}/{k}": (root / "splits" / s / f"{k}.json").read_bytes() for s in SPLITS for k in ("positive", "negative")
    }


def test_openai_backend_in_the_pipeline_resumes_from_its_cache(tmp_path: Path):
    server = FakeServer(answer)
    try:
        cfg = _config(server.url)
        root = tmp_path / "run"
        m = run_local(cfg, root)
        first = len(server.bodies)
        assert first > 0 and sum(m["counts"]["negatives"].values()) > 0
        [backend] = m["models"]["language_backend"]
        assert backend.startswith("openai:test-model+rewrite.v1+replace.v2")
        assert m["counts"]["language"]["backend:calls"] == first
        before = _splits(root)

        run_local(cfg, root)  # nothing changed: every shard is done
        assert len(server.bodies) == first

        shutil.rmtree(root / "work" / "language")  # the stage's outputs lost: answers come from the cache
        m2 = run_local(cfg, root)
        assert len(server.bodies) == first, "a rerun made LLM calls"
        lang = m["counts"]["language"]
        assert m2["counts"]["language"]["backend:cache_hits"] == first + lang.get("backend:cache_hits", 0)
        assert _splits(root) == before
    finally:
        server.close()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_server_that_does_not_answer_stops_the_run_before_it_starts(tmp_path: Path, capsys):
    """The preflight asks the server once before the first stage: one line naming it, exit 2, no folder.
    (Before, the run made its folder and the stages before the language stage, then exited 3.)"""
    url = _dead_url()
    cfg_file = tmp_path / "c.yaml"
    cfg_file.write_text(f"demo: {{n_scenes: 4}}\nlanguage:\n  backend: openai\n  openai: {{base_url: '{url}'}}\n")
    out = tmp_path / "cli"
    assert cli_main(["run", "--no-prefect", "--config", str(cfg_file), "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hardneg: error: language.backend openai: no server answers at")
    assert url in err[0] and "Traceback" not in err[0] and not out.exists()


def test_a_server_that_fails_mid_run_stops_the_stage_with_a_clear_message(tmp_path: Path, capsys):
    """A server that answers the preflight but fails every completion: exit 3, the work kept to resume."""
    server = FakeServer(lambda body, n: Reply(status=503))
    try:
        cfg = _config(server.url)
        with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1"):
            run_local(
                cfg.model_copy(
                    update={
                        "language": cfg.language.model_copy(
                            update={"openai": cfg.language.openai.model_copy(update={"max_retries": 0})}
                        )
                    }
                ),
                tmp_path / "run",
            )
        cfg_file = tmp_path / "c.yaml"
        cfg_file.write_text(
            f"demo: {{n_scenes: 4}}\nlanguage:\n  backend: openai\n"
            f"  openai: {{base_url: '{server.url}', max_retries: 0}}\n"
        )
        out = tmp_path / "cli"
        assert cli_main(["run", "--no-prefect", "--config", str(cfg_file), "--output", str(out)]) == 3
        err = capsys.readouterr().err
        assert "unavailable" in err and "127.0.0.1" in err and "Traceback" not in err
        assert (out / "work" / "ingest" / "_stage.json").exists()  # finished work is kept: a rerun resumes
    finally:
        server.close()


def test_a_server_with_no_usable_answer_stops_the_run_naming_what_it_sent(tmp_path: Path, capsys):
    """Failed before: a server answering every call with no choice ended the run with exit 0, every rewrite
    rejected, and no line in the terminal or stats.md said so."""
    server = FakeServer(lambda body, n: Reply(None))  # a chat completion whose message is empty
    try:
        cfg_file = tmp_path / "c.yaml"
        cfg_file.write_text(
            "demo: {n_scenes: 4}\nimages: {enabled: false}\nlanguage:\n  backend: openai\n"
            f"  openai: {{base_url: '{server.url}', max_unusable_in_a_row: 6}}\n"
        )
        assert cli_main(["run", "--no-prefect", "--config", str(cfg_file), "--output", str(tmp_path / "r")]) == 3
        err = capsys.readouterr().err
        assert f"server at {server.url} gave no usable answer in 6 calls in a row" in err
        assert "the last one: nothing (an empty answer)" in err and "rerun the same command to resume" in err
    finally:
        server.close()


def test_a_stage_with_mostly_unusable_answers_says_so(tmp_path: Path, capsys):
    """A server that answers often enough never to be stopped, but mostly with text in no asked form: the run
    finishes, and the terminal, stats.md and the report say how much of what it sent was unusable."""

    def mostly_garbage(body: dict[str, Any], n: int) -> Reply:
        return answer(body, n) if n % 4 == 0 else Reply("I am sorry, I cannot help with that.")

    server = FakeServer(mostly_garbage)
    try:
        root = tmp_path / "run"
        run_local(_config(server.url), root)
        stats = (root / "stats.md").read_text()
        assert "language server: " in stats and "were empty or not in the form asked for" in stats
        assert "were empty or not in the form asked for" in (root / "report.html").read_text()
        from hardneg.exports.finecops import read_manifest
        from hardneg.flows.progress import closing_summary

        assert "WARNING: language server: " in closing_summary(root, read_manifest(root), 1.0)
    finally:
        server.close()
