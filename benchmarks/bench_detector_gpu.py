"""Throughput of the detector filter on a GPU: OWLv2 base (960 px, patch 16) with random weights, fp16 batched
vs fp32 batch 1, through `DetectorFilter.detect` (preprocessing included) on demo-world images.

    python -m benchmarks.bench_detector_gpu [--n 128] [--batch-sizes 8 16 32]
    python -m benchmarks.bench_detector_gpu --cpu-small      # the tiny test detector on CPU, to exercise it

A detector's speed does not depend on its weights, so no download is needed: the model is built from
`Owlv2Config()` (google/owlv2-base-patch16's shape) and saved with a processor to a temp dir. Each image
gets two text queries, as a positive and a replacement would. The ratio column is against fp32 batch 1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image

from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene
from hardneg.filters.registry import build
from tests.tiny_scorer_models import tiny_clip_tokenizer


def save_owlv2_base(path: Path) -> Path:
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    tokenizer = tiny_clip_tokenizer()  # the text tower's cost depends on the sequence length, not the vocab
    cfg = Owlv2Config(
        text_config={"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id,
                     "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id},
    )  # fmt: skip
    torch.manual_seed(0)
    model = Owlv2ForObjectDetection(cfg).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    Owlv2Processor(image_processor=Owlv2ImageProcessor(), tokenizer=tokenizer).save_pretrained(path)
    return path


def images(n: int) -> list[Image.Image]:
    graphs = generate_graphs(max(1, n // 4 + 1), seed=3)
    out = [render_scene(g) for g in graphs.values()]
    return [out[i % len(out)].copy() for i in range(n)]  # distinct objects: each is preprocessed and encoded


def measure(model_dir: Path, ims: list[Image.Image], batch: int, dtype: str | None, device: str) -> float:
    f = build("detector", {"model": str(model_dir), "dtype": dtype, "device": device}, batch_size=batch)
    queries = [["ball", "cup"] for _ in ims]
    f.detect(ims[:batch], queries[:batch])  # load and warm up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    f.detect(ims, queries)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return len(ims) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128, help="images per batched measurement")
    ap.add_argument("--n-baseline", type=int, default=32, help="images for the fp32 batch-1 baseline")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--cpu-small", action="store_true", help="the tiny hand-set test detector on CPU")
    args = ap.parse_args(argv)
    if not args.cpu_small and not torch.cuda.is_available():
        print("no CUDA GPU visible: run with --cpu-small to exercise the script on CPU", file=sys.stderr)
        return 2
    device = "cpu" if args.cpu_small else "cuda"
    with tempfile.TemporaryDirectory() as tmp:
        if args.cpu_small:
            from tests.tiny_detector import save_red_detector

            model_dir = save_red_detector(Path(tmp) / "tiny")
        else:
            model_dir = save_owlv2_base(Path(tmp) / "owlv2-base")
        name = "tiny OWL-ViT" if args.cpu_small else "OWLv2 base/16 960px"
        print(
            f"detector: {name}, random weights, {device}"
            + (f" ({torch.cuda.get_device_name()})" if not args.cpu_small else "")
        )
        base = measure(model_dir, images(args.n_baseline), 1, "float32", device)
        print(f"{'setting':28} {'images/s':>10} {'ratio':>7}")
        print(f"{'fp32 batch 1':28} {base:10.1f} {1.0:7.2f}")
        ims = images(args.n)
        for b in args.batch_sizes:
            dtype = "float32" if args.cpu_small else "float16"
            v = measure(model_dir, ims, b, dtype, device)
            print(f"{dtype} batch {b:<15} {v:10.1f} {v / base:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
