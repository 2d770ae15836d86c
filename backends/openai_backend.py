"""`OpenAIBackend`: the language role (`backends.language.LanguageBackend`) over any OpenAI-compatible server.

Implements the LLM steps of FineCops-Ref (SPEC 1.3 rewrites: the original once plus two rewrites guided by
in-context examples; SPEC 1.4 replace negatives: a misleading word of the same category) with:
- prompts as versioned Markdown files (`prompts/rewrite.v1.md`, format documented in `load_prompt`);
- structured output (JSON mode with a schema) and validation of every answer, format rules first, then the
  caller's semantic validator; invalid answers are asked again up to `max_attempts`, each attempt with its
  own seed and temperature so a deterministic server can answer differently;
- transport retries with seeded exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
  honouring `Retry-After`; `BackendUnavailable` when the server stays down;
- bounded concurrency (a thread pool), results in request order;
- an SQLite response cache (`backends.cache`) so a rerun with nothing changed sends no request.
The API key is read from the environment at client creation and kept only inside the client: it is never
part of a cache key, a log line, the version, or an exception message.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from backends.cache import ResponseCache, cache_key
from backends.language import Answer, BackendUnavailable, ReplaceRequest, RewriteRequest, Validator

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

JsonMode = Literal["json_object", "json_schema", "none"]
Task = Literal["rewrite", "replace"]
_REPO = Path(__file__).resolve().parent.parent
_MAX_REPLACEMENT_WORDS = 4  # "to the left of" is the longest same-category phrase we expect
_MAX_EXPRESSION_CHARS = 200  # also in the schema: a grammar-constrained small model otherwise rambles to max_tokens
_MAX_REPLACEMENT_CHARS = 40


@dataclass(frozen=True)
class OpenAISettings:
    """How to reach the server and how hard to try. Nothing here is secret: the key stays in the environment."""

    base_url: str | None  # None: the OPENAI_BASE_URL environment variable
    model: str
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key; unset means a local server
    timeout_s: float = 30.0  # per HTTP request
    max_retries: int = 4  # transport retries per call (429, 5xx, timeouts, connection errors)
    max_attempts: int = 3  # calls per request when answers are invalid
    concurrency: int = 4
    temperature: float = 0.7  # attempt 1; later attempts add `temperature_step`
    temperature_step: float = 0.15
    seed: int = 0  # attempt k sends seed + k - 1; also seeds the backoff jitter
    max_tokens: int = 256
    json_mode: JsonMode = "json_object"
    cache_path: Path | None = None  # None: no cache
    prompt_dir: Path = _REPO / "prompts"
    rewrite_prompt: str = "rewrite.v1.md"
    replace_prompt: str = "replace.v1.md"
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    retry_after_cap_s: float = 30.0  # a server asking for longer is not waited on longer

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.json_mode not in ("json_object", "json_schema", "none"):
            raise ValueError(f"json_mode must be json_object, json_schema or none, got {self.json_mode!r}")


# ---------------------------------------------------------------------------------------------------------
# Prompt files


@dataclass(frozen=True)
class Prompt:
    """A parsed prompt file: system message, few-shot (input fields, output JSON) pairs and a user template."""

    version: str  # "rewrite.v1": the file name without ".md"
    task: str
    system: str
    examples: tuple[tuple[dict[str, Any], dict[str, Any]], ...]
    user: str

    def render_user(self, fields: Mapping[str, Any]) -> str:
        return _fill(self.user, fields, self.version)

    def messages(self, fields: Mapping[str, Any]) -> list[dict[str, str]]:
        out = [{"role": "system", "content": self.system}]
        for inp, outp in self.examples:
            out.append({"role": "user", "content": self.render_user(inp)})
            out.append({"role": "assistant", "content": json.dumps(outp, ensure_ascii=False)})
        out.append({"role": "user", "content": self.render_user(fields)})
        return out


_SECTION = re.compile(r"^## +(\w+) *$", re.MULTILINE)
_FENCED = re.compile(r"^(input|output):\s*\n```(?:json)?\s*\n(.*?)\n```", re.MULTILINE | re.DOTALL)
_SLOT = re.compile(r"\{(\w+)\}")
_FILE_VERSION = re.compile(r"^(?P<task>[\w-]+)\.(?P<v>v\d+)\.md$")


def _format_slot(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return str(value)


def _fill(template: str, fields: Mapping[str, Any], where: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(1) not in fields:
            raise ValueError(f"{where}: user template slot {{{m.group(1)}}} has no value")
        return _format_slot(fields[m.group(1)])

    return _SLOT.sub(sub, template)


def load_prompt(path: Path) -> Prompt:
    """Parse a prompt file.

    Format (Markdown, editable without touching code):
    - a header between two `---` lines with `key: value` lines; `version: vN` is required and must equal the
      file name's `.vN` part (`rewrite.v1.md`), which is the version recorded in manifests and cache keys;
    - `## system`: the system message;
    - `## example`, repeatable: an `input:` and an `output:` line, each followed by a fenced JSON block;
      the input's fields fill the user template, the output is sent verbatim as the assistant's answer;
    - `## user`: the user template, with `{name}` slots (`{expression}`, `{keep}`, `{part}`, `{word}`,
      `{category}`, `{options}`, `{n}`); lists are joined with ", " ("none" when empty), null is "unknown".
    Anything else (a title, notes) is not sent.
    """
    path = Path(path)
    m = _FILE_VERSION.match(path.name)
    if m is None:
        raise ValueError(f"prompt file name {path.name!r} is not <task>.v<N>.md")
    text = path.read_text(encoding="utf-8")
    header: dict[str, str] = {}
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end < 0:
            raise ValueError(f"{path}: header opened with --- is never closed")
        for line in text[4:end].splitlines():
            if line.strip():
                k, sep, v = line.partition(":")
                if not sep:
                    raise ValueError(f"{path}: header line {line!r} is not key: value")
                header[k.strip()] = v.strip()
        text = text[end + 5 :]
    if header.get("version") != m.group("v"):
        raise ValueError(f"{path}: header version {header.get('version')!r} != file name version {m.group('v')!r}")

    marks = list(_SECTION.finditer(text))
    system, user, examples = None, None, []
    for i, mark in enumerate(marks):
        body = text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip()
        name = mark.group(1).lower()
        if name == "system":
            system = body
        elif name == "user":
            user = body
        elif name == "example":
            blocks = {k: v for k, v in _FENCED.findall(body)}
            if set(blocks) != {"input", "output"}:
                raise ValueError(f"{path}: example {len(examples) + 1} needs input: and output: JSON blocks")
            try:
                examples.append((json.loads(blocks["input"]), json.loads(blocks["output"])))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: example {len(examples) + 1} is not valid JSON: {e}") from None
        else:
            raise ValueError(f"{path}: unknown section '## {mark.group(1)}'")
    if not system or not user:
        raise ValueError(f"{path}: needs a '## system' and a '## user' section")
    return Prompt(
        f"{m.group('task')}.{m.group('v')}", header.get("task", m.group("task")), system, tuple(examples), user
    )


# ---------------------------------------------------------------------------------------------------------
# Answer format rules (the semantic rules are the caller's `validate`)

REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expressions": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": _MAX_EXPRESSION_CHARS},
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["expressions"],
    "additionalProperties": False,
}


def pinned_rewrite_schema(original: str) -> dict[str, Any]:
    """REWRITE_SCHEMA with the first item fixed to `original`: a grammar-following server (llama.cpp) then
    cannot skip or reword the original, which is the small models' most common slip; the two rewrites
    stay free. Only sent in json_object mode: OpenAI's strict structured outputs reject prefixItems."""
    free = {"type": "string", "minLength": 1, "maxLength": _MAX_EXPRESSION_CHARS}
    items = {"type": "array", "prefixItems": [{"const": original}, free, free], "minItems": 3, "maxItems": 3}
    return {**REWRITE_SCHEMA, "properties": {"expressions": items}}


def replace_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "replacements": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": _MAX_REPLACEMENT_CHARS},
                "minItems": 1,
                "maxItems": n,
            }
        },
        "required": ["replacements"],
        "additionalProperties": False,
    }


def normalise(text: str) -> str:
    """Lower case, single spaces, no surrounding space or final period: how answers are compared and kept."""
    return " ".join(text.split()).lower().rstrip(".").rstrip()


def _string_list(raw: str, key: str) -> tuple[list[str] | None, str | None]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, f"invalid json: {e.msg} at char {e.pos}"
    if not isinstance(data, dict):
        return None, f"invalid json: expected an object, got {type(data).__name__}"
    if key not in data:
        return None, f"missing key '{key}'"
    if extra := sorted(set(data) - {key}):
        return None, f"unexpected keys {extra}"
    items = data[key]
    if not isinstance(items, list):
        return None, f"'{key}' is not a list"
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            return None, f"'{key}'[{i}] is not a string"
        if not (item := normalise(item)):
            return None, f"'{key}'[{i}] is empty"
        out.append(item)
    return out, None


def check_rewrite(request: RewriteRequest, raw: str) -> tuple[tuple[str, ...] | None, str | None]:
    """(values, None) when `raw` is {"expressions": [original, rewrite, rewrite]}, else (None, reason)."""
    items, reason = _string_list(raw, "expressions")
    if items is None:
        return None, reason
    if len(items) != 3:
        return None, f"expected 3 expressions, got {len(items)}"
    original = normalise(request.expression)
    if items[0] != original:
        return None, f"first expression is not the original: {items[0]!r}"
    for r in items[1:]:
        if r == original:
            return None, f"repeats the original: {r!r}"
    if items[1] == items[2]:
        return None, f"rewrites are identical: {items[1]!r}"
    for r in items[1:]:
        if len(r) > _MAX_EXPRESSION_CHARS:
            return None, f"too long ({len(r)} characters): {r[:60]!r}..."
    return tuple(items), None


def check_replace(request: ReplaceRequest, raw: str) -> tuple[tuple[str, ...] | None, str | None]:
    """(values, None) when `raw` is {"replacements": [1..n short phrases]}, else (None, reason)."""
    items, reason = _string_list(raw, "replacements")
    if items is None:
        return None, reason
    items = list(dict.fromkeys(items))  # duplicates are noise, not an error
    if not 1 <= len(items) <= request.n:
        return None, f"expected 1 to {request.n} replacements, got {len(items)}"
    word = normalise(request.word)
    for r in items:
        if r == word:
            return None, f"repeats the original: {r!r}"
        if len(r.split()) > _MAX_REPLACEMENT_WORDS:
            return None, f"too long ({len(r.split())} words): {r!r}"
    return tuple(items), None


def rewrite_fields(request: RewriteRequest) -> dict[str, Any]:
    return {"expression": request.expression, "keep": list(request.keep)}


def replace_fields(request: ReplaceRequest) -> dict[str, Any]:
    return {
        "expression": request.expression,
        "part": request.part,
        "word": request.word,
        "category": request.category,
        "options": list(request.options),
        "n": request.n,
    }


def _check_examples(prompt: Prompt, path: Path) -> None:
    """A prompt's own examples must obey the rules the model is held to."""
    for i, (inp, outp) in enumerate(prompt.examples, 1):
        raw = json.dumps(outp)
        try:
            if prompt.task == "rewrite":
                _, reason = check_rewrite(RewriteRequest("example", inp["expression"], tuple(inp["keep"])), raw)
            else:
                req = ReplaceRequest(
                    "example",
                    inp["expression"],
                    inp["part"],
                    inp["word"],
                    inp["category"],
                    tuple(inp["options"]),
                    inp["n"],
                )
                _, reason = check_replace(req, raw)
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: example {i} input lacks field {e}") from None
        if reason is not None:
            raise ValueError(f"{path}: example {i} breaks the answer rules: {reason}")
        prompt.render_user(inp)  # every slot filled


# ---------------------------------------------------------------------------------------------------------
# The backend


class _Transient(Exception):
    """A failure worth retrying (429, 5xx, timeout, connection error)."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class _Rejected(Exception):
    """A 4xx other than 429: this request cannot succeed by asking again."""


@dataclass
class _Counters:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    invalid_answers: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, k: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + k)


def _redact_url(url: str) -> str:
    """The URL without user:password@ (credentials in a URL must not reach messages either)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        parts = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else ""))
    return urlunsplit(parts)


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # the HTTP-date form
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAIBackend:
    """`LanguageBackend` over an OpenAI-compatible chat-completions endpoint (OpenAI, llama.cpp, vLLM, ...)."""

    def __init__(self, settings: OpenAISettings) -> None:
        self.settings = settings
        base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ValueError("OpenAISettings.base_url is None and OPENAI_BASE_URL is not set")
        self.base_url = base_url
        self._shown_url = _redact_url(base_url)
        self.rewrite_prompt = self._load(settings.rewrite_prompt, "rewrite")
        self.replace_prompt = self._load(settings.replace_prompt, "replace")
        self._counters = _Counters()
        self._client: openai.OpenAI | None = None  # created on first use: no network or heavy import at construction
        self._client_lock = threading.Lock()
        self._cache = ResponseCache(settings.cache_path) if settings.cache_path is not None else None

    def _load(self, name: str, task: str) -> Prompt:
        path = self.settings.prompt_dir / name
        prompt = load_prompt(path)
        if prompt.task != task:
            raise ValueError(f"{path}: is a {prompt.task!r} prompt, expected {task!r}")
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
            except _Rejected as e:
                return Answer(request.key, None, error=str(e), raw=None, attempts=attempt, cached=False)
            all_cached &= cached
            values, reason = check(request, raw)
            if values is not None and validate is not None and (why := validate(request, values)) is not None:
                values, reason = None, f"semantic: {why}"
            if values is not None:
                return Answer(request.key, values, raw=raw, attempts=attempt, cached=all_cached)
            self._counters.add("invalid_answers")
            log.debug("%s attempt %d rejected: %s", request.key, attempt, reason)
        return Answer(request.key, None, error=reason, raw=raw, attempts=self.settings.max_attempts, cached=all_cached)

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
        if self._cache is not None:
            self._cache.put(ckey, raw)
        return raw, False

    def _call_with_retries(self, args: dict[str, Any], key: str, attempt: int, stop: threading.Event) -> str:
        s = self.settings
        rng = random.Random(f"{s.seed}:{key}:{attempt}")  # jitter reproducible per request, whatever the thread
        last: _Transient | None = None
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
            except _Transient as e:
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
                    raise ImportError("OpenAIBackend needs the openai client: pip install 'openai>=1.40'") from e
                # max_retries=0: retries are ours (counted, seeded, Retry-After capped, BackendUnavailable).
                self._client = openai.OpenAI(
                    base_url=self.base_url,
                    api_key=os.environ.get(self.settings.api_key_env) or "not-needed",
                    timeout=self.settings.timeout_s,
                    max_retries=0,
                )
            return self._client

    def _call(self, args: dict[str, Any]) -> str:
        """One HTTP request. Transient failures raise `_Transient`, other 4xx `_Rejected`."""
        import openai

        client = self._get_client()
        self._counters.add("calls")
        try:
            completion = client.chat.completions.create(**args)
        except openai.APITimeoutError:
            raise _Transient(f"timeout after {self.settings.timeout_s} s") from None
        except openai.APIConnectionError as e:
            raise _Transient(f"connection error ({type(e.__cause__).__name__ if e.__cause__ else e})") from None
        except openai.APIStatusError as e:
            status = e.status_code
            if status == 429 or status >= 500:
                raise _Transient(f"HTTP {status}", _retry_after(e.response.headers)) from None
            if status in (401, 403, 404):
                # A wrong key, model or URL fails every request alike: stop the stage and say so, rather
                # than reject every sample one by one.
                raise BackendUnavailable(
                    f"OpenAI-compatible server at {self._shown_url} refused the request: HTTP {status} "
                    f"(check the key in ${self.settings.api_key_env}, the model {self.settings.model!r} and the URL)"
                ) from None
            raise _Rejected(f"http {status}: {_short(e.message)}") from None
        # No choices or no content is an answer like any other: it fails validation as invalid JSON.
        content = completion.choices[0].message.content if completion.choices else None
        return content if content is not None else ""


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
