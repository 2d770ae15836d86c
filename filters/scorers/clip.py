"""CLIP image-text similarity and the CLIP filter margins of FineCops-Ref.

CLIP (Radford et al., 2021, "Learning Transferable Visual Models From Natural Language Supervision")
embeds images and texts in one space; the cosine similarity of the L2-normalised embeddings says how
well a text describes an image. FineCops-Ref's CLIP filter keeps a negative only when CLIP still
prefers the positive:

- text negative: ``sim(image, positive text) - sim(image, negative text) > 0``;
- image negative: ``sim(original image, positive text) - sim(negative image, positive text) > 0``.

On an image candidate it also checks that the edit shows what it claims, on the edited box alone: for
each region, the changed phrase must now describe the candidate's crop better than the original phrase
(``sim(crop, "a photo of a brown bowl") - sim(crop, "a photo of a white bowl") > min_crop_margin``; a
rename compares the two names, a swap each box's two names or attributes). A recolour that left the
bowl white, or a replacement that kept the car, fails here even when the whole image moved.

`CLIPScorer` embeds and compares; `ClipFilter` turns that into the margins and keeps a sample when
they pass.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from PIL import Image

from hardneg.backends.models import MODELS_HINT, loading, resolve_device_dtype, shared, transformers_model
from hardneg.backends.requirements import Requirement
from hardneg.core.errors import MissingDependency
from hardneg.core.plugins import FILTERS
from hardneg.core.rows import ImageNegativeRow
from hardneg.filters.base import Filter, Item, ScoreLine, Scores, Settings

logger = logging.getLogger(__name__)


def _features(out: Any) -> Any:
    # transformers 5 returns a model output whose pooler_output is the projected embedding; 4.x a tensor
    return out if hasattr(out, "ndim") else out.pooler_output


class CLIPScorer:
    """CLIP cosine similarity of (image, text) pairs, an `ImageTextScorer` (FineCops-Ref's CLIP filter).

    `model` is a hub id (e.g. "openai/clip-vit-large-patch14") or a local directory holding a
    `CLIPModel` and its processor (image processor + tokenizer). The model loads on first use, once;
    on CUDA in fp16 when available, else CPU fp32 (`dtype` overrides). Images and texts are embedded
    in batches of `batch_size` under `torch.inference_mode()`, each distinct image (by object
    identity within one call) and each distinct text once, so one image paired with many texts is
    encoded once. Similarity = cosine of the L2-normalised embeddings, computed in fp32, in [-1, 1].
    Texts longer than the model's context (77 tokens for OpenAI CLIP) are truncated.
    """

    def __init__(self, model: str, batch_size: int = 32, device: str | None = None, dtype: str | None = None) -> None:
        if not model:
            raise ValueError("CLIPScorer needs a model (hub id or local directory)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_name, self.batch_size, self.device, self.dtype = model, batch_size, device, dtype
        self.version = f"clip:{model}@v1"
        self._loaded: tuple[Any, Any, Any, Any] | None = None  # (torch, image processor, tokenizer, model)

    def _load(self) -> tuple[Any, Any, Any, Any]:
        if self._loaded is not None:
            return self._loaded
        with loading(self.model_name):
            try:
                import torch
                from transformers import AutoProcessor, CLIPModel
            except ImportError as e:
                raise MissingDependency(f"CLIPScorer needs torch and transformers: {MODELS_HINT}") from e
            device, dtype = resolve_device_dtype(torch, self.device, self.dtype)
            processor = AutoProcessor.from_pretrained(self.model_name)
            image_processor = getattr(processor, "image_processor", None)
            tokenizer = getattr(processor, "tokenizer", None)
            if image_processor is None or tokenizer is None:
                raise ValueError(f"{self.model_name} has no CLIP processor (image processor + tokenizer)")
            model = CLIPModel.from_pretrained(self.model_name, dtype=dtype).to(device).eval()
            logger.info("CLIPScorer: loaded %s on %s %s", self.model_name, device, dtype)
        self._loaded = (torch, image_processor, tokenizer, model)
        return self._loaded

    def _embed_images(self, images: Sequence[Image.Image]) -> Any:
        torch, image_processor, _, model = self._load()
        chunks = []
        for start in range(0, len(images), self.batch_size):
            batch = [im if im.mode == "RGB" else im.convert("RGB") for im in images[start : start + self.batch_size]]
            pixels = image_processor(images=batch, return_tensors="pt")["pixel_values"]
            pixels = pixels.to(model.device, model.dtype)
            chunks.append(_features(model.get_image_features(pixel_values=pixels)).float())
        return torch.nn.functional.normalize(torch.cat(chunks), dim=-1)

    def _embed_texts(self, texts: Sequence[str]) -> Any:
        torch, _, tokenizer, model = self._load()
        max_length = model.config.text_config.max_position_embeddings
        chunks = []
        for start in range(0, len(texts), self.batch_size):
            enc = tokenizer(
                list(texts[start : start + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            ).to(model.device)
            out = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            chunks.append(_features(out).float())
        return torch.nn.functional.normalize(torch.cat(chunks), dim=-1)

    def similarity(self, pairs: Sequence[tuple[Image.Image, str]]) -> list[float]:
        if not pairs:
            return []
        torch = self._load()[0]
        # the pairs hold every image alive for the whole call, so id() is a safe identity key here
        image_index: dict[int, int] = {}
        images: list[Image.Image] = []
        text_index: dict[str, int] = {}
        for image, text in pairs:
            if id(image) not in image_index:
                image_index[id(image)] = len(images)
                images.append(image)
            text_index.setdefault(text, len(text_index))
        with torch.inference_mode():
            image_emb = self._embed_images(images)
            text_emb = self._embed_texts(list(text_index))
            rows = torch.tensor([image_index[id(im)] for im, _ in pairs], device=image_emb.device)
            cols = torch.tensor([text_index[t] for _, t in pairs], device=text_emb.device)
            sims = (image_emb[rows] * text_emb[cols]).sum(-1).clamp(-1.0, 1.0)
        return sims.cpu().tolist()

    # ---------------------------------------------------------------------------------------- margins

    def text_margins(self, items: Sequence[tuple[Image.Image, str, str]]) -> list[float]:
        """For each (image, positive text, negative text): sim(image, pos) - sim(image, neg); > 0 passes."""
        sims = self.similarity([pair for image, pos, neg in items for pair in ((image, pos), (image, neg))])
        return [sims[2 * i] - sims[2 * i + 1] for i in range(len(items))]

    def image_margins(self, items: Sequence[tuple[Image.Image, Image.Image, str]]) -> list[float]:
        """For each (positive image, negative image, positive text): sim(pos image, text) - sim(neg image,
        text); > 0 passes. The positive image, shared by a negative's candidates, is encoded once."""
        sims = self.similarity([pair for pos, neg, text in items for pair in ((pos, text), (neg, text))])
        return [sims[2 * i] - sims[2 * i + 1] for i in range(len(items))]


CLIP_SCALE = 0.05  # CLIP cosine gaps are a few hundredths


def logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


class ClipOptions(Settings):
    model: str  # hub id or local directory of a CLIPModel and its processor
    device: str | None = None  # None: cuda when available
    dtype: str | None = None  # None: fp16 on cuda, fp32 on cpu


class MinMargin(Settings):
    min_margin: float = 0.0  # FineCops-Ref: CLIP must prefer the positive by more than this
    min_crop_margin: float | None = 0.0  # the changed phrase must beat the original on the edited crop; None: off


def crop_phrases(record: ImageNegativeRow, boxes: Sequence[tuple[int, int, int, int]]) -> list[tuple[Any, str, str]]:
    """(box, original phrase, changed phrase) per edited region of an image negative; none for a flip or a
    removal (nothing is painted that a phrase names). Names come from the positive's path."""
    names = {n.id: n.name for n in record.node().nodes() if n.id}
    e = record.edit
    op = e.get("op")
    photo = "a photo of {}".format
    if op == "set_attribute" and boxes:
        name = names.get(e.get("object"), "object")
        return [(boxes[0], photo(f"{e['from']} {name}"), photo(f"{e['to']} {name}"))]
    if op == "swap_attributes" and len(boxes) == 2:
        (a, b), (x, y) = e["objects"], e["from"]
        na, nb = names.get(a, "object"), names.get(b, "object")
        return [(boxes[0], photo(f"{x} {na}"), photo(f"{y} {na}")), (boxes[1], photo(f"{y} {nb}"), photo(f"{x} {nb}"))]
    if op == "rename" and boxes:
        return [(boxes[0], photo(names.get(e.get("object"), "object")), photo(e["name"]))]
    if op == "swap_names" and len(boxes) == 2:
        na, nb = (names.get(i, "object") for i in e["objects"])
        return [(boxes[0], photo(na), photo(nb)), (boxes[1], photo(nb), photo(na))]
    return []


def _crop(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    x, y, w, h = (int(v) for v in box)
    x0, y0 = max(0, x), max(0, y)
    return image.crop((x0, y0, max(x0 + 1, min(image.width, x + w)), max(y0 + 1, min(image.height, y + h))))


@FILTERS.add("clip", order=10)
class ClipFilter(Filter):
    """FineCops-Ref's CLIP filter, both margins: a text negative's
    sim(image, positive text) - sim(image, negative text), an image candidate's
    sim(source, positive text) - sim(candidate, positive text)."""

    version = "clip@v2"  # v2: the crop margin of image candidates
    targets = frozenset({"text_negative", "image_candidate"})
    Options = ClipOptions
    Thresholds = MinMargin
    legend = (
        ScoreLine(
            "clip_margin",
            "how much CLIP prefers the positive: sim(image, positive) - sim(image, negative) for a text negative, "
            "sim(source, text) - sim(edited, text) for an image negative; above the threshold passes",
            "min_margin",
            # near or below 0 the negative may still be true; a margin of CLIP_SCALE is ~27% risk
            risk=lambda v: logistic(-v / CLIP_SCALE),
        ),
    )

    def requirements(self, role: str) -> list[Requirement]:
        return [transformers_model(role, self.options.model)]  # type: ignore[attr-defined]

    def _scorer(self) -> CLIPScorer:
        o = self.options
        key = ("clip", o.model, o.device, o.dtype, self.batch_size)  # type: ignore[attr-defined]
        return shared(key, lambda: self.configured(CLIPScorer, o.model, self.batch_size, o.device, o.dtype))  # type: ignore[attr-defined]

    @property
    def identity(self) -> str:
        return f"{self.version} {self.options.model}"  # type: ignore[attr-defined]

    def score(self, items: Sequence[Item]) -> list[Scores]:
        texts = [(k, it) for k, it in enumerate(items) if it.target == "text_negative"]
        cands = [(k, it) for k, it in enumerate(items) if it.target == "image_candidate"]
        out: list[Scores] = [{} for _ in items]
        scorer = self._scorer()
        if texts:
            margins = scorer.text_margins([(it.image, it.text, it.negative_text) for _, it in texts])  # type: ignore[misc]
            for (k, _), m in zip(texts, margins, strict=True):
                out[k] = {"clip_margin": m}
        if cands:
            margins = scorer.image_margins([(it.image, it.candidate, it.text) for _, it in cands])  # type: ignore[misc]
            for (k, _), m in zip(cands, margins, strict=True):
                out[k] = {"clip_margin": m}
            crops = [(k, crop_phrases(it.record, it.boxes), it) for k, it in cands]  # type: ignore[arg-type]
            pairs = [(_crop(it.candidate, box), t) for _, ph, it in crops for box, old, new in ph for t in (new, old)]  # type: ignore[arg-type]
            sims = iter(scorer.similarity(pairs)) if pairs else iter(())
            for k, ph, _ in crops:
                if ph:
                    out[k]["clip_crop_margin"] = min(next(sims) - next(sims) for _ in ph)
        return out

    @classmethod
    def keep(cls, scores: Scores, thresholds: Settings) -> tuple[bool, str | None]:
        m = scores.get("clip_margin")
        limit = thresholds.min_margin  # type: ignore[attr-defined]
        if m is not None and m <= limit:
            return False, f"CLIP margin {m:.4f} <= {limit}"
        c, crop_limit = scores.get("clip_crop_margin"), thresholds.min_crop_margin  # type: ignore[attr-defined]
        if c is not None and crop_limit is not None and c <= crop_limit:
            return (
                False,
                f"CLIP crop: the changed phrase does not beat the original on the edited box ({c:.4f} <= {crop_limit})",
            )
        return True, None
