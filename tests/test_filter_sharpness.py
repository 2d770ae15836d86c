"""The sharpness filter (the worked example of adding a filter): a blurred edit scores low and is dropped,
a faithful one passes, a flip is not scored, and the registry and config reach it by name."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from hardneg.filters.base import Item
from hardneg.filters.decide import Rule, decide_image
from hardneg.filters.registry import build, filter_class, thresholds
from tests.helpers import image_negative_row


def _textured(seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8))


def test_a_blurred_edit_scores_low_and_is_dropped():
    source = _textured()
    box = (40, 30, 60, 50)
    blurred = source.copy()
    x, y, w, h = box
    region = source.crop((x, y, x + w, y + h)).filter(ImageFilter.GaussianBlur(3))
    blurred.paste(region, (x, y))
    sharp = source.copy()
    sharp.paste(_textured(1).crop((0, 0, w, h)), (x, y))  # a different but equally detailed patch
    f = build("sharpness", {})
    items = [
        Item(1, "image_candidate", image_negative_row({}), "the ball", source, candidate=blurred, boxes=(box,)),
        Item(1, "image_candidate", image_negative_row({}), "the ball", source, candidate=sharp, boxes=(box,)),
        Item(2, "image_candidate", image_negative_row({}), "the ball", source, candidate=source.transpose(0), boxes=()),
    ]
    scores = f.score(items)
    assert scores[0]["sharpness_ratio"] < 0.1
    assert 0.7 < scores[1]["sharpness_ratio"] < 1.4
    assert scores[2] == {}  # a flip blurs nothing: not scored
    rule = Rule(filter_class("sharpness"), thresholds("sharpness", {"min_ratio": 0.25}))
    d = decide_image([{f.version: s} for s in scores[:2]], [rule])
    assert d.keep and d.candidate == 1
    assert "sharpness ratio" in dict(d.losers)[0]
