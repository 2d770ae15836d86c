"""`OpenAISettings`: where the OpenAI-compatible language backend's server is and how hard to try.

The config's `language.openai` section (`core.config.OpenAIConfig`) is the one statement of the keys a
user sets, their defaults and their checks; the settings are that section plus the client's own tuning,
which no config exposes. Plain validated data with no client code, kept apart from
`backends/openai_backend.py` (which re-exports these names) so that module holds only the client: HTTP,
retries, cache and thread pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from hardneg.core.config import JsonMode, OpenAIConfig
from hardneg.core.resources import bundled_dir

__all__ = ["JsonMode", "OpenAISettings"]


class OpenAISettings(OpenAIConfig):
    """How to reach the server and how hard to try. Nothing here is secret: the key stays in the environment.

    Every `OpenAIConfig` key, with one change of meaning: `cache` is the SQLite file itself and None means
    no cache (`from_config` puts the run's default file in place of the config's None)."""

    temperature_step: float = 0.15  # attempt k sends temperature + (k - 1) x step
    seed: int = 0  # attempt k sends seed + k - 1; also seeds the backoff jitter
    max_tokens: int = 256
    prompt_dir: Path = Field(default_factory=lambda: bundled_dir("prompts"))
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    retry_after_cap_s: float = 30.0  # a server asking for longer is not waited on longer

    @classmethod
    def from_config(cls, cfg: OpenAIConfig, cache: Path | None, **client: Any) -> OpenAISettings:
        """The settings of a config section, with the cache file the run uses and any client tuning."""
        return cls(**{**cfg.model_dump(), "cache": cache, **client})
