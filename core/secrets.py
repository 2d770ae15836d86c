"""Credentials never reach a file, the terminal or Prefect, in any form a server or a log line may give them.

A credential is the value of an environment variable a run uses for one (the language server's key,
`language.openai.api_key_env`; a Hugging Face or Prefect token). Text can hold one in other forms than
verbatim, and each is looked for on the decoded text:

- any case (`SK-ABC...` for `sk-abc...`);
- escaped as a JSON string escapes it (`\\u0073k-abc...`, `\\/`), which the raw answer of a server holds;
- split by what does not belong to a key (`sk-ab c...`, `"sk-ab" + "c..."`, one character a line): the
  text's letters and digits are compared with the key's;
- base64 (standard or URL-safe, at any alignment inside a longer blob), as an echoed header carries it.

`Secrets.redact(text)` gives the text back unchanged when it holds none of them, the text with verbatim
occurrences (any case) replaced by "[redacted]" when that is all, and a whole-text redaction otherwise
(a form that cannot be cut out cleanly means the text is not kept at all). `scrubbing_logs` installs the
same redaction on every log record the process makes, so a handler (the terminal, Prefect's API handler)
never sees a credential.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[redacted]"
WHOLLY_REDACTED = "[redacted: it held a credential]"
MIN_SECRET_CHARS = 8  # a shorter key would redact ordinary words; such a key guards nothing anyway
TOKEN_ENVS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "PREFECT_API_KEY")  # besides the language server's key

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\(.)")
_NOT_KEYISH = re.compile(r"[^0-9a-z]")


def _unescape(text: str) -> str:
    """A JSON string's escapes decoded where they stand (\\u0041 -> A, \\/ -> /), the rest left as it is."""
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return chr(int(m.group(1), 16))
        c = m.group(2)
        return {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(c, c)

    return _ESCAPE.sub(one, text)


def _base64_cores(secret: bytes) -> set[str]:
    """What base64 of any text holding `secret` holds, at each of the three alignments, in both alphabets:
    the encoding of the secret less the characters its neighbours change."""
    out = set()
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + secret).decode()
        core = enc[4 if k else 0 : -4]
        if len(core) >= MIN_SECRET_CHARS:
            out |= {core, core.replace("+", "-").replace("/", "_")}
    return out


@dataclass(frozen=True)
class Secrets:
    """The credentials a process must never let out, with the forms to look for."""

    values: tuple[str, ...] = ()
    _folded: tuple[str, ...] = field(init=False, repr=False, default=())
    _keyish: tuple[str, ...] = field(init=False, repr=False, default=())
    _b64: tuple[str, ...] = field(init=False, repr=False, default=())
    _verbatim: re.Pattern[str] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        values = tuple(sorted({v for v in self.values if v and len(v) >= MIN_SECRET_CHARS}, key=len, reverse=True))
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "_folded", tuple(v.casefold() for v in values))
        keyish = (_NOT_KEYISH.sub("", v.casefold()) for v in values)
        object.__setattr__(self, "_keyish", tuple(k for k in keyish if len(k) >= MIN_SECRET_CHARS))
        object.__setattr__(self, "_b64", tuple(sorted({c for v in values for c in _base64_cores(v.encode())})))
        if values:
            pattern = re.compile("|".join(re.escape(v) for v in values), re.IGNORECASE)
            object.__setattr__(self, "_verbatim", pattern)

    def __bool__(self) -> bool:
        return bool(self.values)

    def found(self, text: str) -> bool:
        """Whether `text` holds a credential in any of the forms (the module docstring)."""
        if not self.values or not text:
            return False
        decoded = _unescape(text)
        folded = {text.casefold(), decoded.casefold()}
        if any(f in t for f in self._folded for t in folded):
            return True
        if any(b in t for b in self._b64 for t in (text, decoded)):
            return True
        keyish = {_NOT_KEYISH.sub("", t) for t in folded}
        return any(k in t for k in self._keyish for t in keyish)

    def redact(self, text: str) -> str:
        """`text` fit to keep: unchanged without a credential, its verbatim ones (any case) replaced, or all
        of it replaced when a credential stays in another form."""
        if not self.found(text):
            return text
        assert self._verbatim is not None
        cut = self._verbatim.sub(REDACTED, text)
        return cut if not self.found(cut) else WHOLLY_REDACTED

    def redact_value(self, value: Any) -> Any:
        """`redact` through a JSON value's strings (keys too)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.redact_value(v) for v in value)
        return value


def shown_url(url: str) -> str:
    """The URL without user:password@, to print or store (credentials in a URL are credentials too)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        parts = parts._replace(netloc=(parts.hostname or "") + (f":{parts.port}" if parts.port else ""))
    return urlunsplit(parts)


def from_environment(key_envs: Iterable[str] = ()) -> Secrets:
    """The credentials the environment holds: the named variables (a config's `api_key_env`) and the
    tokens hardneg's libraries read (`TOKEN_ENVS`)."""
    names = (*key_envs, *TOKEN_ENVS)
    return Secrets(tuple(v for n in names if n and (v := os.environ.get(n))))


class _ScrubbingFactory:
    """A log record factory that redacts each record's message as it is made, before any handler sees it."""

    def __init__(self, inner: Any, secrets: Secrets) -> None:
        self.inner, self.secrets = inner, secrets

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        if self.secrets:
            try:
                message = record.getMessage()
            except Exception:  # a malformed record: left for the handler to report as logging does
                return record
            if (clean := self.secrets.redact(message)) != message:
                record.msg, record.args = clean, None
        return record


def scrub_logs(secrets: Secrets) -> None:
    """Redact `secrets` from every log record this process makes from now on (idempotent: the newest set
    replaces an older one); `scrubbed` redacts them from other text this process prints."""
    current = logging.getLogRecordFactory()
    inner = current.inner if isinstance(current, _ScrubbingFactory) else current
    logging.setLogRecordFactory(_ScrubbingFactory(inner, secrets))


def scrub_for(key_envs: Iterable[str] = ()) -> None:
    """`scrub_logs` of the credentials the environment holds for these key variables (and the usual tokens)."""
    scrub_logs(from_environment(key_envs))


def scrubbed(text: str) -> str:
    """`text` with the credentials this process scrubs from its logs redacted (a message it prints)."""
    current = logging.getLogRecordFactory()
    return current.secrets.redact(text) if isinstance(current, _ScrubbingFactory) else text


@contextlib.contextmanager
def scrubbing_logs(secrets: Secrets) -> Iterator[None]:
    """`scrub_logs` for a block, the factory before it put back after."""
    before = logging.getLogRecordFactory()
    scrub_logs(secrets)
    try:
        yield
    finally:
        logging.setLogRecordFactory(before)
