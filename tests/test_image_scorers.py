"""Image scorers: CLIP, DINOv2 (transformers and torch.hub), DIRE, and the offline SSIM and seam scores.

Real-model scorers run tiny random models built with the real classes and loaded from disk like hub
checkpoints (tests/tiny_scorer_models.py); no model class is mocked. Images come from the demo world.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter

from backends.clip_scorer import CLIPScorer
from backends.dino import DinoSimilarity, imagenet_tensor, resize_center_crop
from backends.offline_scorers import SeamScore, SSIMSimilarity
from backends.realism import (
    DIREScorer,
    convert_dire_checkpoint,
    crop_box,
    jpeg_roundtrip,
    torchvision_resnet_key,
)
from core.demo_world import COLORS, generate_graphs, render_scene
from tests.tiny_scorer_models import (
    save_tiny_clip,
    save_tiny_dinov2,
    save_tiny_dinov2_hub,
    save_tiny_resnet,
    save_tiny_unet,
    tiny_resnet_config,
)

TEXTS = ["the red ball", "a photo of the blue cup on a plate", "the green plate left of the cup", "zebra!"]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny models run fastest on one thread, and two OpenMP threads on a shared 2-core box can be
    # 100x slower than one; restored after the module.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def graphs() -> list[dict]:
    return list(generate_graphs(4, seed=1).values())


@pytest.fixture(scope="module")
def images(graphs) -> list[Image.Image]:
    return [render_scene(g) for g in graphs]


def _box(obj: dict) -> tuple[int, int, int, int]:
    return (obj["x"], obj["y"], obj["w"], obj["h"])


# ---------------------------------------------------------------------------------------------- CLIP


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory):
    return save_tiny_clip(tmp_path_factory.mktemp("tiny-clip"))


def _manual_clip(clip_dir, pairs):
    from transformers import AutoProcessor, CLIPModel

    processor = AutoProcessor.from_pretrained(clip_dir)
    model = CLIPModel.from_pretrained(clip_dir).eval()
    out = []
    with torch.inference_mode():
        for image, text in pairs:
            enc = processor(text=[text], images=[image], return_tensors="pt", padding=True)
            img = model.get_image_features(pixel_values=enc["pixel_values"]).pooler_output
            txt = model.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
            a, b = (
                img / img.norm(dim=-1, keepdim=True),
                txt.pooler_output / txt.pooler_output.norm(dim=-1, keepdim=True),
            )
            out.append(float((a * b).sum()))
    return out


def test_clip_similarity_matches_a_manual_forward_pass(clip_dir, images):
    pairs = [(images[i % 3], t) for i, t in enumerate(TEXTS)] + [(images[3], TEXTS[0])]
    got = CLIPScorer(model=str(clip_dir), batch_size=2).similarity(pairs)
    assert all(math.isfinite(s) and -1.0 <= s <= 1.0 for s in got)
    assert got == pytest.approx(_manual_clip(clip_dir, pairs), abs=1e-5)


def test_clip_is_deterministic_and_batch_size_independent(clip_dir, images):
    pairs = [(im, t) for im in images for t in TEXTS]
    one = CLIPScorer(model=str(clip_dir), batch_size=1).similarity(pairs)
    many = CLIPScorer(model=str(clip_dir), batch_size=7)
    assert many.similarity(pairs) == pytest.approx(one, abs=1e-5)
    assert many.similarity(pairs) == many.similarity(pairs)
    assert many.version == f"clip:{clip_dir}@v1"


def test_clip_encodes_a_shared_image_once(clip_dir, images):
    scorer = CLIPScorer(model=str(clip_dir), batch_size=32)
    model = scorer._load()[3]
    seen: list[int] = []  # batch sizes the vision tower is called with
    hook = model.vision_model.register_forward_pre_hook(
        lambda m, args, kwargs: seen.append(kwargs["pixel_values"].shape[0]), with_kwargs=True
    )
    try:
        sims = scorer.similarity([(images[0], t) for t in TEXTS] + [(images[1], TEXTS[0])])
    finally:
        hook.remove()
    assert sum(seen) == 2  # two distinct images, five pairs
    assert len(sims) == 5


def test_clip_margins_sign_convention(clip_dir, images):
    scorer = CLIPScorer(model=str(clip_dir))
    img, other = images[0], images[1]
    pos, neg = TEXTS[0], TEXTS[1]
    # the same text on both sides, or the same image on both sides: exactly no preference
    assert scorer.text_margin(img, pos, pos) == 0.0
    assert scorer.image_margin(img, img, pos) == 0.0
    # swapping positive and negative flips the sign; margin = positive minus negative similarity
    m = scorer.text_margin(img, pos, neg)
    assert scorer.text_margin(img, neg, pos) == pytest.approx(-m, abs=1e-6)
    s_pos, s_neg = scorer.similarity([(img, pos), (img, neg)])
    assert m == pytest.approx(s_pos - s_neg, abs=1e-6) and m != 0.0
    im = scorer.image_margin(img, other, pos)
    assert scorer.image_margin(other, img, pos) == pytest.approx(-im, abs=1e-6)
    s_img, s_other = scorer.similarity([(img, pos), (other, pos)])
    assert im == pytest.approx(s_img - s_other, abs=1e-6)
    # batched forms agree with the single ones
    assert scorer.text_margins([(img, pos, neg), (other, neg, pos)]) == pytest.approx(
        [m, scorer.text_margin(other, neg, pos)], abs=1e-6
    )
    assert scorer.image_margins([(img, other, pos), (img, img, neg)]) == pytest.approx([im, 0.0], abs=1e-6)


def test_clip_loads_lazily_and_checks_arguments(tmp_path):
    lazy = CLIPScorer(model=str(tmp_path / "missing"))  # nothing loaded yet: no error
    assert lazy.similarity([]) == []
    with pytest.raises(OSError):
        lazy.similarity([(Image.new("RGB", (8, 8)), "a cup")])
    with pytest.raises(ValueError, match="batch_size"):
        CLIPScorer(model="x", batch_size=0)
    with pytest.raises(ValueError, match="dtype"):
        CLIPScorer(model="x", dtype="float8")._load()


# --------------------------------------------------------------------------------------------- DINOv2


@pytest.fixture(scope="module")
def dino_dir(tmp_path_factory):
    return save_tiny_dinov2(tmp_path_factory.mktemp("tiny-dinov2"))


@pytest.fixture(scope="module")
def hub_dir(tmp_path_factory):
    return save_tiny_dinov2_hub(tmp_path_factory.mktemp("tiny-dinov2-hub"))


def _similarity_properties(scorer, images):
    a, b, c = images[0], images[1], images[0].copy()
    sims = scorer.similarity([(a, a), (a, c), (a, b), (b, a)])
    assert sims[0] == pytest.approx(1.0, abs=1e-4)
    assert sims[1] == pytest.approx(1.0, abs=1e-4)  # an equal copy is a different object, same pixels
    assert sims[2] == pytest.approx(sims[3], abs=1e-6)  # symmetric
    assert sims[2] < sims[0] - 1e-3  # a different picture is less alike
    assert all(-1.0 <= s <= 1.0 for s in sims)
    return sims


def test_dino_transformers_loader(dino_dir, images):
    scorer = DinoSimilarity(model=str(dino_dir), loader="transformers", batch_size=2)
    sims = _similarity_properties(scorer, images)
    from transformers import AutoImageProcessor, Dinov2Model

    processor = AutoImageProcessor.from_pretrained(dino_dir)
    model = Dinov2Model.from_pretrained(dino_dir).eval()
    with torch.inference_mode():
        emb = model(pixel_values=processor(images=images[:2], return_tensors="pt")["pixel_values"]).pooler_output
    emb = torch.nn.functional.normalize(emb, dim=-1)
    assert sims[2] == pytest.approx(float(emb[0] @ emb[1]), abs=1e-5)
    one = DinoSimilarity(model=str(dino_dir), loader="transformers", batch_size=1)
    assert one.similarity([(images[2], images[3])]) == pytest.approx(
        scorer.similarity([(images[2], images[3])]), abs=1e-5
    )


def test_dino_torch_hub_local_loader(hub_dir, images):
    scorer = DinoSimilarity(model="dinov2_tiny", loader="torch.hub", repo_or_dir=str(hub_dir), source="local")
    sims = _similarity_properties(scorer, images)
    # the hub path embeds DINOv2's evaluation transform of each image with the entry point's forward()
    model = torch.hub.load(str(hub_dir), "dinov2_tiny", source="local").eval()
    pixels = imagenet_tensor([resize_center_crop(im, 256, 224) for im in images[:2]], torch)
    with torch.inference_mode():
        emb = torch.nn.functional.normalize(model(pixels), dim=-1)
    assert sims[2] == pytest.approx(float(emb[0] @ emb[1]), abs=1e-5)
    assert "dinov2_tiny" in scorer.version


def test_dinov2_transform_matches_the_reference_processor(images):
    from transformers import BitImageProcessor

    # a size whose crop offsets are whole numbers, where torchvision's round and transformers' floor agree
    img = images[0].resize((560, 320))
    reference = BitImageProcessor(
        size={"shortest_edge": 256},
        crop_size={"height": 224, "width": 224},
        resample=3,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    )(images=[img], return_tensors="pt")["pixel_values"]
    ours = imagenet_tensor([resize_center_crop(img, 256, 224)], torch)
    assert ours.shape == (1, 3, 224, 224)
    assert torch.allclose(ours, reference, atol=1e-5)


def test_dino_checks_arguments():
    with pytest.raises(ValueError, match="loader"):
        DinoSimilarity(loader="timm")
    with pytest.raises(ValueError, match="crop_size"):
        DinoSimilarity(crop_size=300)
    assert DinoSimilarity().model_name == "dinov2_vitl14"
    assert DinoSimilarity(loader="transformers").model_name == "facebook/dinov2-large"


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
    with pytest.raises(ValueError, match="one logit"):
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


# ----------------------------------------------------------------------------------------- offline


def test_ssim_is_one_for_identical_images_and_falls_with_noise(images):
    scorer = SSIMSimilarity()
    img = images[0]
    rng = np.random.default_rng(0)
    base = np.asarray(img, dtype=np.float32)
    noisy = [
        Image.fromarray(np.clip(base + rng.normal(0, sigma, base.shape), 0, 255).astype(np.uint8))
        for sigma in (2, 8, 32)
    ]
    sims = scorer.similarity([(img, img), (img, img.copy())] + [(img, n) for n in noisy])
    assert sims[0] == pytest.approx(1.0, abs=1e-9) and sims[1] == pytest.approx(1.0, abs=1e-9)
    assert sims[0] > sims[2] > sims[3] > sims[4] >= -1.0
    assert scorer.similarity([(noisy[1], img)]) == pytest.approx([sims[3]], abs=1e-9)  # symmetric
    color = SSIMSimilarity(color=True, max_side=128).similarity([(img, img), (img, noisy[2])])
    assert color[0] == pytest.approx(1.0, abs=1e-9) and color[1] < 0.9
    with pytest.raises(ValueError, match="candidate is"):
        scorer.similarity([(img, img.resize((10, 10)))])


def _hue_rotated(image: Image.Image, box, degrees: int, feather: float) -> Image.Image:
    """The box's hue rotated by `degrees`, blended in through a mask blurred by `feather` px (0 = hard)."""
    h, s, v = image.convert("HSV").split()
    h = h.point(lambda p: (p + round(degrees * 256 / 360)) % 256)
    rotated = Image.merge("HSV", (h, s, v)).convert("RGB")
    x, y, w, hh = box
    mask = Image.new("L", image.size, 0)
    mask.paste(255, (x, y, x + w, y + hh))
    if feather:
        mask = mask.filter(ImageFilter.GaussianBlur(feather))
    return Image.composite(rotated, image, mask)


def _recolored(graph: dict, oid: str) -> dict:
    g = copy.deepcopy(graph)
    attrs = g["objects"][oid]["attributes"]
    i = next(i for i, a in enumerate(attrs) if a in COLORS)
    attrs[i] = "green" if attrs[i] != "green" else "red"
    return g


def test_seam_score_separates_pasted_blocks_from_seamless_edits(graphs, images):
    scorer = SeamScore()
    seamless, pasted = [], []
    for k, (graph, image) in enumerate(zip(graphs, images, strict=True)):
        donor_graph, donor_image = graphs[(k + 1) % 4], images[(k + 1) % 4]
        donor = next(iter(donor_graph["objects"].values()))
        for oid in list(graph["objects"])[:3]:
            box = _box(graph["objects"][oid])
            # a re-render with the object in a new colour changes only its own pixels: an ideal edit
            rerendered = render_scene(_recolored(graph, oid))
            feathered = _hue_rotated(image, box, 120, feather=3)
            # copy-paste of another scene's object into the 6 px-dilated box, no blending: a hard seam
            d = 6
            x0, y0 = max(0, box[0] - d), max(0, box[1] - d)
            x1, y1 = min(image.width, box[0] + box[2] + d), min(image.height, box[1] + box[3] + d)
            dx, dy, dw, dh = _box(donor)
            patch = donor_image.crop((dx - d, dy - d, dx + dw + d, dy + dh + d)).resize((x1 - x0, y1 - y0))
            block = image.copy()
            block.paste(patch, (x0, y0))
            identical, *soft = scorer.score([(image, image, box), (image, rerendered, box), (image, feathered, box)])
            assert identical == 0.0
            seamless += soft
            pasted += scorer.score([(image, block, box)])
    assert all(0.0 <= s <= 1.0 for s in seamless + pasted)
    assert max(seamless) < 0.2 < min(pasted)  # SPEC 1.6's realism threshold sits between them
    assert min(pasted) - max(seamless) > 0.08 and np.median(pasted) > 0.5


def test_seam_score_sees_a_hard_recolour_but_not_a_feathered_one(graphs, images):
    scorer = SeamScore()
    graph, image = graphs[1], images[1]
    box = _box(graph["objects"]["3000010"])  # a ball on a patterned floor
    hard, soft = scorer.score(
        [(image, _hue_rotated(image, box, 120, 0), box), (image, _hue_rotated(image, box, 120, 4), box)]
    )
    assert hard > 0.2 > soft


def test_seam_score_checks_its_input(images):
    scorer = SeamScore()
    with pytest.raises(ValueError, match="candidate is"):
        scorer.score([(images[0], images[0].resize((50, 50)), (1, 1, 5, 5))])
    with pytest.raises(ValueError, match="outside"):
        scorer.score([(images[0], images[0], (5000, 5000, 5, 5))])
    # a box covering the whole image has no outline inside it: nothing to see
    w, h = images[0].size
    assert scorer.score([(images[0], Image.new("RGB", (w, h)), (0, 0, w, h))]) == [0.0]
