"""A tiny real `OwlViTForObjectDetection` whose scores the tests control: it detects red.

Built from the real classes and saved with `save_pretrained`, like any hub checkpoint, then its weights are
set by hand so that its output is a known function of the image:

- the patch embedding reads each 16 px patch's mean (red - green) minus a threshold into a +-pattern over
  the 4 hidden units; the position embeddings are zero; every encoder layer's attention and MLP outputs
  are zero, so each layer is the identity (the residuals carry the embedding through);
- after OWL-ViT's layer norms and its class-token merge, a patch reads one fixed vector if it is red and
  its negation if not; the class head ignores the text (its projection is zero) and its logit shift reads
  that vector: +4 for a red patch, -4 otherwise, whatever the query;
- the box head outputs zero, so every patch proposes its own grid cell (OWL-ViT's box bias).

So "detections" are the grid cells of red patches with score sigmoid(4) = 0.98, everything else
sigmoid(-4) = 0.018: draw a red object where a scene graph has none, and the detector finds a twin.
"""

from __future__ import annotations

from pathlib import Path

import torch

IMAGE = 96  # px the processor resizes to; 16 px patches: a 6 x 6 grid
PATCH = 16
LOGIT = 4.0
THRESHOLD = 0.5  # in CLIP-normalised (red - green): gray backgrounds read about -0.1, pure red about 3.7


def save_red_detector(path: Path) -> Path:
    from transformers import OwlViTConfig, OwlViTForObjectDetection, OwlViTImageProcessor, OwlViTProcessor

    from tests.tiny_scorer_models import tiny_clip_tokenizer

    tokenizer = tiny_clip_tokenizer()
    text = {
        "vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "max_position_embeddings": 77, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
    }  # fmt: skip
    vision = {
        "hidden_size": 4, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1,
        "image_size": IMAGE, "patch_size": PATCH,
    }  # fmt: skip
    torch.manual_seed(0)
    model = OwlViTForObjectDetection(OwlViTConfig(text_config=text, vision_config=vision, projection_dim=16)).eval()
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0])
    with torch.no_grad():
        vm = model.owlvit.vision_model
        w = torch.zeros_like(vm.embeddings.patch_embedding.weight)  # [4, 3, 16, 16]
        for d in range(4):
            w[d, 0] = sign[d] / (PATCH * PATCH)  # + mean red
            w[d, 1] = -sign[d] / (PATCH * PATCH)  # - mean green
        vm.embeddings.patch_embedding.weight.copy_(w)
        if vm.embeddings.patch_embedding.bias is not None:
            vm.embeddings.patch_embedding.bias.copy_(-THRESHOLD * sign)
        vm.embeddings.position_embedding.weight.zero_()
        vm.embeddings.class_embedding.copy_(torch.tensor([1.0, 1.0, -1.0, -1.0]))
        for layer in vm.encoder.layers:
            layer.self_attn.out_proj.weight.zero_()
            layer.self_attn.out_proj.bias.zero_()
            layer.mlp.fc2.weight.zero_()
            layer.mlp.fc2.bias.zero_()
        for ln in (vm.pre_layernorm, vm.post_layernorm, model.layer_norm):
            ln.weight.fill_(1.0)
            ln.bias.zero_()
        # red patch: [1,-1,1,-1] * class [1,1,-1,-1] = [1,-1,-1,1]; any other patch: its negation
        head = model.class_head
        head.dense0.weight.zero_()
        head.dense0.bias.zero_()
        head.logit_shift.weight.copy_(torch.tensor([[1.0, -1.0, -1.0, 1.0]]) * LOGIT / 4)
        head.logit_shift.bias.zero_()
        head.logit_scale.weight.zero_()
        head.logit_scale.bias.zero_()
        model.box_head.dense2.weight.zero_()
        model.box_head.dense2.bias.zero_()
    image_processor = OwlViTImageProcessor(
        size={"height": IMAGE, "width": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE}
    )
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    OwlViTProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(path)
    return path
