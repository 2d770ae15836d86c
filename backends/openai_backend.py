"""`OpenAIBackend`: the language role (`backends.language.LanguageBackend`) over any OpenAI-compatible server.

Implements the LLM steps of FineCops-Ref (rewrites: the original once plus two rewrites guided by
in-context examples; replace negatives: a misleading word of the same category) with:
- prompts as versioned Markdown files (`prompts/rewrite.v1.md`, format documented in `load_prompt`);
- structured output (JSON mode with a schema) and validation of every answer, format rules first, then the
  caller's semantic validator; invalid answers are asked again up to `max_attempts`, each attempt with its
  own seed and temperature so a deterministic server can answer differently;
- transport retries with seeded exponential backoff and jitter on 429, 5xx, timeouts, connection errors and
  server faults (a 2xx body that is no chat completion: HTML, truncated JSON), honouring `Retry-After`;
  `BackendUnavailable` naming the server, the model and an excerpt of what it sent when it stays down;
- bounded concurrency (a thread pool), results in request order;
- an SQLite response cache (`backends.cache`) so a rerun with nothing changed sends no request.
The API key is read from the environment at client creation and kept only inside the client: it is never
part of a cache key, a log line, the version, or an exception message. What the server sends is untrusted
(`backends.untrusted`): answers and reasons are cut, cleaned and redacted before they leave this class,
only answers that need no cleaning are cached, and an answer that echoes the key is invalid.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from hardneg.backends.cache import MAX_CACHED_CHARS, ResponseCache, cache_key
from hardneg.backends.language import Answer, BackendUnavailable, ReplaceRequest, RewriteRequest, Validator
from hardneg.backends.openai_prompts import (
    REWRITE_SCHEMA,
    Prompt,
    Task,
    _check_examples,
    check_replace,
    check_rewrite,
    load_prompt,
    normalise,
    pinned_rewrite_schema,
    replace_fields,
    replace_schema,
    rewrite_fields,
)
from hardneg.backends.openai_settings import JsonMode, OpenAISettings
from hardneg.backends.openai_transport import Counters, Rejected, Transient, retry_after
from hardneg.backends.untrusted import (
    EXCERPT_CHARS,
    MAX_STORED_CHARS,
    NotAChatCompletion,
    chat_content,
    clean,
    contains_secret,
)
from hardneg.core.errors import ConfigError, MissingDependency
from hardneg.core.plugins import LANGUAGE_BACKENDS
from hardneg.core.secrets import shown_url

if TYPE_CHECKING:
    from pathlib import Path

    import openai

    from hardneg.backends.requirements import Requirement
    from hardneg.core.config import RunConfig
    from hardneg.core.words.vocab import Lexicon

# The settings (backends/openai_settings.py) and the prompts, schemas and answer rules
# (backends/openai_prompts.py) live in their own modules; this module stays their public home.
__all__ = [
    "REWRITE_SCHEMA",
    "JsonMode",
    "OpenAIBackend",
    "OpenAISettings",
    "Prompt",
    "Task",
    "check_replace",
    "check_rewrite",
    "load_prompt",
    "normalise",
    "pinned_rewrite_schema",
    "replace_fields",
    "replace_schema",
    "rewrite_fields",
]

log = logging.getLogger(__name__)

_NO_KEY = "not-needed"  # sent when no key is set: a local server ignores it


def server_url(configured: str | None) -> str:
    """The server's URL: `language.openai.base_url`, else `$OPENAI_BASE_URL`; neither set is a config error."""
    if url := configured or os.environ.get("OPENAI_BASE_URL"):
        return url
    raise ConfigError(
        "language.backend is openai but language.openai.base_url is null and $OPENAI_BASE_URL is not set; "
        "set one (https://api.openai.com/v1 for OpenAI)"
    )


@LANGUAGE_BACKENDS.add("openai", order=20)
class OpenAIBackend:
    """`LanguageBackend` over an OpenAI-compatible chat-completions endpoint (OpenAI, llama.cpp, vLLM, ...)."""

    reads_own_rewrites = False  # an LLM's rewrites are its own words: spaCy reads them

    @classmethod
    def from_config(cls, cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> OpenAIBackend:
        o = cfg.language.openai
        cache = cfg.resolve(o.cache) if o.cache is not None else work_dir / "llm_cache.sqlite"
        return cls(OpenAISettings.from_config(o, cache))

    @classmethod
    def requirements(cls, cfg: RunConfig) -> list[Requirement]:
        """The server, reachable before the first stage (`flows/preflight.py`)."""
        from hardneg.backends.requirements import Requirement, Server

        o = cfg.language.openai
        return [Requirement("language.backend openai", server=Server(server_url(o.base_url), o.api_key_env or None))]

    @classmethod
    def fingerprint(cls, cfg: RunConfig) -> object:
        """The prompts' content: an edited prompt file makes other rewrites and words."""
        from hardneg.core.io import file_digest
        from hardneg.core.resources import bundled_dir

        o = cfg.language.openai
        return [file_digest(bundled_dir("prompts") / p) for p in (o.rewrite_prompt, o.replace_prompt)]

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        self.base_url = base_url = server_url(settings.base_url)
        self._shown_url = shown_url(base_url)
        self.rewrite_prompt = self._load(settings.rewrite_prompt, "rewrite")
        self.replace_prompt = self._load(settings.replace_prompt, "replace")
        self._counters = Counters()
        self._client: openai.OpenAI | None = None  # created on first use: no network or heavy import at construction
        self._client_lock = threading.Lock()
        self._cache = ResponseCache(settings.cache) if settings.cache is not None else None

    def _load(self, name: str, task: str) -> Prompt:
        path = self.settings.prompt_dir / name
        prompt = load_prompt(path)
        if prompt.task != task:
            raise ConfigError(f"{path}: is a {prompt.task!r} prompt, expected {task!r}")
        _check_examples(prompt, path)
        return prompt

    @property
    def version(self) -> str:
        return f"openai:{self.settings.model}+{self.rewrite_prompt.version}+{self.replace_prompt.version}"

    def stats(self) -> dict[str, int]:
        c = self._counters
        with c.lock:
            return {
                "calls": c.calls,
                "cache_hits": c.cache_hits,
                "retries": c.retries,
                "invalid_answers": c.invalid_answers,
                "unusable_answers": c.unusable_answers,
            }

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol -----------------------------------------------------------------------------------

    def rewrite(self, requests: Sequence[RewriteRequest], validate: Validator | None = None) -> list[Answer]:
        def schema(r: RewriteRequest) -> dict[str, Any]:
            return pinned_rewrite_schema(r.expression) if self.settings.json_mode == "json_object" else REWRITE_SCHEMA

        return self._run_all(
            requests,
            lambda r, stop: self._solve(
                r, self.rewrite_prompt, rewrite_fields(r), schema(r), check_rewrite, validate, stop
            ),
        )

    def replace(self, requests: Sequence[ReplaceRequest], validate: Validator | None = None) -> list[Answer]:
        for r in requests:
            if r.n < 1:
                raise ValueError(f"ReplaceRequest {r.key!r}: n must be >= 1, got {r.n}")
        return self._run_all(
            requests,
            lambda r, stop: self._solve(
                r, self.replace_prompt, replace_fields(r), replace_schema(r.n), check_replace, validate, stop
            ),
        )

    # -- machinery --------------------------------------------------------------------------------------

    def _run_all(self, requests: Sequence[Any], solve: Callable[[Any, threading.Event], Answer]) -> list[Answer]:
        """Solve every request on at most `concurrency` threads; answers come back in request order."""
        if not requests:
            return []
        stop = threading.Event()  # set when the server is declared down, so other workers give up at once
        with ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="llm") as pool:
            futures: list[Future[Answer]] = [pool.submit(solve, r, stop) for r in requests]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in futures if f in done and f.exception() is not None), None)
            if failed is not None:
                stop.set()
                for f in futures:
                    f.cancel()
                raise failed.exception()  # type: ignore[misc]
        return [f.result() for f in futures]

    def _solve(
        self,
        request: RewriteRequest | ReplaceRequest,
        prompt: Prompt,
        fields: dict[str, Any],
        schema: dict[str, Any],
        check: Callable[[Any, str], tuple[tuple[str, ...] | None, str | None]],
        validate: Validator | None,
        stop: threading.Event,
    ) -> Answer:
        messages = prompt.messages(fields)
        raw, reason, all_cached = None, None, True
        for attempt in range(1, self.settings.max_attempts + 1):
            try:
                raw, cached = self._complete(prompt.version, messages, schema, attempt, request.key, stop)
            except Rejected as e:
                return Answer(request.key, None, error=str(e), raw=None, attempts=attempt, cached=False)
            all_cached &= cached
            values, reason = check(request, raw)
            if not cached:
                self._count_answer(values is not None, raw, reason)
            if values is not None and contains_secret(raw, self._secrets()):
                values, reason = None, "echoes a credential"
            if values is not None and validate is not None and (why := validate(request, values)) is not None:
                values, reason = None, f"semantic: {why}"
            if values is not None:
                return Answer(request.key, values, raw=self._clean(raw), attempts=attempt, cached=all_cached)
            reason = self._clean(reason or "")  # reasons quote the answer
            self._counters.add("invalid_answers")
            log.debug("%s attempt %d rejected: %s", request.key, attempt, reason)
        return Answer(
            request.key,
            None,
            error=reason,
            raw=None if raw is None else self._clean(raw),
            attempts=self.settings.max_attempts,
            cached=all_cached,
        )

    def _count_answer(self, usable: bool, raw: str, reason: str | None) -> None:
        """A server that answers call after call with nothing usable (no choices, text not in the asked form)
        is no language model: after `max_unusable_in_a_row` such answers the stage stops, saying what it sent,
        rather than rejecting every sample one by one."""
        limit = self.settings.max_unusable_in_a_row
        if self._counters.answered(usable) >= limit:  # threads answer at once: the count may pass the limit
            said = repr(self._clean(raw, EXCERPT_CHARS)) if raw else "nothing (an empty answer)"
            raise BackendUnavailable(
                f"OpenAI-compatible server at {self._shown_url} gave no usable answer in {limit} calls in a row "
                f"(model {self.settings.model!r}); the last one: {said} ({self._clean(reason or '', 120)})"
            )

    def _secrets(self) -> tuple[str, ...]:
        """The key the client sends: redacted from all this backend stores or raises."""
        key = self._client.api_key if self._client is not None else None
        return (key,) if key and key != _NO_KEY else ()

    def _clean(self, text: str, limit: int = MAX_STORED_CHARS) -> str:
        """Untrusted server text fit to store or raise (`backends.untrusted.clean`)."""
        return clean(text, self._secrets(), limit)

    def _request_args(self, messages: list[dict[str, str]], schema: dict[str, Any], attempt: int) -> dict[str, Any]:
        s = self.settings
        args: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": round(s.temperature + s.temperature_step * (attempt - 1), 4),
            "seed": s.seed + attempt - 1,
            "max_tokens": s.max_tokens,
        }
        if s.json_mode == "json_object":
            # llama.cpp's server turns `schema` into a grammar (its json_schema type answers 500);
            # for api.openai.com use json_mode="json_schema".
            args["response_format"] = {"type": "json_object", "schema": schema}
        elif s.json_mode == "json_schema":
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            }
        return args

    def _complete(
        self,
        version: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        attempt: int,
        key: str,
        stop: threading.Event,
    ) -> tuple[str, bool]:
        """The raw answer text for one attempt, and whether it came from the cache."""
        args = self._request_args(messages, schema, attempt)
        ckey = cache_key(
            {
                "model": self.settings.model,
                "prompt": version,
                "messages": messages,
                "attempt": attempt,
                "temperature": args["temperature"],
                "seed": args["seed"],
                "max_tokens": args["max_tokens"],
                "json_mode": self.settings.json_mode,
                "response_format": args.get("response_format"),
            }
        )
        if self._cache is not None and (hit := self._cache.get(ckey)) is not None:
            self._counters.add("cache_hits")
            return hit, True
        raw = self._call_with_retries(args, key, attempt, stop)
        # Verbatim or not at all: an answer that cleaning would cut or change is asked again next time.
        if self._cache is not None and self._clean(raw, MAX_CACHED_CHARS) == raw:
            self._cache.put(ckey, raw)
        return raw, False

    def _call_with_retries(self, args: dict[str, Any], key: str, attempt: int, stop: threading.Event) -> str:
        s = self.settings
        rng = random.Random(f"{s.seed}:{key}:{attempt}")  # jitter reproducible per request, whatever the thread
        last: Transient | None = None
        for retry in range(s.max_retries + 1):
            if stop.is_set():
                raise BackendUnavailable(f"{self._shown_url}: gave up, another request found the server unavailable")
            if retry:
                self._counters.add("retries")
                delay = min(s.backoff_cap_s, s.backoff_base_s * 2 ** (retry - 1))
                delay = delay / 2 + rng.uniform(0, delay / 2)
                if last is not None and last.retry_after is not None:
                    delay = max(delay, min(last.retry_after, s.retry_after_cap_s))
                log.debug(
                    "%s attempt %d: %s, retry %d in %.2f s", key, attempt, last.what if last else "", retry, delay
                )
                stop.wait(delay)
            try:
                return self._call(args)
            except Transient as e:
                last = e
        assert last is not None
        raise BackendUnavailable(
            f"OpenAI-compatible server at {self._shown_url} unavailable: {last.what} "
            f"({s.max_retries + 1} tries with backoff {s.backoff_base_s}-{s.backoff_cap_s} s, model {s.model!r})"
        )

    def _get_client(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                try:
                    import openai
                except ImportError as e:
                    raise MissingDependency("OpenAIBackend needs the openai client: pip install 'openai>=1.40'") from e
                # max_retries=0: retries are ours (counted, seeded, Retry-After capped, BackendUnavailable).
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=os.environ.get(self.settings.api_key_env) or "not-needed",
                    timeout=self.settings.timeout_s,
                    max_retries=0,
                )
            return self._client

    def _call(self, args: dict[str, Any]) -> str:
        """One HTTP request. Transient failures (server faults included) raise `Transient`, other 4xx
        `Rejected`."""
        import openai

        client = self._get_client()
        self._counters.add("calls")
        try:
            # The raw response: the body is parsed here (`chat_content`), so that whatever the server
            # sends is a value or a server fault, never an exception from deep in the client.
            response = client.chat.completions.with_raw_response.create(**args)
        except openai.APITimeoutError:
            raise Transient(f"timeout after {self.settings.timeout_s} s") from None
        except openai.APIConnectionError as e:
            raise Transient(f"connection error ({type(e.__cause__).__name__ if e.__cause__ else e})") from None
        except openai.APIStatusError as e:
            status = e.status_code
            if status == 429 or status >= 500:
                raise Transient(f"HTTP {status}", retry_after(e.response.headers)) from None
            if status in (401, 403, 404):
                # A wrong key, model or URL fails every request alike: stop the stage and say so, rather
                # than reject every sample one by one.
                raise BackendUnavailable(
                    f"OpenAI-compatible server at {self._shown_url} refused the request: HTTP {status} "
                    f"(check the key in ${self.settings.api_key_env}, the model {self.settings.model!r} and the URL)"
                ) from None
            raise Rejected(f"http {status}: {self._clean(e.message, EXCERPT_CHARS)}") from None
        body = response.text
        try:
            return chat_content(body)
        except NotAChatCompletion as e:
            ctype = self._clean(response.headers.get("content-type") or "no content type", 80)
            sent = self._clean(body, EXCERPT_CHARS)
            raise Transient(f"answered HTTP {response.status_code} ({ctype}) with {e}: {sent!r}") from None
