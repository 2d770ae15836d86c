"""OpenAIBackend's transport against the scripted server of test_openai_backend.py: retries, timeouts,
status codes and Retry-After, dead servers, bounded concurrency, the response cache and the API key,
exercised end to end through the real `openai` client over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hardneg.backends.language import BackendUnavailable
from hardneg.backends.openai_backend import OpenAIBackend
from tests.test_openai_backend import (
    FakeServer,
    Reply,
    Responder,
    expression_of,
    good_rewrite,
    rewrites,
    rw,
    settings,
)
from tests.test_openai_backend import serve as serve  # the scripted-server fixture

# --- transport -----------------------------------------------------------------------------------------


def test_429_respects_retry_after(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(
        lambda body, n: Reply(status=429, headers={"Retry-After": "0.4"}) if n == 0 else good_rewrite(body, n)
    )
    backend = OpenAIBackend(settings(server.url))
    t0 = time.monotonic()
    (a,) = backend.rewrite([rw(0)])
    assert a.values is not None and a.attempts == 1
    assert time.monotonic() - t0 >= 0.4  # backoff alone would be ~0.01 s
    assert backend.stats()["retries"] == 1 and backend.stats()["calls"] == 2


def test_retry_after_is_capped(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(
        lambda body, n: Reply(status=429, headers={"Retry-After": "600"}) if n == 0 else good_rewrite(body, n)
    )
    t0 = time.monotonic()
    (a,) = OpenAIBackend(settings(server.url, retry_after_cap_s=0.1)).rewrite([rw(0)])
    assert a.values is not None and time.monotonic() - t0 < 2


def test_500_is_retried_then_succeeds(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(status=500) if n < 2 else good_rewrite(body, n))
    backend = OpenAIBackend(settings(server.url))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is not None
    assert backend.stats() == {"calls": 3, "cache_hits": 0, "retries": 2, "invalid_answers": 0, "unusable_answers": 0}


def test_persistent_500_raises_unavailable(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(status=503))
    with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1.*HTTP 503.*4 tries"):
        OpenAIBackend(settings(server.url, max_retries=3)).rewrite([rw(i) for i in range(3)])


def test_400_is_not_retried(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(status=400))
    backend = OpenAIBackend(settings(server.url))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is None and a.error is not None and a.error.startswith("http 400")
    assert len(server.bodies) == 1 and backend.stats()["retries"] == 0


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_or_model_errors_stop_the_stage(serve: Callable[[Responder], FakeServer], status: int) -> None:
    # A wrong key, model or URL fails every request alike: one clear error, not a reject per sample.
    server = serve(lambda body, n: Reply(status=status))
    with pytest.raises(BackendUnavailable, match=rf"HTTP {status}.*OPENAI_API_KEY.*test-model"):
        OpenAIBackend(settings(server.url)).rewrite([rw(i) for i in range(3)])
    assert len(server.bodies) <= 3  # not retried


def test_timeout_is_retried(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(rewrites(expression_of(body)), delay=1.0 if n == 0 else 0.0))
    backend = OpenAIBackend(settings(server.url, timeout_s=0.3))
    (a,) = backend.rewrite([rw(0)])
    assert a.values is not None and backend.stats()["retries"] == 1


def test_slow_server_raises_unavailable(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(rewrites(expression_of(body)), delay=0.6))
    with pytest.raises(BackendUnavailable, match=r"timeout after 0\.2 s"):
        OpenAIBackend(settings(server.url, timeout_s=0.2, max_retries=1)).rewrite([rw(0)])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_server_raises_unavailable_naming_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = OpenAIBackend(settings(url, max_retries=2))
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        backend.rewrite([rw(i) for i in range(10)])
    assert url in str(info.value) and "connection error" in str(info.value)
    assert time.monotonic() - t0 < 5


def test_credentials_in_url_are_not_shown() -> None:
    url = f"http://user:hunter2@127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendUnavailable) as info:
        OpenAIBackend(settings(url, max_retries=0)).rewrite([rw(0)])
    assert "hunter2" not in str(info.value) and "127.0.0.1" in str(info.value)


# --- concurrency and cache -----------------------------------------------------------------------------


def test_concurrency_bound(serve: Callable[[Responder], FakeServer]) -> None:
    server = serve(lambda body, n: Reply(rewrites(expression_of(body)), delay=0.08))
    answers = OpenAIBackend(settings(server.url, concurrency=3)).rewrite([rw(i) for i in range(12)])
    assert all(a.values is not None for a in answers)
    assert server.max_in_flight == 3


def test_cache_rerun_makes_zero_requests(serve: Callable[[Responder], FakeServer], tmp_path: Path) -> None:
    # Request 0 is answered invalidly on its first attempt, so the cache also replays attempt numbers.
    def responder(body: dict[str, Any], n: int) -> Reply:
        e = expression_of(body)
        return Reply("oops" if body["seed"] == 0 and e == rw(0).expression else rewrites(e))

    server = serve(responder)
    cache = tmp_path / "llm.sqlite"
    reqs = [rw(i) for i in range(5)]
    with OpenAIBackend(settings(server.url, cache=cache)) as first:
        answers = first.rewrite(reqs)
        assert first.stats()["calls"] == 6
    sent = len(server.bodies)
    with OpenAIBackend(settings(server.url, cache=cache)) as second:  # a new process, same cache file
        again = second.rewrite(reqs)
        want = {"calls": 0, "cache_hits": 6, "retries": 0, "invalid_answers": 1, "unusable_answers": 0}
        assert second.stats() == want
    assert len(server.bodies) == sent
    assert [a.values for a in again] == [a.values for a in answers]
    assert all(a.cached for a in again) and again[0].attempts == 2
    # A changed setting (temperature) is a different key: asked again.
    with OpenAIBackend(settings(server.url, cache=cache, temperature=0.2)) as third:
        third.rewrite(reqs[1:2])
        assert third.stats()["calls"] == 1


def test_key_never_reaches_disk_logs_or_errors(
    serve: Callable[[Responder], FakeServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "sk-test-DO-NOT-LEAK-0123456789"
    monkeypatch.setenv("HARDNEG_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    server = serve(lambda body, n: Reply(status=500) if n == 0 else good_rewrite(body, n))
    s = settings(server.url, api_key_env="HARDNEG_TEST_KEY", cache=tmp_path / "c" / "llm.sqlite")
    with OpenAIBackend(s) as backend:
        backend.rewrite([rw(0)])
        assert secret not in backend.version and secret not in repr(backend.settings)
    assert server.auth[-1] == f"Bearer {secret}"  # the key is used...
    files = list((tmp_path / "c").iterdir())
    assert files
    for f in files:  # ...but not stored (the database and its WAL/SHM files)
        assert secret.encode() not in f.read_bytes()
    with pytest.raises(BackendUnavailable) as info:
        OpenAIBackend(
            settings(f"http://127.0.0.1:{free_port()}/v1", api_key_env="HARDNEG_TEST_KEY", max_retries=0)
        ).rewrite([rw(0)])
    assert secret not in str(info.value)
    assert caplog.records and secret not in caplog.text


def test_unset_key_uses_placeholder(serve: Callable[[Responder], FakeServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARDNEG_UNSET_KEY", raising=False)
    server = serve(good_rewrite)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    OpenAIBackend(settings(None, api_key_env="HARDNEG_UNSET_KEY")).rewrite([rw(0)])  # type: ignore[arg-type]
    assert server.auth == ["Bearer not-needed"]
