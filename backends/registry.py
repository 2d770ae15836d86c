"""Build the configured backend for each model role: the class registered under the config's name
(`@LANGUAGE_BACKENDS.add("lexicon")`, `@INPAINT_BACKENDS.add("opencv")`) builds itself from the config, so
a new backend is one file in `backends/` (docs/extending.md)."""

from __future__ import annotations

from pathlib import Path

from hardneg.backends.inpaint import InpaintBackend
from hardneg.backends.language import LanguageBackend
from hardneg.core.config import RunConfig
from hardneg.core.plugins import INPAINT_BACKENDS, LANGUAGE_BACKENDS
from hardneg.core.words.vocab import Lexicon


def make_language_backend(cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> LanguageBackend:
    return LANGUAGE_BACKENDS.get(cfg.language.backend, "language.backend").from_config(cfg, work_dir, lexicon)


def make_inpaint_backend(cfg: RunConfig) -> InpaintBackend:
    return INPAINT_BACKENDS.get(cfg.images.backend, "images.backend").from_config(cfg)
