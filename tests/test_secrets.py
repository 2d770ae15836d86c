"""No credential in any output, in any form: a server that echoes the API key (verbatim, in another case,
JSON-escaped, split, base64) leaves it in no file of the run folder (the response cache, rejects, the
report), no terminal line and no log record. (Before: a `Bearer <key>` echo was redacted, but the key
lower-cased reached 207 reject lines and the report, and the key with one `\\u` escape reached the response
cache and the rejects: the checks ran on the raw JSON text, case-sensitively.)"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from hardneg.cli import main as cli_main
from hardneg.core.secrets import REDACTED, WHOLLY_REDACTED, Secrets, scrub_logs, scrubbing_logs
from tests.test_language_openai import answer
from tests.test_openai_backend import FakeServer, Reply

KEY = "sk-Test4Secret9Key0ABCdefGHI"
FORMS = {
    "verbatim": KEY,
    "lower": KEY.lower(),
    "upper": KEY.upper(),
    "escaped": f"\\u{ord(KEY[0]):04x}" + KEY[1:],  # as a JSON string may hold it: a \u escape
    "split": KEY[:7] + " " + KEY[7:15] + " - " + KEY[15:],
    "base64": base64.b64encode(f"Authorisation: {KEY}".encode()).decode(),
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_form_is_found_and_redacted(form: str):
    s = Secrets((KEY,))
    text = f'{{"expressions": ["the cup", "{FORMS[form]}"]}}'
    assert s.found(text), form
    kept = s.redact(text)
    assert not s.found(kept) and (REDACTED in kept or kept == WHOLLY_REDACTED)
    assert s.redact("the red cup on the left") == "the red cup on the left"  # nothing else is touched


def test_log_records_are_scrubbed_before_any_handler_sees_them(caplog):
    with scrubbing_logs(Secrets((KEY,))), caplog.at_level(logging.INFO):
        logging.getLogger("prefect.flow_runs").info("server said %s", KEY.lower())
        logging.getLogger("hardneg").warning("escaped: %s", FORMS["escaped"])
    assert not any(Secrets((KEY,)).found(r.getMessage()) for r in caplog.records)
    assert all(REDACTED in r.getMessage() or WHOLLY_REDACTED in r.getMessage() for r in caplog.records)


def _echoing(sent: set[str]):
    """A well-behaved model (tests/test_language_openai.py) whose answers also carry the key, in each form in
    turn (every third answer carries none); `sent` collects the forms it echoed."""
    order = sorted(FORMS)

    def respond(body: dict[str, Any], n: int) -> Reply:
        reply = answer(body, n)
        data = json.loads(reply.content or "{}")
        key = "expressions" if "expressions" in data else "replacements"
        values = [*data.get(key, [])[:-1], "KEY_HERE"]  # in the form asked for: the last value is the key
        text = json.dumps({key: values})
        if not n % 3:
            return Reply(text.replace('"KEY_HERE"', '"x"'))
        form = order[(n // 3) % len(order)]
        sent.add(form)
        return Reply(text.replace("KEY_HERE", FORMS[form]))

    return respond


def test_an_echoed_key_reaches_no_file_no_terminal_and_no_log(tmp_path: Path, monkeypatch, capsys, caplog):
    """One run whose server echoes the key in every form in turn: a form that leaks shows up wherever it went
    (the check finds every form), in a run that costs what one form's run did."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sent: set[str] = set()
    server = FakeServer(_echoing(sent))
    secrets = Secrets((KEY,))
    try:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(
            "demo: {n_scenes: 4}\nimages: {enabled: false}\nlanguage:\n  backend: openai\n"
            f"  openai: {{base_url: '{server.url}', model: test-model}}\n"
        )
        with caplog.at_level(logging.DEBUG):
            assert cli_main(["run", "--no-prefect", "--config", str(cfg), "--output", str(tmp_path / "run")]) == 0
        assert server.auth[0] == f"Bearer {KEY}"  # the key was in use, and the server could echo it
    finally:
        server.close()
        scrub_logs(Secrets(()))
    assert sent == set(FORMS)  # every form was echoed at least once
    said = capsys.readouterr()
    assert not secrets.found(said.out + said.err)
    assert not any(secrets.found(r.getMessage()) for r in caplog.records)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert any(p.name == "llm_cache.sqlite" for p in files) and any(p.name == "rejects.jsonl" for p in files)
    leaked = [str(p) for p in files if secrets.found(p.read_bytes().decode("utf-8", "replace"))]
    assert leaked == [], leaked
    rejects = (tmp_path / "run" / "rejects.jsonl").read_text()
    assert "echoes a credential" in rejects  # the echoed answers were seen, and refused
