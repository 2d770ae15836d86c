"""Throughput of the image scorers on a GPU: CLIP ViT-L/14 and DINOv2 ViT-L/14, fp16 batched vs fp32 batch 1.

    .venv/bin/python -m benchmarks.bench_scorers_gpu [--n 256] [--batch-sizes 32 64] [--dino-sizes 224 518]
    .venv/bin/python -m benchmarks.bench_scorers_gpu --cpu-small [--threads 1]  # tiny models on CPU

Builds `CLIPModel` and `Dinov2Model` from the full ViT-L/14 configs with random weights (the speed of a
network does not depend on its weights; no download), saves them with a processor to a temp dir and
measures, in one run:

- end to end: images/s through `CLIPScorer.similarity` and `DinoSimilarity.similarity` on demo-world
  images (~500x400 PIL, as GQA's), preprocessing included, each image distinct so each is encoded;
- model only: images/s of the vision tower on ready pixel tensors on the device, the ceiling the
  scorers could reach if preprocessing were free.

Settings: fp32 batch 1 (the naive baseline), then fp16 at each batch size; the ratio column is against
fp32 batch 1. Exits with a message when no CUDA GPU is visible. `--cpu-small` runs the tiny test models
on CPU in fp32 at every batch size (CPU fp16 is not a speed-up), so the script itself can be exercised
on a machine without a GPU; its numbers say nothing about GPU speed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from PIL import Image

from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene
from hardneg.filters.scorers.clip import CLIPScorer
from hardneg.filters.scorers.dinov2 import DinoSimilarity
from tests.tiny_scorer_models import save_tiny_clip, save_tiny_dinov2, tiny_clip_tokenizer

TEXTS = ["the red ball to the left of the cup", "a photo of the blue cup on a plate", "the green plate"]


def save_clip_vit_l14(path: Path) -> Path:
    """Random-weight CLIP ViT-L/14 (openai/clip-vit-large-patch14's shape) + processor, saved to `path`."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = tiny_clip_tokenizer()  # the text tower's cost depends on sequence length, not the vocab
    text = {
        "vocab_size": 49408,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "max_position_embeddings": 77,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision = {
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "image_size": 224,
        "patch_size": 14,
    }
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=768))
    model.save_pretrained(path)
    processor = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    CLIPProcessor(image_processor=processor, tokenizer=tokenizer).save_pretrained(path)
    return path


def save_dinov2_vit_l14(path: Path, image_size: int) -> Path:
    """Random-weight DINOv2 ViT-L/14 (facebook/dinov2-large's shape) + a processor cropping `image_size`."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    config = Dinov2Config(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        patch_size=14,
        image_size=518,
    )
    Dinov2Model(config).save_pretrained(path)
    BitImageProcessor(
        size={"shortest_edge": round(image_size * 256 / 224)},
        crop_size={"height": image_size, "width": image_size},
        resample=3,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    ).save_pretrained(path)
    return path


def timed(fn: Callable[[], object], repeats: int = 1) -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def settings(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """(label, dtype, batch size): the fp32 batch-1 baseline first."""
    fast = "float32" if args.cpu_small else "float16"
    return [("fp32 batch 1", "float32", 1)] + [
        (f"{'fp32' if args.cpu_small else 'fp16'} batch {b}", fast, b) for b in args.batch_sizes
    ]


def report(name: str, rows: list[tuple[str, float]]) -> None:
    base = rows[0][1]
    print(f"\n{name}")
    for label, ips in rows:
        print(f"  {label:<28} {ips:10.1f} images/s   x{ips / base:6.2f}")


def bench_clip(model_dir: Path, images: list[Image.Image], args: argparse.Namespace, device: str) -> None:
    pairs = [(im, TEXTS[i % len(TEXTS)]) for i, im in enumerate(images)]
    end_to_end, model_only = [], []
    for label, dtype, batch in settings(args):
        scorer = CLIPScorer(str(model_dir), batch_size=batch, device=device, dtype=dtype)
        scorer.similarity(pairs[: max(2, batch)])  # load and warm up
        n = len(pairs) if batch > 1 else min(len(pairs), args.n_baseline)
        end_to_end.append((label, n / timed(lambda s=scorer, n=n: s.similarity(pairs[:n]))))
        model = scorer._load()[3]
        size = model.config.vision_config.image_size
        pixels = torch.randn(batch, 3, size, size, device=model.device, dtype=model.dtype)
        with torch.inference_mode():
            model.get_image_features(pixel_values=pixels)
            reps = max(1, args.n // batch) if batch > 1 else min(args.n, args.n_baseline)
            seconds = timed(lambda m=model, p=pixels: m.get_image_features(pixel_values=p), reps)
        model_only.append((label, batch / seconds))
        del scorer, model
        if device == "cuda":
            torch.cuda.empty_cache()
    report(f"CLIP {args.clip_name}: end to end (CLIPScorer.similarity, preprocessing included)", end_to_end)
    report(f"CLIP {args.clip_name}: vision tower only (pixels on the device)", model_only)


def bench_dino(model_dir: Path, size: int, images: list[Image.Image], args: argparse.Namespace, device: str) -> None:
    # consecutive images pair up as (original, candidate): every image is distinct and encoded once
    pairs = [(images[i], images[i + 1]) for i in range(0, len(images) - 1, 2)]
    end_to_end, model_only = [], []
    for label, dtype, batch in settings(args):
        scorer = DinoSimilarity(str(model_dir), loader="transformers", batch_size=batch, device=device, dtype=dtype)
        scorer.similarity(pairs[: max(1, batch // 2)])
        n = len(pairs) if batch > 1 else min(len(pairs), max(1, args.n_baseline // 2))
        end_to_end.append((label, 2 * n / timed(lambda s=scorer, n=n: s.similarity(pairs[:n]))))
        model = scorer._load()[1]
        param = next(model.parameters())
        pixels = torch.randn(batch, 3, size, size, device=param.device, dtype=param.dtype)
        with torch.inference_mode():
            model(pixel_values=pixels)
            reps = max(1, args.n // batch) if batch > 1 else min(args.n, args.n_baseline)
            seconds = timed(lambda m=model, p=pixels: m(pixel_values=p), reps)
        model_only.append((label, batch / seconds))
        del scorer, model
        if device == "cuda":
            torch.cuda.empty_cache()
    report(f"DINOv2 {args.dino_name} at {size}px: end to end (DinoSimilarity.similarity)", end_to_end)
    report(f"DINOv2 {args.dino_name} at {size}px: model only (pixels on the device)", model_only)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu-small", action="store_true", help="tiny models on CPU, to exercise the script")
    parser.add_argument("--n", type=int, default=256, help="images per batched measurement")
    parser.add_argument("--n-baseline", type=int, default=64, help="images for the slow fp32 batch-1 baseline")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--dino-sizes", type=int, nargs="+", default=[224, 518])
    parser.add_argument("--skip-clip", action="store_true")
    parser.add_argument("--skip-dino", action="store_true")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        # on a shared CPU, OpenMP threads that outnumber the free cores slow small models by 10-100x
        torch.set_num_threads(args.threads)

    if args.cpu_small:
        device = "cpu"
        args.clip_name, args.dino_name = "tiny (tests/tiny_scorer_models.py)", "tiny"
        args.dino_sizes = [28]  # the tiny processor's crop; its model is built for 28 px
    elif not torch.cuda.is_available():
        print(
            "bench_scorers_gpu: no CUDA GPU visible (torch.cuda.is_available() is False). Run it on a GPU "
            "machine, or pass --cpu-small to exercise the script with tiny models on CPU.",
            file=sys.stderr,
        )
        return 2
    else:
        device = "cuda"
        args.clip_name, args.dino_name = "ViT-L/14 (random weights)", "ViT-L/14 (random weights)"
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")

    graphs = generate_graphs(max(8, args.n), seed=0)
    images = [render_scene(g) for g in list(graphs.values())[: args.n]]
    print(f"{len(images)} demo-world images, {images[0].size[0]}x{images[0].size[1]} and similar")

    with tempfile.TemporaryDirectory(prefix="bench-scorers-") as tmp:
        root = Path(tmp)
        if not args.skip_clip:
            clip_dir = save_tiny_clip(root / "clip") if args.cpu_small else save_clip_vit_l14(root / "clip")
            bench_clip(clip_dir, images, args, device)
        if not args.skip_dino:
            for size in args.dino_sizes:
                if args.cpu_small:
                    dino_dir = save_tiny_dinov2(root / "dino")
                else:
                    dino_dir = save_dinov2_vit_l14(root / f"dino{size}", size)
                bench_dino(dino_dir, size, images, args, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
