"""DIRE's released classifier checkpoint -> a transformers `ResNetForImageClassification`.

DIRE ships its detectors as torchvision ResNet-50 state dicts; torchvision is not installable next to
this project's torch pin, so `convert_dire_checkpoint` maps every key onto transformers' ResNet (same
architecture) and saves a directory `DIREScorer(classifier=...)` loads (docs/realism.md). A one-off
conversion tool with no part in scoring, hence its own module; `filters/scorers/dire.py` re-exports its names.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

# The public module's name, so the log line reads as it did before the conversion moved here.
logger = logging.getLogger("hardneg.filters.scorers.dire")

# Also DIREScorer's install hint (filters/scorers/dire.py imports it from here).
DIFFUSERS_HINT = (
    "pip install 'torch==2.13.0' 'transformers>=5,<6' 'diffusers>=0.42,<0.43'  (or: pip install -e '.[models]')"
)

_TV_STEM = re.compile(r"^(conv1|bn1)\.(.+)$")
_TV_BLOCK = re.compile(r"^layer(\d+)\.(\d+)\.(conv(\d+)|bn(\d+)|downsample\.(0|1))\.(.+)$")
_TV_FC = re.compile(r"^fc\.(weight|bias)$")


def torchvision_resnet_key(key: str) -> str:
    """Map one torchvision ResNet state-dict key to `ResNetForImageClassification`'s name for it.

    ``conv1``/``bn1`` -> the embedder; ``layer{i}.{j}.conv{k}``/``bn{k}`` -> stage i-1, layer j, conv k-1;
    ``layer{i}.{j}.downsample.0/1`` -> that layer's shortcut conv/norm; ``fc`` -> ``classifier.1``.
    Raises ValueError for a key that is not part of a torchvision ResNet.
    """
    if m := _TV_STEM.match(key):
        part = "convolution" if m[1] == "conv1" else "normalization"
        return f"resnet.embedder.embedder.{part}.{m[2]}"
    if m := _TV_BLOCK.match(key):
        stage, block, param = int(m[1]) - 1, int(m[2]), m[7]
        prefix = f"resnet.encoder.stages.{stage}.layers.{block}"
        if m[4] is not None:
            return f"{prefix}.layer.{int(m[4]) - 1}.convolution.{param}"
        if m[5] is not None:
            return f"{prefix}.layer.{int(m[5]) - 1}.normalization.{param}"
        return f"{prefix}.shortcut.{'convolution' if m[6] == '0' else 'normalization'}.{param}"
    if m := _TV_FC.match(key):
        return f"classifier.1.{m[1]}"
    raise ValueError(f"not a torchvision ResNet key: {key!r}")


def resnet_config_from_torchvision(state: dict[str, Any]) -> Any:
    """A `ResNetConfig` with the architecture of a torchvision ResNet state dict (depths, widths, block
    type, number of logits). Stride sits in the 3x3 conv (torchvision's "v1.5"), as transformers' default."""
    from transformers import ResNetConfig

    depths: dict[int, int] = {}
    for key in state:
        if m := re.match(r"^layer(\d+)\.(\d+)\.", key):
            stage, block = int(m[1]), int(m[2])
            depths[stage] = max(depths.get(stage, 0), block + 1)
    if not depths or sorted(depths) != list(range(1, len(depths) + 1)):
        raise ValueError(f"state dict has no consecutive layer1..layerN blocks: stages {sorted(depths)}")
    bottleneck = "layer1.0.conv3.weight" in state
    last_bn = "bn3" if bottleneck else "bn2"
    hidden = [int(state[f"layer{s}.{depths[s] - 1}.{last_bn}.weight"].shape[0]) for s in sorted(depths)]
    return ResNetConfig(
        num_channels=int(state["conv1.weight"].shape[1]),
        embedding_size=int(state["conv1.weight"].shape[0]),
        hidden_sizes=hidden,
        depths=[depths[s] for s in sorted(depths)],
        layer_type="bottleneck" if bottleneck else "basic",
        hidden_act="relu",
        downsample_in_first_stage=False,
        downsample_in_bottleneck=False,
        num_labels=int(state["fc.weight"].shape[0]),
    )


def convert_dire_checkpoint(pth_path: str | Path, out_dir: str | Path, trust_pickle: bool = False) -> Path:
    """Convert a DIRE classifier checkpoint (a torchvision ResNet-50 state dict, optionally under a
    ``"model"`` key and with DataParallel's ``module.`` prefixes) into a `ResNetForImageClassification`
    saved with `save_pretrained` in `out_dir`, loadable as `DIREScorer(classifier=out_dir)`.

    Every source key must map and every target weight must be filled (BatchNorm's
    ``num_batches_tracked`` counters may be absent from old checkpoints), with equal shapes; anything
    else raises ValueError. The file is read with ``torch.load(weights_only=True)``; a checkpoint that
    also pickles other objects needs `trust_pickle=True` (only for files you trust).
    """
    try:
        import torch
        from transformers import ResNetForImageClassification
    except ImportError as e:
        raise ImportError(f"convert_dire_checkpoint needs torch and transformers: {DIFFUSERS_HINT}") from e
    ckpt = torch.load(Path(pth_path), map_location="cpu", weights_only=not trust_pickle)
    if isinstance(ckpt, dict) and isinstance(ckpt.get("model"), dict):
        ckpt = ckpt["model"]
    if not isinstance(ckpt, dict) or not ckpt:
        raise ValueError(f"{pth_path}: no state dict found")
    state = {k.removeprefix("module."): v for k, v in ckpt.items()}
    config = resnet_config_from_torchvision(state)
    if config.num_labels == 1:
        config.id2label, config.label2id = {0: "generated"}, {"generated": 0}
    model = ResNetForImageClassification(config).eval()
    target = model.state_dict()
    mapped: dict[str, Any] = {}
    for key, value in state.items():
        new = torchvision_resnet_key(key)
        if new not in target:
            raise ValueError(f"{pth_path}: {key!r} maps to {new!r}, which the ResNet has no parameter for")
        if tuple(target[new].shape) != tuple(value.shape):
            raise ValueError(
                f"{pth_path}: {key!r} has shape {tuple(value.shape)}, {new!r} needs {tuple(target[new].shape)}"
            )
        mapped[new] = value
    missing = [k for k in target if k not in mapped and not k.endswith("num_batches_tracked")]
    if missing:
        raise ValueError(f"{pth_path}: no weights for {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    model.load_state_dict(mapped, strict=False)
    out = Path(out_dir)
    model.save_pretrained(out)
    logger.info("convert_dire_checkpoint: %s -> %s (%d tensors)", pth_path, out, len(mapped))
    return out
