"""Image scorers: CLIP, DINOv2 (transformers and torch.hub), and the offline SSIM and seam scores.

Real-model scorers run tiny random models built with the real classes and loaded from disk like hub
checkpoints (tests/tiny_scorer_models.py); no model class is mocked. Images come from the demo world.
DIRE and the half-precision check are in test_image_scorers_dire.py, which shares this module's fixtures.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from PIL import Image, ImageFilter

from hardneg.core.demo.catalog import PAINT
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene
from hardneg.core.errors import HardnegError
from hardneg.core.records import PathNode
from hardneg.filters.scorers.clip import CLIPScorer
from hardneg.filters.scorers.dinov2 import DinoSimilarity, imagenet_tensor, resize_center_crop
from hardneg.filters.scorers.seam import SeamScore
from hardneg.filters.scorers.ssim import SSIMSimilarity
from tests.helpers import image_negative_row
from tests.tiny_scorer_models import save_tiny_clip, save_tiny_dinov2, save_tiny_dinov2_hub

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


def test_clip_crop_margin_compares_the_changed_phrase_with_the_original_on_the_edited_box(clip_dir, images):
    from hardneg.filters.base import Item
    from hardneg.filters.scorers.clip import ClipFilter, MinMargin, crop_phrases

    path = {"name": "bowl", "id": "a", "attributes": ["white"], "relations": [
        {"name": "next to", "object": {"name": "cup", "id": "b", "attributes": [], "relations": [], "same": []}}],
        "same": []}  # fmt: skip
    bowl = PathNode.from_json(path)
    recolour = image_negative_row({"op": "set_attribute", "object": "a", "from": "white", "to": "brown"}, bowl)
    box = (10, 20, 60, 50)
    assert crop_phrases(recolour, [box]) == [(box, "a photo of white bowl", "a photo of brown bowl")]
    swap = image_negative_row({"op": "swap_names", "objects": ["a", "b"]}, bowl)
    assert [p[1:] for p in crop_phrases(swap, [box, box])] == [("a photo of bowl", "a photo of cup"),
                                                               ("a photo of cup", "a photo of bowl")]  # fmt: skip
    assert crop_phrases(image_negative_row({"op": "flip"}, bowl), []) == []
    assert crop_phrases(image_negative_row({"op": "remove", "object": "a"}, bowl), [box]) == []

    f = ClipFilter(ClipFilter.Options(model=str(clip_dir)))
    item = Item(1, "image_candidate", recolour, "the white bowl", images[0], candidate=images[1], boxes=(box,))
    (scores,) = f.score([item])
    x, y, w, h = box
    crop = images[1].crop((x, y, x + w, y + h))
    new, old = CLIPScorer(model=str(clip_dir)).similarity(
        [(crop, "a photo of brown bowl"), (crop, "a photo of white bowl")]
    )
    assert scores["clip_crop_margin"] == pytest.approx(new - old, abs=1e-5)
    keep, why = ClipFilter.keep({"clip_margin": 1.0, "clip_crop_margin": -0.01}, MinMargin())
    assert not keep and "CLIP crop" in why
    assert ClipFilter.keep({"clip_margin": 1.0, "clip_crop_margin": -0.01}, MinMargin(min_crop_margin=None))[0]


def test_clip_margins_sign_convention(clip_dir, images):
    scorer = CLIPScorer(model=str(clip_dir))
    img, other = images[0], images[1]
    pos, neg = TEXTS[0], TEXTS[1]
    # the same text on both sides, or the same image on both sides: exactly no preference
    assert scorer.text_margins([(img, pos, pos)])[0] == 0.0
    assert scorer.image_margins([(img, img, pos)])[0] == 0.0
    # swapping positive and negative flips the sign; margin = positive minus negative similarity
    m = scorer.text_margins([(img, pos, neg)])[0]
    assert scorer.text_margins([(img, neg, pos)])[0] == pytest.approx(-m, abs=1e-6)
    s_pos, s_neg = scorer.similarity([(img, pos), (img, neg)])
    assert m == pytest.approx(s_pos - s_neg, abs=1e-6) and m != 0.0
    im = scorer.image_margins([(img, other, pos)])[0]
    assert scorer.image_margins([(other, img, pos)])[0] == pytest.approx(-im, abs=1e-6)
    s_img, s_other = scorer.similarity([(img, pos), (other, pos)])
    assert im == pytest.approx(s_img - s_other, abs=1e-6)
    # batched forms agree with the single ones
    assert scorer.text_margins([(img, pos, neg), (other, neg, pos)]) == pytest.approx(
        [m, scorer.text_margins([(other, neg, pos)])[0]], abs=1e-6
    )
    assert scorer.image_margins([(img, other, pos), (img, img, neg)]) == pytest.approx([im, 0.0], abs=1e-6)


def test_clip_loads_lazily_and_checks_arguments(tmp_path):
    lazy = CLIPScorer(model=str(tmp_path / "missing"))  # nothing loaded yet: no error
    assert lazy.similarity([]) == []
    with pytest.raises(HardnegError, match="missing does not load"):
        lazy.similarity([(Image.new("RGB", (8, 8)), "a cup")])
    with pytest.raises(ValueError, match="batch_size"):
        CLIPScorer(model="x", batch_size=0)
    with pytest.raises(HardnegError, match="does not load: dtype"):
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
    i = next(i for i, a in enumerate(attrs) if a in PAINT)
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
    assert max(seamless) < 0.2 < min(pasted)  # FineCops-Ref's realism threshold sits between them
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
