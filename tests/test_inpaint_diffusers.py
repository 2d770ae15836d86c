"""`DiffusersInpainter` against a tiny random Stable Diffusion inpainting pipeline built offline.

Random weights paint noise: these tests check the contract (sizes, exact paste-back, batching, seeding,
region order, PowerPaint tokens), not image quality.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
pytest.importorskip("diffusers", reason="diffusers not installed (pip install 'diffusers>=0.42,<0.43')")
import torch

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.backends.inpaint_diffusers import POWERPAINT_TASK_WORDS, DiffusersInpainter, DiffusersSettings
from hardneg.core.demo.catalog import STUFF_NAMES
from hardneg.core.demo.graphs import generate_graphs
from hardneg.core.demo.render import render_scene
from tests.tiny_models import save_tiny_sd_inpaint

Box = tuple[int, int, int, int]


def inpainter(model: Path | str, **settings: Any) -> DiffusersInpainter:
    return DiffusersInpainter(DiffusersSettings(model=str(model), **settings))


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    # Tiny models gain nothing from threads, and OpenMP's spinning makes them ~100x slower on a busy 2-core box.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_sd_inpaint(tmp_path_factory.mktemp("models") / "tiny-sd-inpaint")


@pytest.fixture(scope="module")
def scene() -> tuple[Image.Image, list[Box]]:
    """A demo image and the boxes of two of its foreground objects (far enough apart for a swap)."""
    graph = next(iter(generate_graphs(1, seed=0).values()))
    objs = [o for o in graph["objects"].values() if o["name"] not in STUFF_NAMES]
    boxes = [(o["x"], o["y"], o["w"], o["h"]) for o in objs]
    a = boxes[0]
    b = max(boxes[1:], key=lambda bx: abs(bx[0] - a[0]) + abs(bx[1] - a[1]))
    return render_scene(graph), [a, b]


def arr(img: Image.Image) -> np.ndarray:
    return np.asarray(img, np.int16)


def outside(shape: tuple[int, int], boxes: list[Box], grow: int) -> np.ndarray:
    keep = np.ones(shape, bool)
    for x, y, w, h in boxes:
        keep[max(0, y - grow) : y + h + grow, max(0, x - grow) : x + w + grow] = False
    return keep


def inside_change(src: Image.Image, cand: Image.Image, box: Box) -> float:
    x, y, w, h = box
    return float(np.abs(arr(cand) - arr(src))[y : y + h, x : x + w].mean())


def test_candidates_sized_pasted_back_and_changed(model_dir: Path, scene: tuple[Image.Image, list[Box]]) -> None:
    src, (box, _) = scene
    inp = inpainter(model_dir, steps=2, batch_size=4)
    job = InpaintJob("neg-1", src, (EditRegion(box, "recolor", "a blue cup", "blue"),), 3, 11)
    cands = inp.run([job])[0]

    assert len(cands) == 3
    keep = outside((src.height, src.width), [box], inp.settings.dilate_px)
    for cand in cands:
        assert cand.size == src.size and cand.mode == "RGB"
        assert np.array_equal(arr(cand)[keep], arr(src)[keep])
        assert inside_change(src, cand, box) > 5
    assert not np.array_equal(arr(cands[0]), arr(cands[1]))
    assert inp.version == "diffusers-inpaint:tiny-sd-inpaint@v1"


def test_candidate_k_does_not_depend_on_the_batch(model_dir: Path, scene: tuple[Image.Image, list[Box]]) -> None:
    src, (a, b) = scene
    job = InpaintJob("neg-2", src, (EditRegion(a, "replace", "a red ball"),), 5, 5)
    other = InpaintJob("neg-3", src, (EditRegion(b, "remove", ""),), 3, 9)
    one = inpainter(model_dir, steps=2, batch_size=1).run([job])[0]
    four = inpainter(model_dir, steps=2, batch_size=4).run([other, job])[1]  # mixed with another job

    for k, (x, y) in enumerate(zip(one, four, strict=True)):
        diff = np.abs(arr(x) - arr(y))
        assert diff.max() <= 3 and diff.mean() < 0.05, f"candidate {k} changed with the batch layout"
    reseeded = inpainter(model_dir, steps=2, batch_size=4).run([InpaintJob("neg-2", src, job.regions, 5, 6)])
    assert np.abs(arr(reseeded[0][0]) - arr(one[0])).max() > 20, "a different seed must give different candidates"


def test_regions_apply_in_order(model_dir: Path, scene: tuple[Image.Image, list[Box]]) -> None:
    src, (a, b) = scene
    first = EditRegion(a, "recolor", "a red cup", "red")
    second = EditRegion(b, "recolor", "a green box", "green")
    inp = inpainter(model_dir, steps=2, batch_size=4)
    swap = inp.run([InpaintJob("neg-swap", src, (first, second), 2, 3)])[0]
    only_first = inp.run([InpaintJob("neg-swap", src, (first,), 2, 3)])[0]

    keep = outside((src.height, src.width), [a, b], inp.settings.dilate_px)
    x, y, w, h = a
    for k, cand in enumerate(swap):
        assert inside_change(src, cand, a) > 5 and inside_change(src, cand, b) > 5
        assert np.array_equal(arr(cand)[keep], arr(src)[keep])
        # Region 2 starts from candidate k of region 1, whose pixels it leaves as they were.
        assert np.array_equal(arr(cand)[y : y + h, x : x + w], arr(only_first[k])[y : y + h, x : x + w])


def test_whole_image_mode_keeps_source_size(model_dir: Path, scene: tuple[Image.Image, list[Box]]) -> None:
    src, (box, _) = scene
    inp = inpainter(model_dir, steps=2, padding_mask_crop=None, resolution=48, dilate_px=4)
    cand = inp.run([InpaintJob("neg-4", src, (EditRegion(box, "remove", "floor"),), 1, 0)])[0][0]
    assert cand.size == src.size
    keep = outside((src.height, src.width), [box], 4)
    assert np.array_equal(arr(cand)[keep], arr(src)[keep])
    assert inside_change(src, cand, box) > 5


def test_powerpaint_mode_adds_task_tokens_and_runs(model_dir: Path, scene: tuple[Image.Image, list[Box]]) -> None:
    src, (a, b) = scene
    inp = inpainter(model_dir, steps=2, mode="powerpaint")
    regions = (EditRegion(a, "replace", "a red ball"), EditRegion(b, "remove", ""))
    cands = inp.run([InpaintJob("neg-pp", src, regions, 2, 1)])[0]
    assert len(cands) == 2 and all(c.size == src.size for c in cands)
    assert "powerpaint" in inp.version

    pipe: Any = inp._pipe
    vocab = pipe.tokenizer.get_vocab()
    for word in POWERPAINT_TASK_WORDS:
        assert all(f"{word}_{i}" in vocab for i in range(10))
    assert pipe.text_encoder.get_input_embeddings().weight.shape[0] == len(pipe.tokenizer)
    prompt, _ = inp._prompts(regions[0])
    ids = pipe.tokenizer(prompt).input_ids
    assert ids[1:11] == pipe.tokenizer.convert_tokens_to_ids([f"P_obj_{i}" for i in range(10)])  # whole tokens
    removal, removal_negative = inp._prompts(regions[1])
    assert removal.startswith("P_ctxt_0 ") and removal_negative.startswith("P_obj_0 ")


def test_lazy_and_validated(model_dir: Path) -> None:
    inp = inpainter("/nonexistent/model", steps=2)  # nothing is loaded yet, so nothing fails yet
    assert inp._pipe is None
    assert all(inp.supports(EditRegion((0, 0, 4, 4), op, "x")) for op in ("recolor", "replace", "remove"))
    assert inp.run([InpaintJob("k", Image.new("RGB", (8, 8)), (EditRegion((0, 0, 4, 4), "remove", ""),), 0, 0)]) == [[]]
    assert inp._pipe is None
    for bad in ({"steps": 0}, {"strength": 0.0}, {"resolution": 30}, {"mode": "sdxl"}, {"batch_size": 0}):
        with pytest.raises(ValueError):
            inpainter(model_dir, **bad)
    with pytest.raises(ValueError, match="no prompt"):
        inpainter(model_dir, steps=2).run(
            [InpaintJob("k", Image.new("RGB", (64, 64)), (EditRegion((8, 8, 16, 16), "replace", ""),), 1, 0)]
        )
