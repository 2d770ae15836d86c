"""Before the first stage, every model role the config turns on is there, or the run stops in seconds with
one line naming the role, the missing piece and how to get it: exit 2, no folder. (Before, a config with a
model filter ran every stage up to the filters, minutes at GQA scale, then failed with a traceback.)"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hardneg.backends.requirements import Requirement, Server, Weights, check
from hardneg.cli import main
from hardneg.core.config import load_config
from hardneg.flows.preflight import requirements


def _config(tmp_path: Path, text: str) -> str:
    p = tmp_path / "c.yaml"
    p.write_text("demo: {n_scenes: 4}\n" + ("" if text.startswith("images:") else "images: {enabled: false}\n") + text)
    return str(p)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("filters: {scorers: {clip: {model: /no/such/clip}}}\n", "filters.scorers.clip: model folder /no/such/clip"),
        (
            "filters: {scorers: {detector: {model: no-such-org/no-such-owl}}}\n",
            "filters.scorers.detector: no-such-org/no-such-owl is not in the local Hugging Face cache",
        ),
        (
            "images: {enabled: true, backend: diffusers, diffusers: {model: /no/such/sd}}\n",
            "images.backend diffusers: model folder /no/such/sd",
        ),
        (
            "filters: {scorers: {dinov2: {repo_or_dir: facebookresearch/no-such, source: github}}}\n",
            "filters.scorers.dinov2: torch.hub repository facebookresearch/no-such is not in torch.hub's cache",
        ),
        (
            "refine: {scorers: [{kind: ngram}, {kind: transformers, model: /no/such/cola}]}\n",
            "refine.scorers[1] (transformers): model folder /no/such/cola",
        ),
    ],
    ids=["local-folder", "hub-id", "diffusers", "torch-hub", "refine-scorer"],
)
def test_a_missing_model_stops_the_run_in_seconds_with_one_line_and_no_folder(
    tmp_path: Path, capsys, monkeypatch, text: str, says: str
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the hub is not asked: the cache is all there is
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    out = tmp_path / "run"
    t0 = time.perf_counter()
    assert main(["run", "--no-prefect", "--config", _config(tmp_path, text), "--output", str(out)]) == 2
    assert time.perf_counter() - t0 < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hardneg: error: " + says), err
    assert not out.exists()


def test_a_missing_package_names_the_install_command():
    req = Requirement("filters.scorers.x", ("torch", "no_such_package_hardneg"), "pip install no-such-package")
    assert (
        check(req) == "filters.scorers.x needs no_such_package_hardneg, not installed here: pip install no-such-package"
    )


def test_a_local_model_folder_with_its_files_passes(tmp_path: Path):
    folder = tmp_path / "clip"
    folder.mkdir()
    assert "is not a model folder: it has no config.json" in (
        check(Requirement("r", weights=(Weights(str(folder)),))) or ""
    )
    (folder / "config.json").write_text("{}")
    assert check(Requirement("r", weights=(Weights(str(folder)),))) is None
    assert check(Requirement("r", weights=(Weights(str(folder), "model_index.json"),))) is not None


def test_a_hub_id_in_the_local_cache_passes_offline(tmp_path: Path, monkeypatch):
    """A warm cache is enough: the files the hub's layout puts under HF_HOME."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    snap = tmp_path / "hf" / "hub" / "models--org--tiny" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    refs = tmp_path / "hf" / "hub" / "models--org--tiny" / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc")
    assert check(Requirement("r", weights=(Weights("org/tiny"),))) is None
    assert check(Requirement("r", weights=(Weights("org/other"),))) is not None


@pytest.fixture
def models_endpoint():
    """A server whose `GET /v1/models` answers with the status the test sets, recording the auth header."""
    import http.server
    import threading

    seen: dict = {"status": 200, "auth": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            seen["auth"].append(self.headers.get("Authorization"))
            self.send_response(seen["status"])
            self.end_headers()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    seen["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield seen
    httpd.shutdown()


def test_a_server_that_refuses_the_key_is_named_without_the_key(models_endpoint, monkeypatch):
    monkeypatch.setenv("HARDNEG_TEST_KEY", "sk-very-secret-123")
    server = Server(models_endpoint["url"], "HARDNEG_TEST_KEY")
    assert check(Requirement("language", server=server)) is None  # any other answer: a server is there
    models_endpoint["status"] = 401
    why = check(Requirement("language", server=server)) or ""
    assert "refuses the API key ($HARDNEG_TEST_KEY; HTTP 401)" in why and "sk-very" not in why
    assert models_endpoint["auth"][-1] == "Bearer sk-very-secret-123"


def test_a_stage_already_done_needs_nothing_more():
    """A resumed run is asked only for the roles of the stages it still has to do."""
    cfg = load_config(None, {"filters": {"scorers": {"clip": {"model": "/no/such/clip"}}}})
    assert [r.role for r in requirements(cfg, {"filters"})] == ["filters.scorers.clip"]
    assert requirements(cfg, {"refine", "decide", "write"}) == []
