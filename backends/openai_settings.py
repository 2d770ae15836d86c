"""`OpenAISettings`: where the OpenAI-compatible language backend's server is and how hard to try.

Plain validated data with no client code, kept apart from `backends/openai_backend.py` (which
re-exports these names) so that module holds only the client: HTTP, retries, cache and thread pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hardneg.core.resources import bundled_dir

JsonMode = Literal["json_object", "json_schema", "none"]


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
    prompt_dir: Path = field(default_factory=lambda: bundled_dir("prompts"))
    rewrite_prompt: str = "rewrite.v1.md"
    replace_prompt: str = "replace.v2.md"
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
