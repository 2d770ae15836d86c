"""OpenAIBackend against a real in-process OpenAI-compatible HTTP server with scripted answers: valid and
invalid answers, request shape, and the prompt files.

The real `openai` client talks HTTP to a stdlib server on 127.0.0.1, not a mock. The scripted server and
its helpers live here and are shared with test_openai_backend_transport.py (retries, timeouts, status
codes, Retry-After, concurrency, caching, the key) and test_language_openai.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hardneg.backends.language import ReplaceRequest, RewriteRequest
from hardneg.backends.openai_backend import OpenAIBackend, OpenAISettings, load_prompt
from hardneg.core.errors import ConfigError

# --- the scripted server ------------------------------------------------------------------------------


@dataclass
class Reply:
    content: str | None = None  # the assistant's text (status 200)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Responder = Callable[[dict[str, Any], int], Reply]  # (request body, request number from 0) -> reply


class FakeServer:
    """/v1/chat/completions answering from a responder; records bodies, headers and peak concurrency."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    n = len(server.bodies)
                    server.bodies.append(body)
                    server.auth.append(self.headers.get("Authorization"))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.responder(body, n)
                    time.sleep(reply.delay)
                finally:
                    # out of flight before the reply goes out: a client's next request, sent once it has read
                    # this reply, must not find this one still counted (a busy machine delays this thread)
                    with server.lock:
                        server.in_flight -= 1
                try:
                    if reply.status == 200:
                        payload = {
                            "id": f"chatcmpl-{n}",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    else:
                        payload = {"error": {"message": f"scripted {reply.status}", "type": "test"}}
                    data = json.dumps(payload).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # A short poll interval: shutdown() waits for one poll, 0.5 s by default, on every test.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], FakeServer]]:
    servers: list[FakeServer] = []

    def start(responder: Responder) -> FakeServer:
        servers.append(FakeServer(responder))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def settings(url: str, **kw: Any) -> OpenAISettings:
    fast = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, "timeout_s": 2.0, "model": "test-model"}
    return OpenAISettings(base_url=url, **{**fast, **kw})


def expression_of(body: dict[str, Any]) -> str:
    """The expression of the request (the last user turn's `Expression:` line)."""
    return body["messages"][-1]["content"].splitlines()[0].removeprefix("Expression: ")


def rewrites(expr: str) -> str:
    return json.dumps({"expressions": [expr, f"{expr} here", f"there, {expr}"]})


def good_rewrite(body: dict[str, Any], n: int) -> Reply:
    return Reply(rewrites(expression_of(body)))


def rw(i: int, expr: str | None = None) -> RewriteRequest:
    return RewriteRequest(f"s{i}", expr or f"the white plate {i} left of the cup", ("white", "plate", "cup"))


def rp(i: int, word: str = "white", n: int = 3) -> ReplaceRequest:
    return ReplaceRequest(f"r{i}", "the white plate to the left of the cup", "attribute", word, "color", ("black",), n)


# --- valid answers, order, request shape ---------------------------------------------------------------


def test_valid_rewrites_parse_in_request_order(serve: Callable[[Responder], FakeServer]) -> None:
    # Later requests answer faster, so completion order is the reverse of request order.
    def responder(body: dict[str, Any], n: int) -> Reply:
        i = int(expression_of(body).split()[3])  # "the white plate {i} ..."
        return Reply(rewrites(expression_of(body)), delay=0.01 * (8 - i))

    server = serve(responder)
    reqs = [rw(i) for i in range(8)]
    backend = OpenAIBackend(settings(server.url, concurrency=4))
    answers = backend.rewrite(reqs)
    assert [a.key for a in answers] == [r.key for r in reqs]
    for req, a in zip(reqs, answers, strict=True):
        assert a.values == (req.expression, f"{req.expression} here", f"there, {req.expression}")
        assert a.error is None and a.attempts == 1 and not a.cached
    assert backend.stats() == {"calls": 8, "cache_hits": 0, "retries": 0, "invalid_answers": 0, "unusable_answers": 0}
    # With 4 workers the server may receive any request first: look at the one for reqs[0].
    body = next(b for b in server.bodies if expression_of(b) == reqs[0].expression)
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["required"] == ["expressions"]
    # json_object mode pins the first item to the original (llama.cpp turns the schema into a grammar).
    assert body["response_format"]["schema"]["properties"]["expressions"]["prefixItems"][0] == {
        "const": reqs[0].expression
    }
    assert body["seed"] == 0 and body["model"] == "test-model"
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles.count("assistant") >= 3 and roles[-1] == "user"
    assert "white, plate, cup" in body["messages"][-1]["content"]
    assert backend.version == "openai:test-model+rewrite.v1+replace.v2"


def test_order_kept_when_completion_order_is_shuffled(serve: Callable[[Responder], FakeServer]) -> None:
    delays = [0.05, 0.0, 0.03, 0.01, 0.04, 0.02]

    def responder(body: dict[str, Any], n: int) -> Reply:
        i = int(expression_of(body).split()[3])  # "the white plate {i} ..."
        return Reply(rewrites(expression_of(body)), delay=delays[i])

    server = serve(responder)
    answers = OpenAIBackend(settings(server.url, concurrency=6)).rewrite([rw(i) for i in range(6)])
    assert [a.values[0] for a in answers] == [rw(i).expression for i in range(6)]  # type: ignore[index]


def test_replace_normalises_and_dedupes(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(json.dumps({"replacements": [" Black.", "black", "RED  "]})))
    (a,) = OpenAIBackend(settings(server.url)).replace([rp(0)])
    assert a.values == ("black", "red")
    assert server.bodies[0]["response_format"]["schema"]["properties"]["replacements"]["maxItems"] == 3
    assert "Replace the attribute: white" in server.bodies[0]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("json_schema", "json_schema"), ("none", None)],
)
def test_json_modes(serve: Callable[[Responder], FakeServer], mode: str, expected: str | None) -> None:
    server = serve(good_rewrite)
    OpenAIBackend(settings(server.url, json_mode=mode)).rewrite([rw(0)])
    rf = server.bodies[0].get("response_format")
    if expected is None:
        assert rf is None
    else:
        assert rf["type"] == "json_schema" and rf["json_schema"]["schema"]["required"] == ["expressions"]
        assert "prefixItems" not in rf["json_schema"]["schema"]["properties"]["expressions"]


# --- invalid answers -----------------------------------------------------------------------------------

ORIG = "the white plate 0 left of the cup"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"expressions": ["a", ', "invalid json: "),
        ("[1, 2]", "invalid json: expected an object"),
        ('{"exprs": ["a", "b", "c"]}', "missing key 'expressions'"),
        (json.dumps({"expressions": [ORIG, "x"], "extra": 1}), "unexpected keys ['extra']"),
        (json.dumps({"expressions": [ORIG, 3, "y"]}), "'expressions'[1] is not a string"),
        (json.dumps({"expressions": [ORIG, "  ", "y"]}), "'expressions'[1] is empty"),
        (json.dumps({"expressions": [ORIG, "x"]}), "expected 3 expressions, got 2"),
        (json.dumps({"expressions": ["a plate", "x", "y"]}), "first expression is not the original"),
        (json.dumps({"expressions": [ORIG, ORIG.upper() + ".", "y"]}), "repeats the original"),
        (json.dumps({"expressions": [ORIG, "x", "X"]}), "rewrites are identical"),
    ],
)
def test_invalid_rewrite_is_retried_then_reported(
    serve: Callable[[Responder], FakeServer], content: str, reason: str
) -> None:
    server = serve(lambda body, n: Reply(content))
    backend = OpenAIBackend(settings(server.url, max_attempts=3))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is None and a.error is not None and a.error.startswith(reason), a.error
    assert a.raw == content and a.attempts == 3
    # Each attempt is a distinct call: new seed, warmer temperature.
    assert [b["seed"] for b in server.bodies] == [0, 1, 2]
    temps = [b["temperature"] for b in server.bodies]
    assert temps == sorted(temps) and len(set(temps)) == 3
    assert backend.stats()["invalid_answers"] == 3


def test_invalid_then_valid(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply("not json" if body["seed"] == 0 else rewrites(expression_of(body))))
    backend = OpenAIBackend(settings(server.url))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is not None and a.attempts == 2 and a.raw == rewrites(rw(0).expression)
    assert backend.stats() == {"calls": 2, "cache_hits": 0, "retries": 0, "invalid_answers": 1, "unusable_answers": 1}


@pytest.mark.parametrize(
    ("replacements", "reason"),
    [
        (["black", "White"], "repeats the original: 'white'"),
        (["a very long made up phrase"], "too long (6 words)"),
        (["black", "red", "blue", "green"], "expected 1 to 3 replacements, got 4"),
        ([], "expected 1 to 3 replacements, got 0"),
    ],
)
def test_invalid_replace(serve: Callable[[Responder], FakeServer], replacements: list[str], reason: str) -> None:
    server = serve(lambda body, n: Reply(json.dumps({"replacements": replacements})))
    (a,) = OpenAIBackend(settings(server.url, max_attempts=2)).replace([rp(0)])
    assert a.values is None and a.error is not None and a.error.startswith(reason), a.error
    assert a.attempts == 2 and len(server.bodies) == 2


def test_semantic_validator_is_applied_and_retried(serve: Callable[[Responder], FakeServer]) -> None:
    def responder(body: dict[str, Any], n: int) -> Reply:
        e = expression_of(body)
        if body["seed"] == 0:  # the first attempt drops "plate"
            return Reply(json.dumps({"expressions": [e, "the white dish left of the cup", "a white dish by the cup"]}))
        return Reply(rewrites(e))

    def validate(req: RewriteRequest | ReplaceRequest, values: tuple[str, ...]) -> str | None:
        assert isinstance(req, RewriteRequest)
        for v in values:
            for w in req.keep:
                if w not in v:
                    return f"drops {w!r}"
        return None

    server = serve(responder)
    (ok,) = OpenAIBackend(settings(server.url)).rewrite([rw(0)], validate)
    assert ok.values is not None and ok.attempts == 2
    (bad,) = OpenAIBackend(settings(server.url, max_attempts=1)).rewrite([rw(0)], validate)
    assert bad.values is None and bad.error == "semantic: drops 'plate'" and bad.attempts == 1


# --- prompt files --------------------------------------------------------------------------------------


def test_shipped_prompts_have_enough_examples() -> None:
    root = Path(__file__).resolve().parent.parent / "prompts"
    rewrite = load_prompt(root / "rewrite.v1.md")
    assert rewrite.version == "rewrite.v1" and len(rewrite.examples) >= 3
    for v in ("v1", "v2"):
        replace = load_prompt(root / f"replace.{v}.md")
        assert replace.version == f"replace.{v}" and len(replace.examples) >= 4
        assert {ex[0]["part"] for ex in replace.examples} == {"object", "attribute", "relation"}
    # v2's options are a shortlist of what fits the scene: its examples answer from them
    assert all(set(out["replacements"]) <= set(inp["options"]) for inp, out in replace.examples)


def test_prompt_errors_name_the_file(tmp_path: Path) -> None:
    src = (Path(__file__).resolve().parent.parent / "prompts" / "rewrite.v1.md").read_text()
    bad_version = tmp_path / "rewrite.v2.md"
    bad_version.write_text(src)
    with pytest.raises(ConfigError, match=r"rewrite\.v2\.md.*version 'v1' != file name version 'v2'"):
        load_prompt(bad_version)
    broken = tmp_path / "rewrite.v1.md"
    broken.write_text(
        src.replace('"the plate with the same color as the rice"', '"the plate that has the same color as the rice"')
    )
    with pytest.raises(ConfigError, match="example 4 breaks the answer rules: repeats the original"):
        OpenAIBackend(settings("http://127.0.0.1:9/v1", prompt_dir=tmp_path))
    with pytest.raises(ConfigError, match=r"not <task>\.v<N>\.md"):
        load_prompt(tmp_path / "rewrite.md")


def test_the_stop_for_unusable_answers_names_the_limit_however_many_threads_passed_it():
    """Regression (seen once under load): with concurrent calls a second unusable answer could land before
    the first one's stop was raised, and the message said "7 calls in a row" for a limit of 6."""
    from hardneg.backends.language import BackendUnavailable

    backend = OpenAIBackend(settings("http://127.0.0.1:9/v1", max_unusable_in_a_row=3))
    backend._counters.unusable_in_a_row = 3  # another thread's unusable answer came in first
    with pytest.raises(BackendUnavailable, match="gave no usable answer in 3 calls in a row"):
        backend._count_answer(False, "", "empty answer")
