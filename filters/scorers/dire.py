"""DIRE realism scoring of edited images.

DIRE (Wang et al., 2023, "DIRE for Diffusion-Generated Image Detection"): images a diffusion model
generated are reconstructed almost exactly by that model's deterministic DDIM inversion followed by
DDIM sampling, real images are not. The DIffusion Reconstruction Error map |x - x_rec| (scaled to 0-255)
is classified by a ResNet-50 with one logit; sigmoid(logit) = probability of being generated.
FineCops-Ref drops edits scoring above 0.2.

`DIREScorer` follows the released code (guided-diffusion's `compute_dire.py` and DIRE's `demo.py`):
20 DDIM steps over ADM's linear 1000-step schedule, x in [-1, 1], predicted x0 clipped, DIRE map
``uint8(|x - x_rec| * 255 / 2)``, classifier input resized to 256, centre-cropped to 224 and ImageNet
normalised. Two known traps are handled:

- the released detectors learned JPEG-vs-PNG, so the original's and the candidate's crops are encoded
  the same way: both go through one in-memory JPEG round trip at the same quality after cropping;
- a 256 centre crop of the whole image can cut the edit out, so each item is scored on a square crop
  around its edited box (`crop_box`), resized to the diffusion model's resolution.

The diffusion model is a diffusers `UNet2DModel` (the stand-in for ADM's unconditional UNet) and the
classifier a transformers `ResNetForImageClassification` with one label; `convert_dire_checkpoint`
turns DIRE's released torchvision ResNet-50 `.pth` into the latter. docs/realism.md says what to supply
and what the number means without those weights.
"""

from __future__ import annotations

import io
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from hardneg.backends.models import loading, resolve_device_dtype, shared
from hardneg.backends.requirements import Requirement, Weights
from hardneg.core.errors import MissingDependency
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Box, Filter, Item, Scores, Settings
from hardneg.filters.scorers.dinov2 import imagenet_tensor, resize_center_crop
from hardneg.filters.scorers.dire_checkpoint import (
    DIFFUSERS_HINT,
    convert_dire_checkpoint,
    resnet_config_from_torchvision,
    torchvision_resnet_key,
)
from hardneg.filters.scorers.seam import MaxRealism, SeamFilter, keep_realism, realism_over_boxes

# The checkpoint conversion lives in filters/scorers/dire_checkpoint.py; this module stays the public home of its names.
__all__ = [
    "ADM_SCHEDULE",
    "DIFFUSERS_HINT",
    "DIREResult",
    "DIREScorer",
    "DireFilter",
    "DireOptions",
    "convert_dire_checkpoint",
    "crop_box",
    "jpeg_roundtrip",
    "resnet_config_from_torchvision",
    "torchvision_resnet_key",
]

logger = logging.getLogger(__name__)

# ADM's (guided-diffusion) noise schedule for the 256x256 ImageNet and LSUN models DIRE uses.
ADM_SCHEDULE: dict[str, Any] = {
    "num_train_timesteps": 1000,
    "beta_schedule": "linear",
    "beta_start": 0.0001,
    "beta_end": 0.02,
    "prediction_type": "epsilon",
    "clip_sample": True,  # DIRE runs with clip_denoised=True
    "set_alpha_to_one": True,
    "steps_offset": 0,
    "timestep_spacing": "leading",  # 20 steps: t = 0, 50, ..., 950, as guided-diffusion's "ddim20"
}


# --------------------------------------------------------------------------------------------------
# Crops and encoding


def crop_box(box: Box, width: int, height: int, pad: float, min_side: int = 0) -> Box:
    """The square crop (xywh) scored for an edit in `box` of a `width` x `height` image.

    Side = ``ceil(max(w, h) * (1 + 2 * pad))`` (`pad` times the box's longer side on each side), at
    least `min_side` (so a small edit is not blown up: upsampling smooths a real image towards what a
    diffusion model reconstructs well), at most ``min(width, height)``. Centred on the box, then shifted
    (not shrunk) to lie inside the image, so it stays square and keeps the context around the edit.
    A box longer than the image's shorter side is centred and its ends are cut.
    """
    x, y, w, h = box
    if w <= 0 or h <= 0:
        raise ValueError(f"empty box {box}")
    if width <= 0 or height <= 0:
        raise ValueError(f"empty image {width}x{height}")
    if pad < 0:
        raise ValueError(f"crop pad must be >= 0, got {pad}")
    side = max(math.ceil(max(w, h) * (1.0 + 2.0 * pad)), min_side)
    side = min(side, width, height)
    cx, cy = x + w / 2.0, y + h / 2.0
    left = min(max(round(cx - side / 2.0), 0), width - side)
    top = min(max(round(cy - side / 2.0), 0), height - side)
    return (left, top, side, side)


def jpeg_roundtrip(image: Image.Image, quality: int) -> Image.Image:
    """Encode as baseline JPEG (4:2:0 chroma, no optimisation) in memory and decode: one fixed encoding."""
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="JPEG", quality=quality, subsampling=2, optimize=False)
    buf.seek(0)
    with Image.open(buf) as decoded:
        return decoded.convert("RGB")


# --------------------------------------------------------------------------------------------------
# The scorer


@dataclass(frozen=True, slots=True)
class DIREResult:
    p_candidate: float  # probability the candidate's crop is generated (what `score` returns)
    p_original: float  # the same for the original's crop: the detector's false-positive level here
    crop: Box  # xywh, the same in both images


class DIREScorer:
    """DIRE probability that the edit in `box` is generated, a `RealismScorer`.

    For each (original, candidate, box): `prepare` takes the same square crop around the box from both
    images (`crop_box` with `crop_pad`, at least `min_side` px, None = the model resolution), resizes it
    to `resolution` (None = the UNet's `sample_size`) bicubic, and JPEG round-trips both at
    `jpeg_quality` (None skips it; only for inputs already encoded alike). The candidate's crop is
    DDIM-inverted then reconstructed in `steps` steps through the UNet (`reconstruct`); the DIRE map is
    classified; the score is sigmoid(logit). `score_detailed` also scores the original's crop.

    - `unet` (+ `unet_subfolder`): a diffusers `UNet2DModel`, unconditional, predicting epsilon; a
      6-channel output (ADM's learned sigma) is cut to its first 3 channels, the epsilon part.
    - `scheduler` (+ `scheduler_subfolder`): where to read a `scheduler_config.json`; None = ADM's
      linear schedule (`ADM_SCHEDULE`), which DIRE's diffusion models were trained with.
    - `classifier` (+ `classifier_subfolder`): a one-label `ResNetForImageClassification`, e.g. the
      output of `convert_dire_checkpoint`; input resized to `classifier_resize` and centre-cropped to
      `classifier_crop` (DIRE's 256 / 224).

    Models load on first use, once; CUDA fp16 when available, else CPU fp32 (`dtype` overrides); the
    schedule arithmetic stays in fp32. Batches of `batch_size` crops; deterministic (no noise is drawn)
    for a fixed batch size. Kernels round differently per batch shape and the inversion amplifies that
    at high noise levels, so a crop scored in another batch size can differ slightly (on the tests'
    random UNet, by up to 5e-3 in the reconstruction). With random or mismatched weights the number is
    not a probability of anything (docs/realism.md).
    """

    def __init__(
        self,
        unet: str,
        classifier: str,
        steps: int = 20,
        crop_pad: float = 0.5,
        resolution: int | None = None,
        jpeg_quality: int | None = 95,
        batch_size: int = 8,
        device: str | None = None,
        dtype: str | None = None,
        unet_subfolder: str | None = None,
        classifier_subfolder: str | None = None,
        scheduler: str | None = None,
        scheduler_subfolder: str | None = None,
        min_side: int | None = None,
        classifier_resize: int = 256,
        classifier_crop: int = 224,
    ) -> None:
        if not unet or not classifier:
            raise ValueError("DIREScorer needs a unet and a classifier (hub ids or local directories)")
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        if crop_pad < 0:
            raise ValueError(f"crop_pad must be >= 0, got {crop_pad}")
        if resolution is not None and resolution < 8:
            raise ValueError(f"resolution must be >= 8 or None, got {resolution}")
        if jpeg_quality is not None and not 1 <= jpeg_quality <= 100:
            raise ValueError(f"jpeg_quality must be in 1..100 or None, got {jpeg_quality}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not 1 <= classifier_crop <= classifier_resize:
            raise ValueError(
                f"need 1 <= classifier_crop <= classifier_resize, got {classifier_crop}/{classifier_resize}"
            )
        self.unet_id, self.unet_subfolder = unet, unet_subfolder
        self.classifier_id, self.classifier_subfolder = classifier, classifier_subfolder
        self.scheduler_id, self.scheduler_subfolder = scheduler, scheduler_subfolder
        self.steps, self.crop_pad, self.jpeg_quality = steps, crop_pad, jpeg_quality
        self._resolution, self._min_side = resolution, min_side
        self.classifier_resize, self.classifier_crop = classifier_resize, classifier_crop
        self.batch_size, self.device, self.dtype = batch_size, device, dtype
        unet_name = f"{unet}/{unet_subfolder}" if unet_subfolder else unet
        cls_name = f"{classifier}/{classifier_subfolder}" if classifier_subfolder else classifier
        self.version = f"dire:{unet_name}:{cls_name}:steps={steps}:pad={crop_pad}:jpeg={jpeg_quality}@v1"
        self._loaded: dict[str, Any] | None = None

    # ------------------------------------------------------------------------------------- loading

    def _load(self) -> dict[str, Any]:
        if self._loaded is not None:
            return self._loaded
        with loading(f"{self.unet_id} + {self.classifier_id}"):
            try:
                import torch
                from diffusers import DDIMInverseScheduler, DDIMScheduler, UNet2DModel
                from transformers import ResNetForImageClassification
            except ImportError as e:
                raise MissingDependency(f"DIREScorer needs torch, transformers and diffusers: {DIFFUSERS_HINT}") from e
            device, dtype = resolve_device_dtype(torch, self.device, self.dtype)
            unet = UNet2DModel.from_pretrained(self.unet_id, subfolder=self.unet_subfolder, torch_dtype=dtype)
            unet = unet.to(device).eval()
            if getattr(unet.config, "num_class_embeds", None):
                raise ValueError(f"{self.unet_id}: DIRE needs an unconditional UNet, this one is class-conditional")
            if self.scheduler_id is None:
                forward = DDIMScheduler(**ADM_SCHEDULE)
            else:
                forward = DDIMScheduler.from_pretrained(self.scheduler_id, subfolder=self.scheduler_subfolder)
            if forward.config.prediction_type != "epsilon":
                raise ValueError(
                    "DIRE's DDIM inversion expects an epsilon-prediction schedule, "
                    f"got {forward.config.prediction_type!r}"
                )
            if self.steps > forward.config.num_train_timesteps:
                raise ValueError(
                    f"steps ({self.steps}) exceeds the schedule's {forward.config.num_train_timesteps} timesteps"
                )
            inverse = DDIMInverseScheduler.from_config(forward.config)
            forward.set_timesteps(self.steps)
            inverse.set_timesteps(self.steps)
            classifier = ResNetForImageClassification.from_pretrained(
                self.classifier_id, subfolder=self.classifier_subfolder or ""
            )
            if classifier.config.num_labels != 1:
                raise ValueError(
                    f"{self.classifier_id}: DIRE's classifier has one logit, "
                    f"this one has {classifier.config.num_labels}"
                )
            classifier = classifier.to(device=device, dtype=dtype).eval()
            size = self._resolution or unet.config.sample_size
            if isinstance(size, (list, tuple)):
                if len(set(size)) != 1:
                    raise ValueError(f"{self.unet_id}: non-square sample_size {size}; pass resolution=")
                size = size[0]
            logger.info(
                "DIREScorer: loaded %s and %s on %s %s, %d px, %d DDIM steps",
                self.unet_id, self.classifier_id, device, dtype, size, self.steps,
            )  # fmt: skip
        self._loaded = {
            "torch": torch, "unet": unet, "forward": forward, "inverse": inverse,
            "classifier": classifier, "resolution": int(size),
        }  # fmt: skip
        return self._loaded

    @property
    def resolution(self) -> int:
        """The side the crops are resized to (loads the UNet when `resolution` was not given)."""
        return self._resolution if self._resolution is not None else self._load()["resolution"]

    @property
    def min_side(self) -> int:
        return self._min_side if self._min_side is not None else self.resolution

    # ------------------------------------------------------------------------------------ the steps

    def prepare(self, original: Image.Image, candidate: Image.Image, box: Box) -> tuple[Image.Image, Image.Image, Box]:
        """The crops both images are scored on: the same box, the same resize, the same JPEG encoding."""
        if original.size != candidate.size:
            raise ValueError(f"DIREScorer: original is {original.size} but candidate is {candidate.size}")
        crop = crop_box(box, original.width, original.height, self.crop_pad, self.min_side)
        size = self.resolution
        x, y, w, h = crop
        out = []
        for image in (original, candidate):
            patch = image.convert("RGB").crop((x, y, x + w, y + h))
            if patch.size != (size, size):
                patch = patch.resize((size, size), Image.Resampling.BICUBIC)  # DIRE resizes bicubic too
            out.append(jpeg_roundtrip(patch, self.jpeg_quality) if self.jpeg_quality is not None else patch)
        return out[0], out[1], crop

    def _eps(self, x: Any, t: Any) -> Any:
        unet = self._load()["unet"]
        out = unet(x.to(unet.dtype), t).sample.float()
        channels = x.shape[1]
        if out.shape[1] == 2 * channels:  # learned sigma (ADM): [epsilon, variance]; DDIM needs epsilon
            out = out[:, :channels]
        return out

    def reconstruct(self, x: Any) -> Any:
        """Deterministic DDIM inversion of x (N, 3, R, R in [-1, 1]) to noise over `steps` steps, then
        DDIM sampling back (eta = 0), as DIRE's `ddim_reverse_sample_loop` + `ddim_sample_loop`."""
        m = self._load()
        torch = m["torch"]
        x = x.float().to(m["unet"].device)
        with torch.inference_mode():
            for t in m["inverse"].timesteps:
                x = m["inverse"].step(self._eps(x, t), t, x).prev_sample
            for t in m["forward"].timesteps:
                x = m["forward"].step(self._eps(x, t), t, x, eta=0.0).prev_sample
        return x

    def dire_maps(self, crops: Sequence[Image.Image]) -> np.ndarray:
        """uint8 (N, R, R, 3) DIRE maps of prepared crops: ``uint8(clamp(|x - x_rec| * 255 / 2, 0, 255))``."""
        torch = self._load()["torch"]
        arr = np.stack([np.asarray(c, dtype=np.float32) for c in crops]) / 127.5 - 1.0
        x = torch.from_numpy(arr.transpose(0, 3, 1, 2).copy())
        rec = self.reconstruct(x)
        dire = (x.to(rec.device) - rec).abs() * (255.0 / 2.0)
        # truncating cast, as DIRE's `.to(th.uint8)`, before the map is saved as PNG and classified
        return dire.clamp(0, 255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()

    def classify(self, maps: np.ndarray) -> list[float]:
        """sigmoid(logit) of the classifier for each uint8 DIRE map, with DIRE's test transform."""
        m = self._load()
        torch, classifier = m["torch"], m["classifier"]
        images = [
            resize_center_crop(
                Image.fromarray(a), self.classifier_resize, self.classifier_crop, Image.Resampling.BILINEAR
            )
            for a in maps
        ]
        pixels = imagenet_tensor(images, torch).to(classifier.device, classifier.dtype)
        with torch.inference_mode():
            logits = classifier(pixel_values=pixels).logits[:, 0].float()
        return torch.sigmoid(logits).cpu().tolist()

    def _probabilities(self, crops: Sequence[Image.Image]) -> list[float]:
        out: list[float] = []
        for start in range(0, len(crops), self.batch_size):
            out.extend(self.classify(self.dire_maps(crops[start : start + self.batch_size])))
        return out

    def score(self, items: Sequence[tuple[Image.Image, Image.Image, Box]]) -> list[float]:
        if not items:
            return []
        candidates = [self.prepare(o, c, b)[1] for o, c, b in items]
        return self._probabilities(candidates)

    def score_detailed(self, items: Sequence[tuple[Image.Image, Image.Image, Box]]) -> list[DIREResult]:
        """`score` plus the original's crop scored the same way: a high `p_original` means the detector
        calls this real image generated too, so its `p_candidate` says little."""
        if not items:
            return []
        prepared = [self.prepare(o, c, b) for o, c, b in items]
        probs = self._probabilities([p for orig, cand, _ in prepared for p in (orig, cand)])
        return [
            DIREResult(p_candidate=probs[2 * i + 1], p_original=probs[2 * i], crop=crop)
            for i, (_, _, crop) in enumerate(prepared)
        ]


class DireOptions(Settings):
    unet: str  # diffusers UNet2DModel: hub id or local dir (docs/realism.md)
    classifier: str  # transformers ResNet with one logit: hub id or local dir
    steps: int = 20
    device: str | None = None
    dtype: str | None = None


@FILTERS.add("dire", order=50)
class DireFilter(Filter):
    """DIRE-style realism: the probability the edited box is generated, worst box per candidate."""

    version = "dire@v1"
    targets = frozenset({"image_candidate"})
    Options = DireOptions
    Thresholds = MaxRealism
    legend = SeamFilter.legend  # realism, as the seam score

    def requirements(self, role: str) -> list[Requirement]:
        o: DireOptions = self.options  # type: ignore[assignment]
        return [
            Requirement(
                role, ("torch", "transformers", "diffusers"), DIFFUSERS_HINT, (Weights(o.unet), Weights(o.classifier))
            )
        ]

    def _model(self) -> DIREScorer:
        o: DireOptions = self.options  # type: ignore[assignment]
        key = ("dire", o.unet, o.classifier, o.steps, o.device, o.dtype, self.batch_size)
        return shared(
            key,
            lambda: self.configured(
                DIREScorer, unet=o.unet, classifier=o.classifier, steps=o.steps, batch_size=self.batch_size,
                device=o.device, dtype=o.dtype,
            ),
        )  # fmt: skip

    @property
    def identity(self) -> str:
        return f"{self.version} {self._model().version}"

    def score(self, items: Sequence[Item]) -> list[Scores]:
        return realism_over_boxes(items, self._model().score)

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        return keep_realism(scores, thresholds)
