"""DIRE realism scoring (filters/scorers/dire.py): crop maths, DDIM inversion, scores, and the conversion of
DIRE's torchvision checkpoints (filters/scorers/dire_checkpoint.py); then the half-precision check of CLIP,
DINOv2 and DIRE together, which needs all three tiny models.

Tiny random models built with the real classes, as in test_image_scorers.py, whose fixtures (the demo
world's graphs and images, the CLIP and DINOv2 models, one torch thread) are shared here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from hardneg.core.errors import HardnegError
from hardneg.filters.scorers.clip import CLIPScorer
from hardneg.filters.scorers.dinov2 import DinoSimilarity
from hardneg.filters.scorers.dire import (
    DIREScorer,
    convert_dire_checkpoint,
    crop_box,
    jpeg_roundtrip,
    torchvision_resnet_key,
)
from tests.test_image_scorers import TEXTS, _box
from tests.test_image_scorers import clip_dir as clip_dir  # the shared fixtures
from tests.test_image_scorers import dino_dir as dino_dir
from tests.test_image_scorers import graphs as graphs
from tests.test_image_scorers import images as images
from tests.test_image_scorers import one_thread as one_thread
from tests.tiny_scorer_models import save_tiny_resnet, save_tiny_unet, tiny_resnet_config

# ----------------------------------------------------------------------------------------------- DIRE


@pytest.fixture(scope="module")
def dire_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-dire")
    return {
        "unet": save_tiny_unet(root / "unet"),
        "exact": save_tiny_unet(root / "exact", constant_eps=0.3),
        "resnet": save_tiny_resnet(root / "resnet"),
    }


def _dire(dirs, unet="unet", **kw):
    kw.setdefault("steps", 4)
    kw.setdefault("classifier_resize", 32)  # DIRE's 256/224 at toy size, for speed
    kw.setdefault("classifier_crop", 28)
    return DIREScorer(unet=str(dirs[unet]), classifier=str(dirs["resnet"]), **kw)


@pytest.mark.parametrize(
    ("box", "size", "pad", "min_side", "expected"),
    [
        ((100, 100, 40, 20), (500, 400), 0.5, 0, (80, 70, 80, 80)),  # side 2 x 40, centred on (120, 110)
        ((100, 100, 40, 20), (500, 400), 0.5, 128, (56, 46, 128, 128)),  # at least min_side
        ((0, 0, 40, 20), (500, 400), 0.5, 0, (0, 0, 80, 80)),  # shifted inside at the top-left corner
        ((480, 390, 20, 10), (500, 400), 1.0, 0, (440, 340, 60, 60)),  # and at the bottom-right
        ((10, 50, 300, 100), (500, 400), 0.5, 0, (0, 0, 400, 400)),  # capped at the shorter side, shifted in
        ((0, 0, 500, 400), (500, 400), 0.5, 0, (50, 0, 400, 400)),  # box wider than the square: centred
        ((100, 100, 41, 20), (500, 400), 0.0, 0, (100, 90, 41, 41)),  # pad 0: the box's longer side
    ],
)
def test_crop_box_maths(box, size, pad, min_side, expected):
    got = crop_box(box, size[0], size[1], pad, min_side)
    assert got == expected
    x, y, w, h = got
    assert w == h and x >= 0 and y >= 0 and x + w <= size[0] and y + h <= size[1]


def test_crop_box_rejects_bad_input():
    with pytest.raises(ValueError, match="empty box"):
        crop_box((1, 1, 0, 5), 10, 10, 0.5)
    with pytest.raises(ValueError, match="pad"):
        crop_box((1, 1, 5, 5), 10, 10, -0.1)


def test_dire_prepare_crops_and_encodes_both_images_the_same_way(dire_dirs, images, graphs):
    scorer = _dire(dire_dirs, jpeg_quality=80)
    original = images[1]
    box = _box(next(iter(graphs[1]["objects"].values())))
    # the candidate is the original decoded from JPEG at another quality: same content, other encoding
    candidate = jpeg_roundtrip(original, 30)
    orig_crop, cand_crop, crop = scorer.prepare(original, candidate, box)
    assert crop == crop_box(box, original.width, original.height, 0.5, 16)  # min side: the UNet's 16 px
    x, y, w, h = crop
    for image, got in ((original, orig_crop), (candidate, cand_crop)):
        resized = image.crop((x, y, x + w, y + h)).resize((16, 16), Image.Resampling.BICUBIC)
        assert got.size == (16, 16)
        assert np.array_equal(np.asarray(got), np.asarray(jpeg_roundtrip(resized, 80)))
        assert not np.array_equal(np.asarray(got), np.asarray(resized))  # the JPEG pass did change pixels
    # identical inputs give identical crops
    a, b, _ = scorer.prepare(original, original.copy(), box)
    assert np.array_equal(np.asarray(a), np.asarray(b))
    # jpeg_quality=None leaves the resized crops as they are
    raw = _dire(dire_dirs, jpeg_quality=None).prepare(original, candidate, box)[1]
    expected = candidate.crop((x, y, x + w, y + h)).resize((16, 16), Image.Resampling.BICUBIC)
    assert np.array_equal(np.asarray(raw), np.asarray(expected))


def test_ddim_inversion_round_trip_is_exact_for_a_constant_epsilon_model(dire_dirs):
    # With epsilon independent of x, DDIM inversion is exact at any step count: this checks that the
    # inverse and forward schedules pair up step by step (and that the sigma half is ignored).
    constant = torch.full((1, 3, 16, 16), 0.2)
    noisy = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0)) * 2 - 1
    for steps in (1, 4, 20):
        scorer = _dire(dire_dirs, unet="exact", steps=steps)
        for x in (constant, noisy):
            assert torch.allclose(scorer.reconstruct(x), x, atol=1e-4)
    eps = scorer._eps(constant, torch.tensor(500))
    assert eps.shape == constant.shape and torch.allclose(eps, torch.full_like(eps, 0.3))
    maps = scorer.dire_maps([Image.new("RGB", (16, 16), (150, 60, 30))])
    assert maps.dtype == np.uint8 and maps.shape == (1, 16, 16, 3) and maps.max() == 0


def test_dire_scores_are_probabilities_and_deterministic(dire_dirs, images, graphs):
    objs = [next(iter(g["objects"].values())) for g in graphs]
    items = [(im, im, _box(o)) for im, o in zip(images, objs, strict=True)]
    items.append((images[0], jpeg_roundtrip(images[0], 20), _box(objs[0])))
    scorer = _dire(dire_dirs, batch_size=2)
    got = scorer.score(items)
    assert len(got) == len(items) and all(0.0 <= p <= 1.0 for p in got)
    assert _dire(dire_dirs, batch_size=2).score(items) == got  # a fresh scorer, the same numbers
    # a random UNet does not reconstruct real crops: the DIRE map is not empty
    crop = scorer.prepare(*items[0])[1]
    assert scorer.dire_maps([crop]).max() > 0
    detailed = scorer.score_detailed(items[:2])
    for d, (original, _, box) in zip(detailed, items[:2], strict=True):
        assert d.p_original == pytest.approx(d.p_candidate, abs=1e-6)  # candidate == original here
        assert d.crop == crop_box(box, original.width, original.height, 0.5, 16)
    assert scorer.score([]) == []
    assert "steps=4" in scorer.version and "jpeg=95" in scorer.version


def test_dire_checks_arguments_and_models(dire_dirs, tmp_path):
    with pytest.raises(ValueError, match="steps"):
        DIREScorer(unet="u", classifier="c", steps=0)
    with pytest.raises(ValueError, match="jpeg_quality"):
        DIREScorer(unet="u", classifier="c", jpeg_quality=101)
    from transformers import ResNetForImageClassification

    two = tiny_resnet_config()
    two.num_labels = 2
    ResNetForImageClassification(two).save_pretrained(tmp_path / "two")
    with pytest.raises(HardnegError, match=r"does not load: .*one logit"):
        DIREScorer(unet=str(dire_dirs["unet"]), classifier=str(tmp_path / "two"))._load()
    with pytest.raises(ValueError, match="candidate is"):
        _dire(dire_dirs).prepare(Image.new("RGB", (40, 40)), Image.new("RGB", (41, 40)), (1, 1, 5, 5))


# ------------------------------------------------------------------- DIRE checkpoint conversion


def _torchvision_keys(depths, bottleneck=True) -> list[tuple[str, str]]:
    """(torchvision key, kind) of a torchvision ResNet, written out from torchvision's module layout."""
    bn = ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    keys = [("conv1.weight", "conv")] + [(f"bn1.{p}", "bn") for p in bn]
    convs = 3 if bottleneck else 2
    for s, depth in enumerate(depths, start=1):
        for b in range(depth):
            for k in range(1, convs + 1):
                keys.append((f"layer{s}.{b}.conv{k}.weight", "conv"))
                keys += [(f"layer{s}.{b}.bn{k}.{p}", "bn") for p in bn]
            if b == 0:
                keys.append((f"layer{s}.{b}.downsample.0.weight", "conv"))
                keys += [(f"layer{s}.{b}.downsample.1.{p}", "bn") for p in bn]
    return [*keys, ("fc.weight", "fc"), ("fc.bias", "fc")]


def _torchvision_forward(sd: dict[str, torch.Tensor], x: torch.Tensor, depths) -> torch.Tensor:
    """torchvision's ResNet (v1.5 bottlenecks) in functional form, reading torchvision key names."""
    f = torch.nn.functional

    def bn(prefix, t):
        return f.batch_norm(
            t, sd[f"{prefix}.running_mean"], sd[f"{prefix}.running_var"], sd[f"{prefix}.weight"], sd[f"{prefix}.bias"]
        )

    x = f.max_pool2d(f.relu(bn("bn1", f.conv2d(x, sd["conv1.weight"], stride=2, padding=3))), 3, 2, 1)
    for s, depth in enumerate(depths, start=1):
        for b in range(depth):
            p = f"layer{s}.{b}"
            stride = 2 if (s > 1 and b == 0) else 1
            out = f.relu(bn(f"{p}.bn1", f.conv2d(x, sd[f"{p}.conv1.weight"])))
            out = f.relu(bn(f"{p}.bn2", f.conv2d(out, sd[f"{p}.conv2.weight"], stride=stride, padding=1)))
            out = bn(f"{p}.bn3", f.conv2d(out, sd[f"{p}.conv3.weight"]))
            if f"{p}.downsample.0.weight" in sd:
                x = bn(f"{p}.downsample.1", f.conv2d(x, sd[f"{p}.downsample.0.weight"], stride=stride))
            x = f.relu(out + x)
    return f.linear(x.mean((2, 3)), sd["fc.weight"], sd["fc.bias"])


def test_convert_dire_checkpoint_maps_every_key_and_round_trips_weights(tmp_path):
    from transformers import ResNetForImageClassification

    config = tiny_resnet_config()
    target = ResNetForImageClassification(config).state_dict()
    gen = torch.Generator().manual_seed(0)
    source: dict[str, torch.Tensor] = {}
    for key, kind in _torchvision_keys(config.depths):
        shape = target[torchvision_resnet_key(key)].shape
        if key.endswith("num_batches_tracked"):
            source[key] = torch.tensor(7)
        elif key.endswith("running_var"):
            source[key] = torch.rand(shape, generator=gen) + 0.5
        else:
            source[key] = torch.randn(shape, generator=gen) * (0.2 if kind == "conv" else 1.0)
    assert {torchvision_resnet_key(k) for k in source} == set(target)  # every key maps, onto every key
    # DIRE's trainer saves {"model": state_dict}; DataParallel adds "module."
    torch.save({"model": {f"module.{k}": v for k, v in source.items()}, "total_steps": 3}, tmp_path / "dire.pth")
    out = convert_dire_checkpoint(tmp_path / "dire.pth", tmp_path / "converted")
    converted = ResNetForImageClassification.from_pretrained(out).eval()
    assert converted.config.num_labels == 1 and converted.config.depths == config.depths
    state = converted.state_dict()
    for key, value in source.items():
        assert torch.equal(state[torchvision_resnet_key(key)], value), key
    # and the converted network computes what the torchvision one computes
    x = torch.randn(2, 3, 64, 64, generator=gen)
    with torch.inference_mode():
        assert torch.allclose(
            converted(pixel_values=x).logits, _torchvision_forward(source, x, config.depths), atol=1e-4
        )


def test_convert_covers_a_full_resnet50_and_rejects_foreign_keys(tmp_path):
    from transformers import ResNetConfig, ResNetForImageClassification

    with torch.device("meta"):  # ResNet-50's names and shapes, without allocating its weights
        model = ResNetForImageClassification(
            ResNetConfig(
                depths=[3, 4, 6, 3], hidden_sizes=[256, 512, 1024, 2048], layer_type="bottleneck", num_labels=1
            )
        )
    keys = [k for k, _ in _torchvision_keys([3, 4, 6, 3])]
    assert len(keys) == len(model.state_dict()) == 320
    assert {torchvision_resnet_key(k) for k in keys} == set(model.state_dict())
    with pytest.raises(ValueError, match="not a torchvision ResNet key"):
        torchvision_resnet_key("layer1.0.se.fc1.weight")
    torch.save({"conv1.weight": torch.zeros(8, 3, 7, 7), "head.weight": torch.zeros(1)}, tmp_path / "bad.pth")
    with pytest.raises(ValueError):
        convert_dire_checkpoint(tmp_path / "bad.pth", tmp_path / "out")


def test_dire_runs_on_a_converted_classifier(dire_dirs, tmp_path, images, graphs):
    from transformers import ResNetForImageClassification

    model = ResNetForImageClassification.from_pretrained(dire_dirs["resnet"])
    back = {}
    names = {torchvision_resnet_key(k): k for k, _ in _torchvision_keys(tiny_resnet_config().depths)}
    for key, value in model.state_dict().items():
        back[names[key]] = value
    torch.save(back, tmp_path / "plain.pth")
    converted = convert_dire_checkpoint(tmp_path / "plain.pth", tmp_path / "cls")
    box = _box(next(iter(graphs[0]["objects"].values())))
    items = [(images[0], images[0], box)]
    direct = _dire(dire_dirs).score(items)
    via = DIREScorer(
        unet=str(dire_dirs["unet"]), classifier=str(converted), steps=4, classifier_resize=32, classifier_crop=28
    ).score(items)
    assert via == pytest.approx(direct, abs=1e-6)


def test_half_precision_paths_agree_with_fp32(clip_dir, dino_dir, dire_dirs, images, graphs):
    # CUDA runs fp16; the same casts run on CPU here, so the dtype plumbing is exercised without a GPU
    pairs = [(images[0], TEXTS[0]), (images[1], TEXTS[1])]
    full = CLIPScorer(model=str(clip_dir)).similarity(pairs)
    assert CLIPScorer(model=str(clip_dir), dtype="float16").similarity(pairs) == pytest.approx(full, abs=2e-2)
    dino_pairs = [(images[0], images[1])]
    full = DinoSimilarity(model=str(dino_dir), loader="transformers").similarity(dino_pairs)
    half = DinoSimilarity(model=str(dino_dir), loader="transformers", dtype="float16").similarity(dino_pairs)
    assert half == pytest.approx(full, abs=2e-2)
    items = [(images[0], images[0], _box(next(iter(graphs[0]["objects"].values()))))]
    half = _dire(dire_dirs, dtype="float16").score(items)
    assert len(half) == 1 and 0.0 <= half[0] <= 1.0
