"""Build the configured backend for each model role (one registry line per implementation)."""

from __future__ import annotations

from pathlib import Path

from backends.image_scorers import ImageSimilarity, ImageTextScorer, RealismScorer
from backends.inpaint import InpaintBackend
from backends.language import LanguageBackend
from core.config import REPO_ROOT, RunConfig
from core.vocab import Lexicon


def make_language_backend(cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> LanguageBackend:
    lang = cfg.language
    if lang.backend == "lexicon":
        from backends.lexicon import LexiconBackend

        return LexiconBackend(lexicon, seed=cfg.seed)
    if lang.backend == "openai":
        from backends.openai_backend import OpenAIBackend, OpenAISettings

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
                prompt_dir=REPO_ROOT / "prompts",
                rewrite_prompt=o.rewrite_prompt,
                replace_prompt=o.replace_prompt,
            )
        )
    raise ValueError(f"unknown language backend {lang.backend!r}")


def make_inpaint_backend(cfg: RunConfig) -> InpaintBackend:
    im = cfg.images
    if im.backend == "opencv":
        from backends.inpaint_opencv import OpenCVInpainter

        return OpenCVInpainter(dilate_px=im.opencv_dilate_px)
    if im.backend == "diffusers":
        from backends.inpaint_diffusers import DiffusersInpainter

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


def make_filter_scorers(cfg: RunConfig) -> tuple[ImageTextScorer | None, ImageSimilarity, RealismScorer]:
    """(CLIP or None when not configured, best-of-N similarity, realism) for the filters stage."""
    f = cfg.filters
    clip = None
    if f.clip_model is not None:
        from backends.clip_scorer import CLIPScorer

        clip = CLIPScorer(model=f.clip_model, batch_size=f.batch_size)
    if f.similarity == "dinov2":
        from backends.dino import DinoSimilarity

        dn = f.dinov2
        hub = dn.loader == "torch.hub"
        similarity: ImageSimilarity = DinoSimilarity(
            model=dn.model_name if hub else dn.model,
            loader=dn.loader,
            repo_or_dir=dn.repo_or_dir,
            source=dn.source,
            batch_size=f.batch_size,
        )
    else:
        from backends.offline_scorers import SSIMSimilarity

        similarity = SSIMSimilarity()
    if f.realism == "dire":
        from backends.realism import DIREScorer

        if f.dire.unet is None or f.dire.classifier is None:
            raise ValueError(
                "filters.realism: dire needs filters.dire.unet and filters.dire.classifier (docs/realism.md)"
            )
        realism: RealismScorer = DIREScorer(
            unet=f.dire.unet, classifier=f.dire.classifier, steps=f.dire.steps, batch_size=f.batch_size
        )
    else:
        from backends.offline_scorers import SeamScore

        realism = SeamScore()
    return clip, similarity, realism
