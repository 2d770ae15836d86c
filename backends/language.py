"""The language-model role: rewrite a referring expression, propose a misleading replacement word.

Two implementations share this contract: `backends.lexicon.LexiconBackend` (offline, deterministic,
the demo's) and `backends.openai_backend.OpenAIBackend` (any OpenAI-compatible server). Generators only
see this protocol, so adding a backend is one file and one registry line (`make_backend`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from hardneg.core.errors import HardnegError

Part = Literal["object", "attribute", "relation"]


@dataclass(frozen=True, slots=True)
class RewriteRequest:
    """Rewrite `expression`; every word of `keep` (object names, attributes, relation words) must survive."""

    key: str  # stable: the sample id
    expression: str
    keep: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReplaceRequest:
    """Propose up to `n` words of the same category as `word` that contradict it in `expression`.

    `category` names the category ("color", "object: vehicle", "relation: horizontal"); `options` are the
    same-category words of the corpus that contradict `word` and fit the context, most plausible first, with
    their `weights` (the lexicon backend draws from them by weight; the LLM sees them as a shortlist).
    """

    key: str
    expression: str
    part: Part
    word: str
    category: str | None
    options: tuple[str, ...]
    n: int = 3
    weights: tuple[float, ...] = ()  # how plausible each option is in context (empty: unweighted)


@dataclass(frozen=True, slots=True)
class Answer:
    """One request's outcome: `values` when valid, else `error` (the reason) and the last `raw` answer.

    For a rewrite, values are (original, rewrite 1, rewrite 2); for a replace, candidate words, best first.
    A backend that talks to a server hands back `raw` and `error` already bounded, cleaned and redacted
    (`backends.untrusted.clean`), so generators may store them in rejects as they are.
    """

    key: str
    values: tuple[str, ...] | None
    error: str | None = None
    raw: str | None = None
    attempts: int = 1
    cached: bool = False


# A semantic check a generator supplies (spaCy lemmas, the executor): None when the values are acceptable,
# else the reason. A backend that can ask again (an LLM) retries on it; the lexicon just reports it.
Validator = Callable[[RewriteRequest | ReplaceRequest, tuple[str, ...]], str | None]


class LanguageBackend(Protocol):
    version: str  # recorded in the manifest and in every sample's provenance

    def rewrite(self, requests: Sequence[RewriteRequest], validate: Validator | None = None) -> list[Answer]: ...

    def replace(self, requests: Sequence[ReplaceRequest], validate: Validator | None = None) -> list[Answer]: ...

    def stats(self) -> dict[str, int]:
        """Counters since creation: at least `calls` (requests sent to a model) and `cache_hits`."""
        ...


class BackendUnavailable(HardnegError):
    """The backend cannot serve at all (server down after retries): the stage fails with this message, and
    a rerun resumes (finished shards and cached answers are kept)."""
