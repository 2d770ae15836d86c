"""Build the configured backend for each model role (one registry line per implementation)."""

from __future__ import annotations

from pathlib import Path

from hardneg.backends.inpaint import InpaintBackend
from hardneg.backends.language import LanguageBackend
from hardneg.core.config import RunConfig
from hardneg.core.resources import bundled_dir
from hardneg.core.words.vocab import Lexicon


def make_language_backend(cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> LanguageBackend:
    lang = cfg.language
    if lang.backend == "lexicon":
        from hardneg.backends.lexicon import LexiconBackend

        return LexiconBackend(lexicon, seed=cfg.seed)
    if lang.backend == "openai":
        from hardneg.backends.openai_backend import OpenAIBackend, OpenAISettings

        o = lang.openai
        return OpenAIBackend(
            OpenAISettings(
                base_url=o.base_url,
                model=o.model,
                api_key_env=o.api_key_env,
                timeout_s=o.timeout_s,
                max_retries=o.max_retries,
                max_attempts=o.max_attempts,
                concurrency=o.concurrency,
                temperature=o.temperature,
                json_mode=o.json_mode,
                cache_path=cfg.resolve(o.cache) if o.cache is not None else work_dir / "llm_cache.sqlite",
                prompt_dir=bundled_dir("prompts"),
                rewrite_prompt=o.rewrite_prompt,
                replace_prompt=o.replace_prompt,
            )
        )
    raise ValueError(f"unknown language backend {lang.backend!r}")


def make_inpaint_backend(cfg: RunConfig) -> InpaintBackend:
    im = cfg.images
    if im.backend == "opencv":
        from hardneg.backends.inpaint_opencv import OpenCVInpainter

        return OpenCVInpainter(dilate_px=im.opencv_dilate_px)
    if im.backend == "diffusers":
        from hardneg.backends.inpaint_diffusers import DiffusersInpainter

        d = im.diffusers
        return DiffusersInpainter(
            model=d.model,
            mode=d.mode,
            steps=d.steps,
            guidance_scale=d.guidance_scale,
            batch_size=d.batch_size,
            dilate_px=d.dilate_px,
            padding_mask_crop=d.padding_mask_crop,
        )
    raise ValueError(f"unknown inpainting backend {im.backend!r}")
