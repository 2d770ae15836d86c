"""Text from a language model's server is untrusted: bound it, clean it and redact secrets before storing it.

An OpenAI-compatible server may answer anything: an HTML login page, megabytes of text, terminal escape
sequences, lone surrogates that no UTF-8 file can hold, or an echo of the request's `Authorization`
header. Every place that stores or raises such text (rejects and therefore the report, the response
cache, error messages) passes it through `clean` first. A body that is no chat completion at all is
recognised by `chat_content`, so the backend can treat it as a server fault.

Limits:
- `MAX_STORED_CHARS` (1,000): an answer or a reason kept in a reject. A valid answer is three sentences of
  at most 200 characters in JSON; what is longer is kept as its first 1,000 characters and a marker
  "… [cut: N chars]" that gives its whole length.
- `EXCERPT_CHARS` (200): what a server sent, quoted in an error message.
- `backends.cache.MAX_CACHED_CHARS` (4,000): longer answers are never cached.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

from hardneg.core.secrets import MIN_SECRET_CHARS, REDACTED, Secrets

MAX_STORED_CHARS = 1_000
EXCERPT_CHARS = 200
__all__ = ["EXCERPT_CHARS", "MAX_STORED_CHARS", "MIN_SECRET_CHARS", "REDACTED", "clean", "contains_secret", "redact"]

# C0/C1 controls except tab and newline, DEL, lone surrogates (unencodable in UTF-8), and the bidi
# controls that reorder how a line displays.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
# Credentials by their shape: an Authorization header's value, and a bearer token (8 or more token
# characters with a digit, so that "the flag bearer on the left" stays as it is).
_CREDENTIALS = (
    re.compile(r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+|basic\s+)?[^\s\"',;]+"),
    re.compile(r"(?i)(\bbearer\s+)(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}"),
)


def has_unsafe_chars(text: str) -> bool:
    """Whether `text` holds a control character (other than tab and newline) or a lone surrogate."""
    return _UNSAFE.search(text) is not None


@functools.lru_cache(maxsize=8)
def _secrets(values: tuple[str | None, ...]) -> Secrets:
    return Secrets(tuple(v for v in values if v))


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with each secret (of at least `MIN_SECRET_CHARS`, in any form `core.secrets` knows: any case,
    JSON-escaped, split, base64) and each Authorization or bearer value replaced by "[redacted]"."""
    text = _secrets(tuple(secrets)).redact(text)
    for pattern in _CREDENTIALS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def clean(text: str, secrets: Iterable[str | None] = (), limit: int = MAX_STORED_CHARS) -> str:
    """`text` fit to store: unsafe characters dropped, secrets redacted, then cut to `limit` characters
    with a marker giving the length before the cut. Redaction comes before the cut, so a secret that straddles
    the cut is never left half visible; dropping controls comes first, so none can split a secret."""
    text = redact(_UNSAFE.sub("", text), secrets)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text):,} chars]"


def contains_secret(text: str, secrets: Iterable[str | None]) -> bool:
    """Whether `text` holds one of `secrets` (of at least `MIN_SECRET_CHARS`) in any form: verbatim, in any
    case, escaped, split or base64 (`core.secrets`), checked on the decoded text too."""
    return _secrets(tuple(secrets)).found(text)


class NotAChatCompletion(ValueError):
    """A successful HTTP answer whose body is no OpenAI chat completion: a server fault, not a model's."""


def chat_content(body: str) -> str:
    """The assistant's text in a chat-completion body, else `NotAChatCompletion` naming what it is instead.

    Parsed here rather than by the `openai` client, which returns a non-JSON body as a plain string
    and lets a truncated one escape as `json.JSONDecodeError`. No choices, or a null content, is an
    empty answer: it then fails the answer rules like any invalid one."""
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise NotAChatCompletion(f"invalid JSON ({e.msg}; char {e.pos})") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise NotAChatCompletion("JSON that is not a chat completion (no 'choices' list)")
    if not choices:
        return ""
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(message, dict) or not isinstance(content, str | None):
        raise NotAChatCompletion("JSON that is not a chat completion (its first choice has no text message)")
    return content or ""
