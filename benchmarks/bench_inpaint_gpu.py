"""Throughput of the inpainting backends: candidates per second.

    .venv/bin/python -m benchmarks.bench_inpaint_gpu [--steps 30] [--n 8] [--jobs 4] [--batch-sizes 4 8]

1. CPU: `OpenCVInpainter` on demo-world images (recolor, replace with a donor, remove; 10 candidates per
   job), candidates/s per operation and overall. Needs no GPU.
2. GPU: the FULL-SIZE Stable-Diffusion-1.5-inpainting architecture (UNet 320/640/1280/1280, 9 input
   channels, cross-attention 768, attention head dim 8, 2 layers per block, sample size 64; SD's VAE;
   CLIP ViT-L/14 text encoder; PNDM) with RANDOM weights (nothing can be downloaded), saved with
   `save_pretrained` and loaded back as a user's model folder would be. At 512x512 and `--steps` steps:
   (a) `DiffusersInpainter` in fp16, batched (`--batch-sizes`), across `--jobs` jobs of `--n` candidates;
   (b) the naive baseline: the same pipeline in fp32, one candidate per call (diffusers' own
       `padding_mask_crop`, one generator per call), for `--naive-n` candidates.
   Prints candidates/s of each and the ratio. Random weights cost exactly what trained ones cost.
   Without CUDA the GPU part is skipped with a message; `--arch tiny --allow-cpu` runs its code path on a
   tiny model on CPU (a plumbing check, not a measurement).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.core.demo.catalog import STUFF_NAMES
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene

Box = tuple[int, int, int, int]


def demo_jobs(n_images: int, n: int, seed: int = 0) -> dict[str, list[InpaintJob]]:
    """Per operation, one job per demo image: recolor to blue, replace with a donor crop, remove."""
    jobs: dict[str, list[InpaintJob]] = {"recolor": [], "replace": [], "remove": []}
    graphs = list(generate_graphs(n_images, seed).values())
    images = [render_scene(g) for g in graphs]
    for i, (graph, img) in enumerate(zip(graphs, images, strict=True)):
        objs = [o for o in graph["objects"].values() if o["name"] not in STUFF_NAMES]
        target, donor_obj = objs[0], objs[-1]
        box: Box = (target["x"], target["y"], target["w"], target["h"])
        dx, dy, dw, dh = donor_obj["x"], donor_obj["y"], donor_obj["w"], donor_obj["h"]
        donor = img.crop((dx, dy, dx + dw, dy + dh))
        key = f"bench-{i}"
        jobs["recolor"].append(InpaintJob(key, img, (EditRegion(box, "recolor", "a blue object", "blue"),), n, i))
        region = EditRegion(box, "replace", f"a {donor_obj['name']}", donor=donor)
        jobs["replace"].append(InpaintJob(key, img, (region,), n, i))
        jobs["remove"].append(InpaintJob(key, img, (EditRegion(box, "remove", ""),), n, i))
    return jobs


def bench_opencv(n_images: int) -> None:
    from hardneg.backends.inpaint_opencv import OpenCVInpainter

    jobs = demo_jobs(n_images, n=10)
    size = jobs["recolor"][0].image.size
    inp = OpenCVInpainter()
    inp.run(jobs["recolor"][:1])  # warm-up: OpenCV's first calls allocate
    total_n, total_s = 0, 0.0
    print(f"opencv ({inp.version}), CPU, {n_images} demo images (first {size[0]}x{size[1]}), 10 candidates per job:")
    for op, op_jobs in jobs.items():
        t0 = time.perf_counter()
        out = inp.run(op_jobs)
        dt = time.perf_counter() - t0
        n = sum(len(c) for c in out)
        total_n, total_s = total_n + n, total_s + dt
        print(f"  {op:8s} {n} candidates in {dt:.2f} s = {n / dt:.1f} candidates/s")
    print(f"  overall  {total_n / total_s:.1f} candidates/s ({1000 * total_s / total_n:.1f} ms per candidate)")


def build_pipeline(arch: str, out_dir: Path, device: str) -> Path:
    """A random-weight SD-1.5-inpainting-shaped pipeline (or a tiny one), saved to `out_dir` in fp16."""
    import torch
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from tests.tiny_models import clip_tokenizer, save_tiny_sd_inpaint

    if arch == "tiny":
        return save_tiny_sd_inpaint(out_dir, sample_size=32)
    t0 = time.perf_counter()
    torch.manual_seed(0)
    with torch.device(device):  # initialise on the GPU: random init of 1B parameters on CPU takes minutes
        unet = UNet2DConditionModel(
            sample_size=64,
            in_channels=9,
            out_channels=4,
            down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
            block_out_channels=(320, 640, 1280, 1280),
            layers_per_block=2,
            cross_attention_dim=768,
            attention_head_dim=8,
        )
        vae = AutoencoderKL(
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D",) * 4,
            up_block_types=("UpDecoderBlock2D",) * 4,
            block_out_channels=(128, 256, 512, 512),
            layers_per_block=2,
            latent_channels=4,
            sample_size=512,
            scaling_factor=0.18215,
        )
        tokenizer = clip_tokenizer()  # a small local vocab: ids stay inside ViT-L/14's 49408-row table
        text_encoder = CLIPTextModel(
            CLIPTextConfig(  # CLIP ViT-L/14's text tower, as in SD-1.5
                vocab_size=49408,
                hidden_size=768,
                intermediate_size=3072,
                num_hidden_layers=12,
                num_attention_heads=12,
                max_position_embeddings=77,
                hidden_act="quick_gelu",
                projection_dim=768,
                bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id,
            )
        )
    scheduler = PNDMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True, steps_offset=1
    )
    pipe = StableDiffusionInpaintPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    n_params = sum(p.numel() for m in (unet, vae, text_encoder) for p in m.parameters())
    pipe.to(dtype=torch.float16).save_pretrained(out_dir)  # fp16 on disk halves the write; fp32 loads upcast
    print(
        f"built SD-1.5-inpainting architecture: {n_params / 1e6:.0f}M random parameters, saved in "
        f"{time.perf_counter() - t0:.0f} s"
    )
    del pipe, unet, vae, text_encoder
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out_dir


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def bench_batched(model: Path, jobs: list[InpaintJob], batch_size: int, steps: int, res: int, device: str) -> float:
    from hardneg.backends.inpaint_diffusers import DiffusersInpainter, DiffusersSettings

    dtype = "float16" if device == "cuda" else "float32"
    settings = DiffusersSettings(
        model=str(model), steps=steps, batch_size=batch_size, resolution=res, device=device, dtype=dtype
    )
    inp = DiffusersInpainter(settings)
    warm = InpaintJob("warm", jobs[0].image, jobs[0].regions, batch_size, 0)
    inp.run([warm])  # loads the model, warms kernels at this batch size
    sync()
    t0 = time.perf_counter()
    out = inp.run(jobs)
    sync()
    dt = time.perf_counter() - t0
    n = sum(len(c) for c in out)
    print(f"  (a) DiffusersInpainter {dtype} batch {batch_size}: {n} candidates in {dt:.1f} s = {n / dt:.2f}/s")
    del inp
    gc.collect()
    return n / dt


def bench_naive(model: Path, jobs: list[InpaintJob], n: int, steps: int, res: int, device: str) -> float:
    """One candidate per pipeline call, fp32, diffusers' own padding_mask_crop: what one writes first."""
    import numpy as np
    import torch
    from diffusers import AutoPipelineForInpainting

    pipe = AutoPipelineForInpainting.from_pretrained(str(model), dtype=torch.float32).to(device)
    pipe.set_progress_bar_config(disable=True)

    def one(job: InpaintJob, k: int) -> Image.Image:
        x, y, w, h = job.regions[0].box
        mask = np.zeros((job.image.height, job.image.width), np.uint8)
        mask[max(0, y - 8) : y + h + 8, max(0, x - 8) : x + w + 8] = 255
        mask_img = Image.fromarray(mask)
        out = pipe(
            prompt=job.regions[0].prompt,
            image=job.image,
            mask_image=mask_img,
            height=res,
            width=res,
            padding_mask_crop=32,
            num_inference_steps=steps,
            generator=torch.Generator(device).manual_seed(job.seed * 1000 + k),
        ).images[0]
        return Image.composite(out.resize(job.image.size), job.image, mask_img)  # paste-back, as the backend

    one(jobs[0], 0)  # warm-up
    sync()
    t0 = time.perf_counter()
    done = 0
    while done < n:
        job = jobs[done % len(jobs)]
        one(job, done)
        done += 1
    sync()
    dt = time.perf_counter() - t0
    print(f"  (b) naive fp32, one candidate per call: {done} candidates in {dt:.1f} s = {done / dt:.2f}/s")
    return done / dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=30, help="denoising steps per candidate")
    ap.add_argument("--n", type=int, default=8, help="candidates per job in the batched runs")
    ap.add_argument("--jobs", type=int, default=4, help="jobs (demo images) in the batched runs")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--naive-n", type=int, default=6, help="candidates in the naive fp32 loop")
    ap.add_argument("--resolution", type=int, default=512)
    ap.add_argument("--opencv-images", type=int, default=12, help="demo images for the CPU opencv part")
    ap.add_argument("--arch", choices=["sd15", "tiny"], default="sd15")
    ap.add_argument("--allow-cpu", action="store_true", help="run the GPU part on CPU (with --arch tiny)")
    ap.add_argument("--skip-opencv", action="store_true")
    args = ap.parse_args()

    if not args.skip_opencv:
        bench_opencv(args.opencv_images)
    try:
        import torch
    except ImportError:
        print("\ndiffusers part skipped: torch is not installed (pip install 'hardneg[models]')")
        return 0
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.allow_cpu:
        print("\ndiffusers part skipped: no CUDA GPU on this machine (it needs one; see --allow-cpu for a dry run)")
        return 0
    if device == "cuda":
        print(f"\nGPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    res = args.resolution if args.arch == "sd15" else 64
    jobs = demo_jobs(args.jobs, args.n)["replace"]
    jobs = [
        InpaintJob(j.key, j.image, (EditRegion(j.regions[0].box, "replace", j.regions[0].prompt),), j.n, j.seed)
        for j in jobs
    ]  # text-guided replace: the generative case
    with tempfile.TemporaryDirectory() as tmp:
        model = build_pipeline(args.arch, Path(tmp) / f"random-{args.arch}-inpaint", device)
        print(f"{args.arch} at {res}x{res}, {args.steps} steps, {args.jobs} jobs x {args.n} candidates:")
        batched = {b: bench_batched(model, jobs, b, args.steps, res, device) for b in args.batch_sizes}
        naive = bench_naive(model, jobs, args.naive_n, args.steps, res, device)
    best = max(batched, key=lambda b: batched[b])
    dtype = "fp16" if device == "cuda" else "fp32"
    print(f"  speed-up of batch {best} {dtype} over the naive fp32 loop: {batched[best] / naive:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
