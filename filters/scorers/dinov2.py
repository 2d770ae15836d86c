"""DINOv2 image-image similarity: FineCops-Ref's best-of-N choice among candidate edits.

DINOv2 (Oquab et al., 2023, "DINOv2: Learning Robust Visual Features without Supervision") gives
self-supervised image embeddings in which near-identical pictures lie close. FineCops-Ref generates 10
candidates per negative image and keeps, among those that pass the CLIP and realism filters, the one
whose DINOv2 embedding is most similar (cosine) to the original's: the edit that changed the least
besides the intended change. `DinoSimilarity` computes that cosine; `Dinov2Filter` ranks candidates by it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from PIL import Image

from hardneg.backends.models import MODELS_HINT, loading, resolve_device_dtype, shared, transformers_model
from hardneg.backends.requirements import Requirement, Weights
from hardneg.core.errors import MissingDependency
from hardneg.core.plugins import FILTERS
from hardneg.filters.base import Filter, Item, ScoreLine, Scores, Settings

logger = logging.getLogger(__name__)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

Loader = Literal["torch.hub", "transformers"]


def resize_center_crop(
    image: Image.Image, resize: int, crop: int, resample: Image.Resampling = Image.Resampling.BICUBIC
) -> Image.Image:
    """torchvision's ``Resize(resize)`` (shorter side to `resize`, aspect kept) then ``CenterCrop(crop)``,
    in PIL: the standard ImageNet evaluation transform without torchvision (not installable next to the
    pinned torch, ENVIRONMENT.md)."""
    if crop > resize:
        raise ValueError(f"crop ({crop}) must not exceed resize ({resize})")
    image = image if image.mode == "RGB" else image.convert("RGB")
    w, h = image.size
    # shorter side to `resize`; torchvision truncates the longer side's new length
    size = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
    if size != image.size:
        image = image.resize(size, resample)
    w, h = image.size
    left, top = round((w - crop) / 2.0), round((h - crop) / 2.0)
    return image.crop((left, top, left + crop, top + crop))


def imagenet_tensor(images: Sequence[Image.Image], torch: Any) -> Any:
    """RGB PIL images of one size -> a float32 (N, 3, H, W) tensor, ImageNet mean/std normalised."""
    arr = np.stack([np.asarray(im, dtype=np.float32) / 255.0 for im in images])
    arr = (arr - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(0, 3, 1, 2)))


class DinoSimilarity:
    """Cosine similarity of DINOv2 CLS embeddings of (original, candidate), an `ImageSimilarity`.

    Two ways to load the model (on first use, once):

    - ``loader="torch.hub"`` (the official release): ``torch.hub.load(repo_or_dir, model, source=source)``
      with `repo_or_dir` "facebookresearch/dinov2" and `model` "dinov2_vitl14" by default; `source`
      "github" downloads the repo (and weights) into the torch hub cache (`trust_repo` is passed to
      torch.hub), "local" reads a directory with a ``hubconf.py`` (for example a clone with its weights
      already cached). `hub_kwargs` go to the entry point. The model's ``forward(x)`` must return the
      CLS embedding, as the official ones do. Images get DINOv2's evaluation transform: shorter side
      to `resize_size` (256) bicubic, centre crop `crop_size` (224), ImageNet mean/std.
    - ``loader="transformers"``: `Dinov2Model` + `AutoImageProcessor` from a hub id (default
      "facebook/dinov2-large", the same ViT-L/14) or a local directory; the embedding is
      ``pooler_output``, the layer-normed CLS token.

    CUDA in fp16 when available, else CPU fp32 (`dtype` overrides); batches of `batch_size` under
    `torch.inference_mode()`; each distinct image (by identity within one call) is embedded once, so
    an original shared by its 10 candidates is encoded once. Similarity in [-1, 1], higher = more alike.
    """

    def __init__(
        self,
        model: str | None = None,
        loader: Loader = "torch.hub",
        repo_or_dir: str = "facebookresearch/dinov2",
        source: Literal["github", "local"] = "github",
        hub_kwargs: Mapping[str, Any] | None = None,
        trust_repo: bool | None = None,
        resize_size: int = 256,
        crop_size: int = 224,
        batch_size: int = 32,
        device: str | None = None,
        dtype: str | None = None,
    ) -> None:
        if loader not in ("torch.hub", "transformers"):
            raise ValueError(f"loader must be 'torch.hub' or 'transformers', got {loader!r}")
        if source not in ("github", "local"):
            raise ValueError(f"source must be 'github' or 'local', got {source!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if crop_size < 1 or resize_size < crop_size:
            raise ValueError(f"need 1 <= crop_size <= resize_size, got crop {crop_size}, resize {resize_size}")
        self.loader = loader
        self.model_name = model or ("dinov2_vitl14" if loader == "torch.hub" else "facebook/dinov2-large")
        self.repo_or_dir, self.source, self.hub_kwargs = repo_or_dir, source, dict(hub_kwargs or {})
        self.trust_repo = trust_repo  # torch.hub's: None warns about an untrusted GitHub repo, True trusts it
        self.resize_size, self.crop_size = resize_size, crop_size
        self.batch_size, self.device, self.dtype = batch_size, device, dtype
        if loader == "torch.hub":
            self.version = f"dinov2:hub:{repo_or_dir}:{self.model_name}:{resize_size}/{crop_size}@v1"
        else:
            self.version = f"dinov2:{self.model_name}@v1"
        self._loaded: tuple[Any, Any, Any] | None = None  # (torch, model, image processor or None)

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is not None:
            return self._loaded
        with loading(self.model_name):
            try:
                import torch
            except ImportError as e:
                raise MissingDependency(f"DinoSimilarity needs torch: {MODELS_HINT}") from e
            device, dtype = resolve_device_dtype(torch, self.device, self.dtype)
            processor = None
            if self.loader == "torch.hub":
                model = torch.hub.load(
                    self.repo_or_dir, self.model_name, source=self.source, trust_repo=self.trust_repo, **self.hub_kwargs
                )
            else:
                try:
                    from transformers import AutoImageProcessor, Dinov2Model
                except ImportError as e:
                    raise MissingDependency(
                        f"DinoSimilarity(loader='transformers') needs transformers: {MODELS_HINT}"
                    ) from e
                processor = AutoImageProcessor.from_pretrained(self.model_name)
                model = Dinov2Model.from_pretrained(self.model_name)
            model = model.to(device=device, dtype=dtype).eval()
            logger.info("DinoSimilarity: loaded %s (%s) on %s %s", self.model_name, self.loader, device, dtype)
        self._loaded = (torch, model, processor)
        return self._loaded

    def _pixels(self, images: Sequence[Image.Image]) -> Any:
        torch, _, processor = self._load()
        if processor is not None:
            batch = [im if im.mode == "RGB" else im.convert("RGB") for im in images]
            return processor(images=batch, return_tensors="pt")["pixel_values"]
        crops = [resize_center_crop(im, self.resize_size, self.crop_size) for im in images]
        return imagenet_tensor(crops, torch)

    def _embed(self, images: Sequence[Image.Image]) -> Any:
        torch, model, processor = self._load()
        param = next(model.parameters())
        chunks = []
        for start in range(0, len(images), self.batch_size):
            pixels = self._pixels(images[start : start + self.batch_size]).to(param.device, param.dtype)
            if processor is not None:
                emb = model(pixel_values=pixels).pooler_output
            else:
                emb = model(pixels)
                if isinstance(emb, Mapping):  # a hub entry point returning a dict of features
                    emb = emb["x_norm_clstoken"]
                if emb.ndim == 3:  # tokens: the CLS token comes first
                    emb = emb[:, 0]
            chunks.append(emb.float())
        return torch.nn.functional.normalize(torch.cat(chunks), dim=-1)

    def similarity(self, pairs: Sequence[tuple[Image.Image, Image.Image]]) -> list[float]:
        if not pairs:
            return []
        torch = self._load()[0]
        index: dict[int, int] = {}  # id(image) -> row; the pairs keep every image alive for the call
        images: list[Image.Image] = []
        for pair in pairs:
            for image in pair:
                if id(image) not in index:
                    index[id(image)] = len(images)
                    images.append(image)
        with torch.inference_mode():
            emb = self._embed(images)
            a = torch.tensor([index[id(o)] for o, _ in pairs], device=emb.device)
            b = torch.tensor([index[id(c)] for _, c in pairs], device=emb.device)
            sims = (emb[a] * emb[b]).sum(-1).clamp(-1.0, 1.0)
        return sims.cpu().tolist()


class Dinov2Options(Settings):
    loader: Loader = "torch.hub"
    repo_or_dir: str = "facebookresearch/dinov2"  # torch.hub repo, or a local hub dir with hubconf.py
    model_name: str = "dinov2_vitl14"
    source: Literal["github", "local"] = "github"
    model: str | None = None  # transformers loader: hub id or local dir
    device: str | None = None
    dtype: str | None = None


@FILTERS.add("dinov2", order=30)
class Dinov2Filter(Filter):
    """Best-of-N by DINOv2 cosine similarity to the source; it never drops by itself."""

    version = "dinov2@v1"
    targets = frozenset({"image_candidate"})
    rank = "similarity"
    legend = (
        ScoreLine(
            "similarity",
            "cosine similarity of the DINOv2 features of the edited image and its source (1 = alike); best-of-N "
            "keeps the most similar candidate that passes",
        ),
    )
    Options = Dinov2Options

    def requirements(self, role: str) -> list[Requirement]:
        o: Dinov2Options = self.options  # type: ignore[assignment]
        if o.loader != "torch.hub":
            return [transformers_model(role, o.model or "")]
        hub = Weights(o.repo_or_dir, "hubconf.py", "torch.hub" if o.source == "github" else "huggingface")
        return [Requirement(role, ("torch",), MODELS_HINT, (hub,))]

    def _model(self) -> DinoSimilarity:
        o: Dinov2Options = self.options  # type: ignore[assignment]
        hub = o.loader == "torch.hub"
        model = o.model_name if hub else o.model
        key = ("dinov2", o.loader, o.repo_or_dir, o.source, model, o.device, o.dtype, self.batch_size)
        return shared(
            key,
            lambda: self.configured(
                DinoSimilarity, model=model, loader=o.loader, repo_or_dir=o.repo_or_dir, source=o.source,
                batch_size=self.batch_size, device=o.device, dtype=o.dtype,
            ),
        )  # fmt: skip

    @property
    def identity(self) -> str:
        return f"{self.version} {self._model().version}"

    def score(self, items: Sequence[Item]) -> list[Scores]:
        sims = self._model().similarity([(it.image, it.candidate) for it in items])  # type: ignore[misc]
        return [{"similarity": s} for s in sims]
