"""Tiny random models built offline from the real classes (no hub, no weights), for tests and benchmarks.

- `clip_tokenizer`: a byte-level CLIP BPE tokenizer from a vocab built in code (ENVIRONMENT.md: no hub);
- `tiny_sd_inpaint_pipeline`: a Stable Diffusion inpainting pipeline (9-channel UNet, tiny VAE, tiny
  CLIP text encoder, PNDM scheduler) with random weights, the shape of SD-1.5-inpainting at toy size.

Random weights mean nothing: these exercise plumbing (shapes, batching, seeding, saving and loading),
never image quality. Importing this module imports nothing heavy; torch and diffusers load in the builders.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import CLIPTokenizer

# A few whole-word merges so common prompt words are one token; everything else falls back to bytes.
MERGE_WORDS = ("a", "red", "blue", "cup", "ball", "background", "the", "photo", "of")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2/CLIP's reversible byte -> printable unicode map (the base alphabet of byte-level BPE)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def clip_vocab_and_merges(words: tuple[str, ...] = MERGE_WORDS) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """CLIP's vocab layout (bytes, bytes + "</w>", merged pieces, then the two specials) and its merges."""
    alphabet = list(_bytes_to_unicode().values())
    vocab_list = alphabet + [c + "</w>" for c in alphabet]
    merges: list[tuple[str, str]] = []
    for word in words:  # merge left to right: "r e d</w>" -> "re d</w>" -> "red</w>"
        pieces = [*word[:-1], word[-1] + "</w>"]
        while len(pieces) > 1:
            pair = (pieces[0], pieces[1])
            merged = pieces[0] + pieces[1]
            if pair not in merges:
                merges.append(pair)
            if merged not in vocab_list:
                vocab_list.append(merged)
            pieces = [merged, *pieces[2:]]
    vocab_list += ["<|startoftext|>", "<|endoftext|>"]
    return {tok: i for i, tok in enumerate(vocab_list)}, merges


def clip_tokenizer(model_max_length: int = 77) -> CLIPTokenizer:
    """A CLIP tokenizer built in memory (byte-level BPE, lowercasing, CLIP's specials)."""
    from transformers import CLIPTokenizer

    vocab, merges = clip_vocab_and_merges()
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=model_max_length)


def tiny_sd_inpaint_pipeline(sample_size: int = 16, seed: int = 0) -> Any:
    """A random StableDiffusionInpaintPipeline at toy size: default resolution `sample_size * 2` px.

    Same classes and wiring as SD-1.5-inpainting (UNet in_channels 9 = 4 latent + 1 mask + 4 masked-image
    latent channels), so `save_pretrained` / `AutoPipelineForInpainting.from_pretrained` round-trip."""
    import torch
    from diffusers import AutoencoderKL, PNDMScheduler, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    tokenizer = clip_tokenizer()
    torch.manual_seed(seed)  # random init of every module below
    unet = UNet2DConditionModel(
        sample_size=sample_size,
        in_channels=9,
        out_channels=4,
        block_out_channels=(32, 64),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=(2, 4),
        norm_num_groups=32,
    )
    vae = AutoencoderKL(
        block_out_channels=(32, 64),
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        sample_size=sample_size * 2,
        norm_num_groups=32,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=77,
            projection_dim=32,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )
    scheduler = PNDMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", skip_prk_steps=True, steps_offset=1
    )
    return StableDiffusionInpaintPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def save_tiny_sd_inpaint(out_dir: Path, sample_size: int = 16, seed: int = 0) -> Path:
    """Build the tiny pipeline and `save_pretrained` it to `out_dir` (a diffusers model folder)."""
    pipe = tiny_sd_inpaint_pipeline(sample_size=sample_size, seed=seed)
    pipe.save_pretrained(out_dir)
    return Path(out_dir)
