"""OpenAIBackend and the language stage against an OpenAI-compatible server that lies or misbehaves: an
HTML page, truncated JSON, JSON that is no chat completion, 2 MB answers, an echo of the API key.

A real stdlib HTTP server on 127.0.0.1 sends whatever bytes a test scripts (any status, content type and
body), and the real `openai` client reads them. A broken answer is a server fault: retried, then a clear
error naming the server; untrusted text is cut, cleaned and redacted before it is stored anywhere.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hardneg.backends.cache import MAX_CACHED_CHARS
from hardneg.backends.language import BackendUnavailable
from hardneg.backends.openai_backend import OpenAIBackend
from hardneg.backends.untrusted import MAX_STORED_CHARS, clean
from hardneg.core.config import load_config
from hardneg.flows.pipeline import run_local
from tests.test_language_openai import answer as good_answer
from tests.test_openai_backend import rp, rw, settings

SECRET = "sk-hostile-DO-NOT-LEAK-0123456789abcdef"

# (request body, request headers (case-insensitive), request number from 0) -> (status, content type, body bytes)
Raw = tuple[int, str, bytes]
Responder = Callable[[dict[str, Any], Mapping[str, str], int], Raw]


class HostileServer:
    """/v1/chat/completions answering exactly the bytes a responder returns; counts requests."""

    def __init__(self, responder: Responder) -> None:
        self.requests = 0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    n = server.requests
                    server.requests += 1
                status, ctype, data = responder(body, self.headers, n)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile() -> Iterator[Callable[[Responder], HostileServer]]:
    servers: list[HostileServer] = []

    def start(responder: Responder) -> HostileServer:
        servers.append(HostileServer(responder))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def chat(content: str, model: str = "test-model") -> bytes:
    """A well-formed chat completion whose assistant text is `content`."""
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps(
        {"id": "c", "object": "chat.completion", "created": 0, "model": model, "choices": [choice]}
    ).encode()


def good(body: dict[str, Any]) -> Raw:
    """The well-behaved model of test_language_openai.py, as raw bytes."""
    return 200, "application/json", chat(good_answer(body, 0).content or "")


HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Proxy login required</body></html>"


# --- server faults: retried, then a clear error ---------------------------------------------------------


def test_html_200_is_a_server_fault_naming_the_server(hostile: Callable[[Responder], HostileServer]) -> None:
    server = hostile(lambda body, headers, n: (200, "text/html; charset=utf-8", HTML))
    with pytest.raises(BackendUnavailable) as info:
        OpenAIBackend(settings(server.url, max_retries=2)).rewrite([rw(0)])
    msg = str(info.value)
    assert server.url in msg and "'test-model'" in msg
    assert "text/html" in msg and "Proxy login required" in msg
    assert server.requests == 3  # retried like any transient fault


def test_truncated_json_is_retried_then_succeeds(hostile: Callable[[Responder], HostileServer]) -> None:
    def responder(body: dict[str, Any], headers: Mapping[str, str], n: int) -> Raw:
        status, ctype, data = good(body)
        return (status, ctype, data[: len(data) // 2]) if n == 0 else (status, ctype, data)

    server = hostile(responder)
    backend = OpenAIBackend(settings(server.url))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is not None and a.attempts == 1
    assert backend.stats()["retries"] == 1 and server.requests == 2


def test_always_truncated_json_names_the_server(hostile: Callable[[Responder], HostileServer]) -> None:
    server = hostile(lambda body, headers, n: (200, "application/json", chat("x" * 500)[:120]))
    with pytest.raises(BackendUnavailable) as info:
        OpenAIBackend(settings(server.url, max_retries=1)).rewrite([rw(i) for i in range(3)])
    msg = str(info.value)
    assert server.url in msg and "'test-model'" in msg and "invalid JSON" in msg
    assert '"chat.completion"' in msg  # an excerpt of what it sent...
    assert len(msg) < 1000  # ...short


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "quota exceeded"}},
        [1, 2],
        {"choices": [{"text": "a legacy completion"}]},
        {"choices": [{"message": {"role": "assistant", "content": ["not", "text"]}}]},
    ],
)
def test_json_that_is_no_chat_completion_is_a_server_fault(
    hostile: Callable[[Responder], HostileServer], body: Any
) -> None:
    server = hostile(lambda b, headers, n: (200, "application/json", json.dumps(body).encode()))
    with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1.*not a chat completion"):
        OpenAIBackend(settings(server.url, max_retries=1)).replace([rp(0)])
    assert server.requests == 2


def test_fault_excerpt_is_cut_cleaned_and_redacted(
    hostile: Callable[[Responder], HostileServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARDNEG_TEST_KEY", SECRET)

    def responder(body: dict[str, Any], headers: Mapping[str, str], n: int) -> Raw:
        page = f"<pre>\x1b[31mAuthorization: {headers['Authorization']}\x00</pre>" + "y" * 1_000_000
        return 200, "text/html", page.encode()

    server = hostile(responder)
    with pytest.raises(BackendUnavailable) as info:
        OpenAIBackend(settings(server.url, max_retries=0, api_key_env="HARDNEG_TEST_KEY")).rewrite([rw(0)])
    msg = str(info.value)
    assert SECRET not in msg and "[redacted]" in msg
    assert "\x1b" not in msg and "\x00" not in msg and len(msg) < 1000


# --- untrusted text in answers ----------------------------------------------------------------------------


def test_clean_cuts_drops_control_characters_and_redacts() -> None:
    assert clean("a\tb\nc\x00d\x1b[0m\r\ud800e", ()) == "a\tb\ncd[0me"
    assert clean(f"key {SECRET} and Bearer abc.def-123 and authorization: Basic dXNlcjpwdw==", (SECRET,)) == (
        "key [redacted] and Bearer [redacted] and authorization: [redacted]"
    )
    cut = clean("z" * 2_000_000, ())
    assert cut.startswith("z" * MAX_STORED_CHARS) and cut.endswith("… [cut: 2,000,000 chars]")
    assert len(cut) < MAX_STORED_CHARS + 40
    # a secret split by a control character or straddling the cut is still redacted, never half-kept
    near = "q" * (MAX_STORED_CHARS - 5) + SECRET[:6] + "\x00" + SECRET[6:]
    assert clean(near, (SECRET,)).startswith("q" * (MAX_STORED_CHARS - 5) + "[reda…")
    assert clean("the flag bearer on the left", ()) == "the flag bearer on the left"


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        (["black\x1b[2J"], "'replacements'[0] has control characters"),
        (["b" * 41], "too long (41 characters)"),
    ],
)
def test_unsafe_replacements_are_invalid(
    hostile: Callable[[Responder], HostileServer], words: list[str], reason: str
) -> None:
    server = hostile(lambda body, headers, n: (200, "application/json", chat(json.dumps({"replacements": words}))))
    (a,) = OpenAIBackend(settings(server.url, max_attempts=1)).replace([rp(0)])
    assert a.values is None and a.error is not None and a.error.startswith(reason), a.error


def test_answer_echoing_the_key_is_invalid(
    hostile: Callable[[Responder], HostileServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARDNEG_TEST_KEY", SECRET)
    server = hostile(
        lambda body, headers, n: (200, "application/json", chat(json.dumps({"replacements": [SECRET[:12], SECRET]})))
    )
    (a,) = OpenAIBackend(settings(server.url, max_attempts=1, api_key_env="HARDNEG_TEST_KEY")).replace([rp(0)])
    assert a.values is None and a.error == "echoes a credential"
    assert a.raw is not None and SECRET not in a.raw


# --- the language stage: nothing unbounded or secret reaches the run folder ---------------------------------


def _config(url: str, **openai: Any):
    return load_config(
        None,
        {
            "demo": {"n_scenes": 4},
            "images": {"enabled": False},
            "language": {
                "backend": "openai",
                "openai": {"base_url": url, "model": "test-model", "max_attempts": 1, **openai},
            },
        },
    )


def _files(root: Path) -> list[Path]:
    return [f for f in root.rglob("*") if f.is_file()]


def test_huge_answers_are_bounded_in_rejects_cache_and_run_folder(
    hostile: Callable[[Responder], HostileServer], tmp_path: Path
) -> None:
    huge = "w" * 2_000_000
    asked = {"rewrite": itertools.count(), "replace": itertools.count()}

    def responder(body: dict[str, Any], headers: Mapping[str, str], n: int) -> Raw:
        # The first 8 requests of each kind get 2 MB (more only slows the test), the rest good answers.
        rewrite = "expressions" in json.dumps(body.get("response_format", {}))
        if next(asked["rewrite" if rewrite else "replace"]) >= 8:
            return good(body)
        if rewrite:
            return 200, "application/json", chat(huge)  # a 2 MB rewrite answer, not JSON
        return 200, "application/json", chat(json.dumps({"replacements": [huge]}))  # a 2 MB "word"

    server = hostile(responder)
    root = tmp_path / "run"
    run_local(_config(server.url), root)
    assert server.requests > 0
    rejects = (root / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    llm = [json.loads(line) for line in rejects if "w" * 100 in line]
    assert len(llm) == 16, "each huge answer leaves one reject"
    for r in llm:
        raw = r["detail"]["raw"]
        assert re.search(r"w… \[cut: 2,000,0\d\d chars\]$", raw), raw[-40:]
        assert len(json.dumps(r)) < 2 * MAX_STORED_CHARS + 2000
    db = next(f for f in _files(root) if f.name == "llm_cache.sqlite")
    with sqlite3.connect(db) as conn:  # the write-ahead log grows with the number of inserts, not their size
        longest = conn.execute("SELECT max(length(raw)) FROM responses").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert longest <= MAX_CACHED_CHARS  # over-long answers are not cached
    cache = [f for f in _files(root) if f.name.startswith("llm_cache.sqlite")]
    assert sum(f.stat().st_size for f in cache) < 1_000_000
    sizes = {str(f.relative_to(root)): f.stat().st_size for f in _files(root)}
    assert max(sizes.values()) < 2_000_000, max(sizes.items(), key=lambda kv: kv[1])
    assert sum(sizes.values()) < 30_000_000


def test_echoed_key_reaches_no_file_of_the_run(
    hostile: Callable[[Responder], HostileServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARDNEG_TEST_KEY", SECRET)

    def responder(body: dict[str, Any], headers: Mapping[str, str], n: int) -> Raw:
        auth = headers["Authorization"]
        assert SECRET in auth
        if n % 4 == 0:  # an echo instead of an answer
            return 200, "application/json", chat(f"I was called with Authorization: {auth}")
        if n % 4 == 1:  # an error whose message echoes the request
            err = {"error": {"message": f"bad request from {auth}", "type": "invalid_request_error"}}
            return 400, "application/json", json.dumps(err).encode()
        if n % 4 == 2:  # the key inside an otherwise well-formed answer
            _, _, data = good(body)
            content = json.loads(data)["choices"][0]["message"]["content"]
            return 200, "application/json", chat(content.replace('"]', f' {SECRET}"]', 1))
        return good(body)

    server = hostile(responder)
    root = tmp_path / "run"
    run_local(_config(server.url, api_key_env="HARDNEG_TEST_KEY"), root)
    assert server.requests > 4
    leaks = [str(f.relative_to(root)) for f in _files(root) if SECRET.encode() in f.read_bytes()]
    assert not leaks
    assert "[redacted]" in (root / "rejects.jsonl").read_text(encoding="utf-8")
