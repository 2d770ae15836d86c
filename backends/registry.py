"""Build the configured backend for each model role (one registry line per implementation)."""

from __future__ import annotations

from pathlib import Path

from hardneg.backends.inpaint import InpaintBackend
from hardneg.backends.language import LanguageBackend
from hardneg.core.config import RunConfig
from hardneg.core.words.vocab import Lexicon


def make_language_backend(cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> LanguageBackend:
    lang = cfg.language
    if lang.backend == "lexicon":
        from hardneg.backends.lexicon import LexiconBackend

        return LexiconBackend(lexicon, seed=cfg.seed)
    if lang.backend == "openai":
        from hardneg.backends.openai_backend import OpenAIBackend, OpenAISettings

        o = lang.openai
        cache = cfg.resolve(o.cache) if o.cache is not None else work_dir / "llm_cache.sqlite"
        return OpenAIBackend(OpenAISettings.from_config(o, cache))
    raise ValueError(f"unknown language backend {lang.backend!r}")


def make_inpaint_backend(cfg: RunConfig) -> InpaintBackend:
    im = cfg.images
    if im.backend == "opencv":
        from hardneg.backends.inpaint_opencv import OpenCVInpainter

        return OpenCVInpainter(dilate_px=im.opencv_dilate_px)
    if im.backend == "diffusers":
        from hardneg.backends.inpaint_diffusers import DiffusersInpainter, DiffusersSettings

        return DiffusersInpainter(DiffusersSettings.from_config(im.diffusers))
    raise ValueError(f"unknown inpainting backend {im.backend!r}")
