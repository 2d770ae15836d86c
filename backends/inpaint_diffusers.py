"""`DiffusersInpainter`: Stable Diffusion inpainting through diffusers, with a PowerPaint v1 prompt mode.

Implements the inpainting role (`backends.inpaint`) for FineCops-Ref negative images:

- Each region's box, dilated by `dilate_px`, is the mask (white = repaint). With `padding_mask_crop` set,
  the model sees a crop around the box padded by that many pixels and grown to the model's aspect ratio,
  resized to the model resolution: small GQA boxes get the model's full resolution. This is the
  semantics of diffusers' own `padding_mask_crop`, done here because diffusers' version takes a single
  PIL image per call, and candidates of a second region (a swap) start from different images.
- Only the dilated box is taken from the model's output; everything else is the source bit for bit, so
  later similarity and realism scores are not distorted by the VAE round trip.
- Candidates are batched (`batch_size` per pipeline call, across jobs when their crops share a size), and
  candidate k of a job draws its noise from its own generator seeded by (job.seed, job.key, k, region), so
  a job's candidates are the same whatever else is in the batch (up to floating-point batching noise).
  Generators live on the CPU: the starting noise is the same on a GPU and on a CPU machine.
- Regions apply in order: candidate k of region 2 starts from candidate k of region 1.

PowerPaint (`mode="powerpaint"`). PowerPaint v1 ("A Task is Worth One Word", Zhuang et al., ECCV 2024) is
SD-1.5 inpainting fine-tuned with learned task words in the text encoder: `P_obj` (text-guided object
inpainting), `P_ctxt` (context / object removal), `P_shape` (shape-guided). Each word is 10 learned
vectors, added to the tokenizer as `P_obj_0 ... P_obj_9` (then `P_ctxt_*`, `P_shape_*`) after the base
vocabulary. Its pipeline blends the embeddings of two prompts (promptA, promptB) by a "fitting degree";
for text-guided inpainting and removal both prompts are equal, so the blend is the identity and a
standard diffusers inpainting pipeline computes the same thing. What this mode does:
- loads a diffusers inpainting pipeline from `model`, which must be PowerPaint v1's UNet and text encoder
  saved in diffusers layout with a tokenizer holding the task tokens (convert it yourself; there is no
  official diffusers PowerPaint pipeline and nothing is downloaded here);
- builds prompts as PowerPaint's app does: object "P_obj {prompt}" with negative "{negative}, worst
  quality, low quality, normal quality, bad quality, blurry"; removal "P_ctxt empty scene blur {prompt}"
  with negative "P_obj {negative}";
- if the tokenizer lacks the task tokens, adds them and resizes the text encoder's embeddings, logging a
  warning: real PowerPaint weights ship trained embeddings for them; freshly added ones are random and
  mean nothing (this is how the tests exercise the mode with tiny random models).
What it does not do: shape-guided inpainting (`P_shape` blended with `P_ctxt`), outpainting, the
BrushNet-based PowerPaint v2, or any conversion of the released checkpoints.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import Field

from hardneg.backends.inpaint import EditRegion, InpaintJob, Rect
from hardneg.backends.models import loading
from hardneg.backends.requirements import Requirement, Weights
from hardneg.core.config import DiffusersConfig, RunConfig
from hardneg.core.errors import MissingDependency
from hardneg.core.plugins import INPAINT_BACKENDS

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'torch==2.13.0' 'diffusers>=0.42,<0.43' 'transformers>=5,<6' 'accelerate>=1.0'"

POWERPAINT_TASK_WORDS = ("P_obj", "P_ctxt", "P_shape")  # PowerPaint's order: their token ids follow it
CHUNK_BATCHES = 8  # pipeline batches' worth of candidates edited at once (bounds working memory)
POWERPAINT_QUALITY_NEGATIVE = "worst quality, low quality, normal quality, bad quality, blurry"


@dataclass(slots=True)
class _Item:
    """One candidate's edit of one region: what goes into one row of a pipeline batch."""

    job: int  # index into the jobs of this run
    key: str
    k: int
    box: Rect  # the dilated box: mask and paste-back region, image pixels
    crop: Rect  # what the model sees, image pixels
    size: tuple[int, int]  # model input (width, height)
    prompt: str
    negative: str
    seed: int


def _candidate_seed(seed: int, key: str, k: int, region: int) -> int:
    """A 63-bit seed from (job seed, job key, candidate, region): stable across runs and batch layouts."""
    digest = hashlib.blake2b(f"{seed}\x1f{key}\x1f{k}\x1f{region}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def _dilated_box(box: tuple[int, int, int, int], px: int, width: int, height: int) -> Rect:
    x, y, w, h = (int(v) for v in box)
    inner = Rect(max(0, x), max(0, y), min(width, x + w), min(height, y + h))  # GQA boxes may spill out
    if inner.w < 1 or inner.h < 1:
        raise ValueError(f"edit box {box} is empty inside the {width}x{height} image")
    return Rect(max(0, inner.x0 - px), max(0, inner.y0 - px), min(width, inner.x1 + px), min(height, inner.y1 + px))


def _crop_around(box: Rect, pad: int, aspect: float, width: int, height: int) -> Rect:
    """`box` padded by `pad`, grown to `aspect` (w / h) where the image allows, kept inside the image
    (diffusers' `VaeImageProcessor.get_crop_region` rule)."""
    x0, y0, x1, y1 = max(0, box.x0 - pad), max(0, box.y0 - pad), min(width, box.x1 + pad), min(height, box.y1 + pad)

    def grow(lo: int, hi: int, want: int, limit: int) -> tuple[int, int]:
        want = min(want, limit)
        extra = want - (hi - lo)
        lo, hi = lo - extra // 2, hi + extra - extra // 2
        if lo < 0:
            hi, lo = hi - lo, 0
        if hi > limit:
            lo, hi = lo - (hi - limit), limit
        return max(0, lo), hi

    if (x1 - x0) / (y1 - y0) > aspect:
        y0, y1 = grow(y0, y1, round((x1 - x0) / aspect), height)
    else:
        x0, x1 = grow(x0, x1, round((y1 - y0) * aspect), width)
    return Rect(x0, y0, x1, y1)


class DiffusersSettings(DiffusersConfig):
    """What `DiffusersInpainter` runs with: the config's `images.diffusers` section (`core.config.
    DiffusersConfig`, the one statement of those keys, their defaults and checks) plus what no config sets."""

    strength: float = Field(1.0, gt=0.0, le=1.0)  # 1.0 starts from pure noise in the mask; lower keeps more
    resolution: int | None = Field(None, ge=8, multiple_of=8)  # model input side in px; None: the pipeline's
    device: str | None = None  # "cuda", "cpu", ...; None = CUDA when available
    dtype: Literal["float16", "float32"] | None = None  # None = float16 on CUDA, float32 elsewhere
    negative_prompt: str = ""  # added to every call (PowerPaint mode wraps it as PowerPaint does)
    powerpaint_vectors: int = Field(10, ge=1)  # learned vectors per PowerPaint task word (10 in v1)

    @classmethod
    def from_config(cls, cfg: DiffusersConfig, **options: Any) -> DiffusersSettings:
        """The settings of a config section, with any of the backend's own options."""
        return cls(**{**cfg.model_dump(), **options})


@INPAINT_BACKENDS.add("diffusers", order=20)
class DiffusersInpainter:
    """Stable Diffusion inpainting candidates for FineCops-Ref negative images, with a
    PowerPaint v1 prompt mode (see the module docstring for what is and is not PowerPaint here)."""

    copies_donors = False  # paints the prompt; a donor crop is not used
    generative = True  # makes FineCops-Ref's five kinds by default

    @classmethod
    def from_config(cls, cfg: RunConfig) -> DiffusersInpainter:
        return cls(DiffusersSettings.from_config(cfg.images.diffusers))

    @classmethod
    def requirements(cls, cfg: RunConfig) -> list[Requirement]:
        """The model libraries and the pipeline's weights, there before the first stage (`flows/preflight.py`)."""
        weights = (Weights(cfg.images.diffusers.model, "model_index.json"),)
        return [Requirement("images.backend diffusers", ("torch", "diffusers", "transformers"), INSTALL_HINT, weights)]

    def __init__(self, settings: DiffusersSettings) -> None:
        missing = [m for m in ("torch", "diffusers", "transformers") if importlib.util.find_spec(m) is None]
        if missing:
            raise MissingDependency(f"DiffusersInpainter needs {', '.join(missing)}: {INSTALL_HINT}")
        self.settings = settings
        model = settings.model
        name = Path(model).name if Path(model).exists() else model  # a local folder is named by its leaf
        self.version = f"diffusers-inpaint:{name}{'+powerpaint' if settings.mode == 'powerpaint' else ''}@v1"
        self._pipe: Any = None

    def supports(self, region: EditRegion) -> bool:
        return region.op in ("recolor", "replace", "remove")

    def refusal(self, image: Image.Image, region: EditRegion, seed: int = 0) -> str | None:
        """Nothing is known before painting: the filters judge the result."""
        return None

    # -- model -----------------------------------------------------------------------------------------

    def _load(self) -> Any:
        """The pipeline, loaded on first use and kept."""
        if self._pipe is not None:
            return self._pipe
        with loading(self.settings.model):
            try:
                import torch
                from diffusers import AutoPipelineForInpainting
            except ImportError as e:
                raise MissingDependency(f"DiffusersInpainter needs torch and diffusers: {INSTALL_HINT}") from e
            device = self.settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype_name = self.settings.dtype or ("float16" if device.startswith("cuda") else "float32")
            t0 = time.perf_counter()
            pipe = AutoPipelineForInpainting.from_pretrained(self.settings.model, dtype=getattr(torch, dtype_name))
            pipe = pipe.to(device)
            pipe.set_progress_bar_config(disable=True)
            if self.settings.mode == "powerpaint":
                self._ensure_task_tokens(pipe)
            logger.info(
                "loaded %s on %s (%s) in %.1fs", self.settings.model, device, dtype_name, time.perf_counter() - t0
            )
        self._pipe = pipe
        return pipe

    def _task_tokens(self, word: str) -> list[str]:
        n = self.settings.powerpaint_vectors
        return [word] if n == 1 else [f"{word}_{i}" for i in range(n)]

    def _ensure_task_tokens(self, pipe: Any) -> None:
        tokenizer, encoder = pipe.tokenizer, pipe.text_encoder
        vocab = tokenizer.get_vocab()
        wanted = [t for w in POWERPAINT_TASK_WORDS for t in self._task_tokens(w)]
        missing = [t for t in wanted if t not in vocab]
        if missing and len(missing) < len(wanted):
            raise ValueError(
                f"{self.settings.model}: tokenizer has only some PowerPaint task tokens (missing {missing[:3]}...)"
            )
        if missing:
            tokenizer.add_tokens(missing)
            encoder.resize_token_embeddings(len(tokenizer))
            logger.warning(
                "%s: tokenizer had no PowerPaint task tokens; added %d with RANDOM embeddings. Real PowerPaint "
                "weights ship trained embeddings for them; these mean nothing.",
                self.settings.model,
                len(missing),
            )
        n_embed = encoder.get_input_embeddings().weight.shape[0]
        top = max(tokenizer.convert_tokens_to_ids(wanted))
        if top >= n_embed:
            raise ValueError(
                f"{self.settings.model}: task token id {top} is past the text encoder's {n_embed} embeddings"
            )

    # -- prompts ---------------------------------------------------------------------------------------

    def _prompts(self, region: EditRegion) -> tuple[str, str]:
        """(prompt, negative prompt) for one region."""
        text = region.prompt.strip()
        if region.op == "recolor" and not text:
            if not region.color:
                raise ValueError(f"recolor region {region.box} has neither a prompt nor a color")
            text = f"a {region.color} object"
        if region.op == "replace" and not text:
            raise ValueError(f"replace region {region.box} has no prompt")
        neg = self.settings.negative_prompt.strip()
        if self.settings.mode == "sd":
            return (text or "background") if region.op == "remove" else text, neg
        obj, ctxt = (" ".join(self._task_tokens(w)) for w in POWERPAINT_TASK_WORDS[:2])
        if region.op == "remove":  # PowerPaint v1's object-removal prompts
            return f"{ctxt} empty scene blur {text}".strip(), f"{obj} {neg}".strip()
        return f"{obj} {text}", f"{neg}, {POWERPAINT_QUALITY_NEGATIVE}" if neg else POWERPAINT_QUALITY_NEGATIVE

    # -- run -------------------------------------------------------------------------------------------

    def _model_size(self, pipe: Any, width: int, height: int) -> tuple[int, int]:
        """(width, height) of the model input for a crop (square) or the whole image (aspect kept)."""
        side = self.settings.resolution or int(pipe.unet.config.sample_size * pipe.vae_scale_factor)
        if self.settings.padding_mask_crop is not None:
            return side, side
        scale = side / max(width, height)
        return max(8, round(width * scale / 8) * 8), max(8, round(height * scale / 8) * 8)

    def run(self, jobs: Sequence[InpaintJob]) -> list[list[Image.Image]]:
        for job in jobs:  # every input error before the model loads
            if job.n < 0:
                raise ValueError(f"job {job.key}: n must be >= 0, got {job.n}")
            if not job.regions:
                raise ValueError(f"job {job.key}: no regions to edit")
            for region in job.regions:
                self._prompts(region)
        if not any(job.n for job in jobs):
            return [[] for _ in jobs]
        pipe = self._load()
        t0 = time.perf_counter()
        out: list[list[Image.Image]] = []
        chunk: list[InpaintJob] = []
        for job in jobs:  # bounded working memory; candidates do not depend on the chunking
            chunk.append(job)
            if sum(j.n for j in chunk) >= self.settings.batch_size * CHUNK_BATCHES:
                out += self._run_chunk(pipe, chunk)
                chunk = []
        if chunk:
            out += self._run_chunk(pipe, chunk)
        n = sum(len(c) for c in out)
        logger.info("%s: %d candidates in %.1fs", self.version, n, time.perf_counter() - t0)
        return out

    def _run_chunk(self, pipe: Any, jobs: list[InpaintJob]) -> list[list[Image.Image]]:
        sources = [np.asarray(job.image.convert("RGB")) for job in jobs]
        current = [[src.copy() for _ in range(job.n)] for src, job in zip(sources, jobs, strict=True)]
        boxes = [
            [_dilated_box(r.box, self.settings.dilate_px, src.shape[1], src.shape[0]) for r in job.regions]
            for src, job in zip(sources, jobs, strict=True)
        ]
        for r in range(max(len(job.regions) for job in jobs)):  # region r of every job, then region r + 1
            items = []
            for j, job in enumerate(jobs):
                if r >= len(job.regions):
                    continue
                height, width = sources[j].shape[:2]
                box = boxes[j][r]
                size = self._model_size(pipe, width, height)
                if self.settings.padding_mask_crop is None:
                    crop = Rect(0, 0, width, height)
                else:
                    crop = _crop_around(box, self.settings.padding_mask_crop, size[0] / size[1], width, height)
                prompt, negative = self._prompts(job.regions[r])
                for k in range(job.n):
                    seed = _candidate_seed(job.seed, job.key, k, r)
                    items.append(_Item(j, job.key, k, box, crop, size, prompt, negative, seed))
            self._inpaint(pipe, items, current)
        out = []
        for src, cands, job_boxes in zip(sources, current, boxes, strict=True):
            keep = np.zeros(src.shape[:2], bool)  # the union of dilated boxes: all a candidate may change
            for b in job_boxes:
                keep[b.y0 : b.y1, b.x0 : b.x1] = True
            job_out = []
            for cand in cands:
                img = src.copy()
                img[keep] = cand[keep]
                job_out.append(Image.fromarray(img, "RGB"))
            out.append(job_out)
        return out

    def _inpaint(self, pipe: Any, items: list[_Item], current: list[list[np.ndarray]]) -> None:
        """Run `items` through the pipeline in batches of equal model size; paste results into `current`."""
        import torch

        by_size: dict[tuple[int, int], list[_Item]] = defaultdict(list)
        for item in items:
            by_size[item.size].append(item)
        for size, group in by_size.items():
            for start in range(0, len(group), self.settings.batch_size):
                batch = group[start : start + self.settings.batch_size]
                images, masks = [], []
                for it in batch:
                    c = it.crop
                    crop = current[it.job][it.k][c.y0 : c.y1, c.x0 : c.x1]
                    images.append(Image.fromarray(crop).resize(size, Image.Resampling.LANCZOS))
                    mask = np.zeros((c.h, c.w), np.uint8)
                    mask[it.box.y0 - c.y0 : it.box.y1 - c.y0, it.box.x0 - c.x0 : it.box.x1 - c.x0] = 255
                    masks.append(Image.fromarray(mask).resize(size, Image.Resampling.NEAREST))
                result = pipe(
                    prompt=[it.prompt for it in batch],
                    negative_prompt=[it.negative for it in batch],
                    image=images,
                    mask_image=masks,
                    height=size[1],
                    width=size[0],
                    num_inference_steps=self.settings.steps,
                    guidance_scale=self.settings.guidance_scale,
                    strength=self.settings.strength,
                    generator=[torch.Generator("cpu").manual_seed(it.seed) for it in batch],
                )
                flagged = result.nsfw_content_detected or [False] * len(batch)
                for it, img, bad in zip(batch, result.images, flagged, strict=True):
                    if bad:
                        logger.warning("%s candidate %d: flagged by the safety checker (blanked)", it.key, it.k)
                    c, b = it.crop, it.box
                    back = np.asarray(img.convert("RGB").resize((c.w, c.h), Image.Resampling.LANCZOS))
                    current[it.job][it.k][b.y0 : b.y1, b.x0 : b.x1] = back[
                        b.y0 - c.y0 : b.y1 - c.y0, b.x0 - c.x0 : b.x1 - c.x0
                    ]
