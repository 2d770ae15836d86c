"""Tiny random image-scorer models built from the real classes, saved like hub checkpoints.

Nothing can be downloaded here (ENVIRONMENT.md, "Models without a hub"), so every real-model scorer is
tested against a model built from a small config with a fixed seed, `save_pretrained` to a directory and
loaded back by the scorer exactly as a hub checkpoint would be. Shared by `tests/test_image_scorers.py`
and `benchmarks/bench_scorers_gpu.py --cpu-small`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import torch

SEED = 0

# Words the tiny CLIP tokenizer gets whole-word merges for; other words fall back to byte tokens.
CLIP_WORDS = ("the", "red", "blue", "green", "ball", "cup", "plate", "left", "of", "on", "a", "photo")


def tiny_clip_tokenizer():
    """A real `CLIPTokenizer` with CLIP's layout, with whole-word merges for the words these tests use."""
    from transformers import CLIPTokenizer

    from tests.tiny_models import clip_vocab_and_merges

    vocab, merges = clip_vocab_and_merges(CLIP_WORDS)
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=77)


def save_tiny_clip(path: Path) -> Path:
    """Tiny random `CLIPModel` (32 px images, 8 px patches) + `CLIPProcessor` saved to `path`."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    tokenizer = tiny_clip_tokenizer()
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 77,
        # pooling reads the EOS position: the config must name the tokenizer's EOS id
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    vision = {
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "image_size": 32,
        "patch_size": 8,
    }
    torch.manual_seed(SEED)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).eval()
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    CLIPProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(path)
    return path


def tiny_dinov2_config():
    from transformers import Dinov2Config

    return Dinov2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=28,
        patch_size=14,
        intermediate_size=37,
    )


def save_tiny_dinov2(path: Path) -> Path:
    """Tiny random `Dinov2Model` + a DINOv2-style `BitImageProcessor` (resize 32, crop 28) saved to `path`."""
    from transformers import BitImageProcessor, Dinov2Model

    torch.manual_seed(SEED)
    model = Dinov2Model(tiny_dinov2_config()).eval()
    processor = BitImageProcessor(
        size={"shortest_edge": 32},
        crop_size={"height": 28, "width": 28},
        resample=3,  # bicubic, as DINOv2's eval transform
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
        do_convert_rgb=True,
    )
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


HUBCONF = textwrap.dedent(
    '''\
    """A local torch.hub repo with one DINOv2-like entry point (tests only): forward(x) -> CLS embedding."""

    import os

    dependencies = ["torch", "transformers"]


    def dinov2_tiny(pretrained=True, **kwargs):
        import torch
        from transformers import Dinov2Model

        class _CLS(torch.nn.Module):
            # the official hub models return the normalised CLS token from forward(); so does this one
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(pixel_values=x).pooler_output

        weights = os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights")
        return _CLS(Dinov2Model.from_pretrained(weights))
    '''
)


def save_tiny_dinov2_hub(path: Path) -> Path:
    """A local torch.hub dir: `hubconf.py` with entry point ``dinov2_tiny`` and the tiny model in weights/."""
    from transformers import Dinov2Model

    torch.manual_seed(SEED + 1)
    path.mkdir(parents=True, exist_ok=True)
    Dinov2Model(tiny_dinov2_config()).eval().save_pretrained(path / "weights")
    (path / "hubconf.py").write_text(HUBCONF)
    return path


def save_tiny_unet(path: Path, sample_size: int = 16, constant_eps: float | None = None) -> Path:
    """Tiny random unconditional `UNet2DModel`; 6 output channels, like ADM with learned sigma.

    `constant_eps`: zero the output conv's weights and set its bias so the epsilon half of the output
    is that constant everywhere (the sigma half 5.0, which a correct scorer ignores): a model for which
    deterministic DDIM inversion is exact at any step count.
    """
    from diffusers import UNet2DModel

    torch.manual_seed(SEED)
    unet = UNet2DModel(
        sample_size=sample_size,
        in_channels=3,
        out_channels=6,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D"),
        norm_num_groups=32,
    ).eval()
    if constant_eps is not None:
        with torch.no_grad():
            unet.conv_out.weight.zero_()
            unet.conv_out.bias.copy_(torch.tensor([constant_eps] * 3 + [5.0] * 3))
    path.mkdir(parents=True, exist_ok=True)
    unet.save_pretrained(path)
    return path


def tiny_resnet_config():
    from transformers import ResNetConfig

    # two blocks in the first stage: exercises a block without a shortcut projection
    return ResNetConfig(embedding_size=8, hidden_sizes=[16, 32], depths=[2, 1], layer_type="bottleneck", num_labels=1)


def save_tiny_resnet(path: Path) -> Path:
    """Tiny random one-logit `ResNetForImageClassification` (bottleneck blocks, as ResNet-50) saved to `path`."""
    from transformers import ResNetForImageClassification

    torch.manual_seed(SEED)
    model = ResNetForImageClassification(tiny_resnet_config()).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    return path
