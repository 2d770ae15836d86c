"""The Probe-B stage: backgrounds replaced by fillers (the probing paper, Probe-B).

Per image of `exports.probe_b.splits` (the paper's 3-image groups, one per filler):
- `x0`: the original; `x0_patch/<filler>`: the original with a random patch of the filler on the
  background (the paper's control for general robustness);
- `bmr/<filler>`: every object kept, the background replaced (Probe-BMR);
- `br/<filler>`: only the target kept, the background and every other object replaced (Probe-BR).
Fillers: black, gray, Gaussian noise, and another scene with no objects: the largest region of another
image of the same split that no object box touches (found once per run, `scenes.json`), scaled to size.

Objects are the graph's objects except background stuff (`Words.crowd_group` "background": sky, wall,
grass), non-object words and boxes covering most of the image; each is masked by GrabCut inside its box
(`backends/object_masks.py`, as the image stage's OpenCV backend masks its edits). The target passes the
target filter (`generators/paths/targets.py`) and no other object's box lies much inside its own (the paper keeps
images whose boxes do not overlap), and the fillers must replace at least `min_background` of the image.
Each group carries the target's prompt and `absent_prompts` names certainly absent from the image and from
the filler scene's region (common corpus names with a noun category, no crowd, mass or non-object name, none
the same as, a form, kind, part or whole of a name in either): `evaluation.probes.probe_accuracy` scores
target vs absent per image. This stage generates images, so it is not a decision stage; the probes stage
publishes its rows.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson
from PIL import Image
from pydantic import Field, field_validator

from hardneg.core.certify import VERSION as CERTIFIER
from hardneg.core.certify import Certifier
from hardneg.core.config_exports import ExportOptions
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import safe_name
from hardneg.core.io import write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import Reject, SceneGraph, SceneObject, content_id, keyed_seed
from hardneg.core.rows import HYGIENE_GRAPHS, PLAUSIBILITY_COUNTS
from hardneg.core.runner.stage import Run, Unit
from hardneg.core.schema import outputs
from hardneg.core.splits import split_of
from hardneg.core.words.table import Words
from hardneg.exports.base import ExportStage
from hardneg.exports.common import noun_phrase
from hardneg.exports.rows import PROBE_B_GROUPS, ProbeBGroupRow
from hardneg.generators.paths.targets import RENDERER_CONFIG, RENDERER_DATA, PathResources, target_reason

VERSION = f"probe_b@v2+{CERTIFIER}"  # v2: the filler scene's names in the row
GENERATED = "probes/generated"  # this stage's images, under the run folder
GRID = 32  # cells per side of the occupancy grid the empty-scene search uses
MIN_SCENE = 0.25  # an empty region must cover this much of its image to be a filler scene
COMMON_NAMES = 60  # absent prompts are drawn from this many of the most frequent usable corpus names


def is_object(o: SceneObject, g: SceneGraph, words: Words, max_area: float) -> bool:
    """What Probe-B keeps in BMR: not background stuff, not a non-object word, not a box over the scene."""
    return (
        words.crowd_group(o.name) != "background"
        and words.not_object_reason(o.name) is None
        and o.area <= max_area * g.width * g.height
    )


def empty_rect(g: SceneGraph, boxes: list[tuple[int, int, int, int]]) -> tuple[int, int, int, int] | None:
    """The largest axis-aligned region (xywh, on a GRID x GRID grid) that no box touches, or None."""
    free = np.ones((GRID, GRID), bool)
    sx, sy = g.width / GRID, g.height / GRID
    for x, y, w, h in boxes:
        free[int(y // sy) : int(np.ceil((y + h) / sy)), int(x // sx) : int(np.ceil((x + w) / sx))] = False
    best, heights = (0, 0, 0, 0, 0), np.zeros(GRID, int)
    for row in range(GRID):
        heights = np.where(free[row], heights + 1, 0)
        stack: list[int] = []
        for col in range(GRID + 1):
            h = heights[col] if col < GRID else 0
            while stack and heights[stack[-1]] >= h:
                top = heights[stack.pop()]
                left = stack[-1] + 1 if stack else 0
                if top * (col - left) > best[0]:
                    best = (top * (col - left), left, row - top + 1, col - left, top)
            stack.append(col)
    area, c, r, cw, rh = best
    if area < MIN_SCENE * GRID * GRID:
        return None
    return round(c * sx), round(r * sy), round(cw * sx), round(rh * sy)


def _meets(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def fillers(kinds: list[str], size: tuple[int, int], scene: np.ndarray | None, seed: int) -> dict[str, np.ndarray]:
    w, h = size
    out: dict[str, np.ndarray] = {}
    for k in kinds:
        if k == "black":
            out[k] = np.zeros((h, w, 3), np.uint8)
        elif k == "gray":
            out[k] = np.full((h, w, 3), 128, np.uint8)
        elif k == "noise":
            noise = np.random.default_rng(seed).normal(128.0, 50.0, (h, w, 3))
            out[k] = np.clip(noise, 0, 255).astype(np.uint8)
        elif k == "scene" and scene is not None:
            out[k] = np.asarray(Image.fromarray(scene).resize((w, h), Image.Resampling.BICUBIC))
    return out


Filler = Literal["black", "gray", "noise", "scene"]
FILLERS: tuple[str, ...] = ("black", "gray", "noise", "scene")


@dataclass(slots=True)
class FillerScene:
    """An image whose region `rect` (x, y, w, h) no object box touches, as a filler for other images of its
    split, with the names of the objects whose boxes reach into it (stored in `scenes.json`)."""

    image_id: str
    rect: list[int]
    names: list[str]


class ProbeBExport(ExportOptions):
    """Probe-B: backgrounds replaced by fillers (BMR keeps every object, BR only the target)."""

    enabled: bool = True
    splits: list[Literal["train", "val", "test"]] = Field(default_factory=lambda: ["test"])
    fillers: list[Filler] = Field(default_factory=lambda: list(FILLERS))
    absent_prompts: int = Field(3, ge=1, le=20)  # names absent from the image, scored against the target's
    patch_frac: float = Field(0.1, gt=0.0, lt=0.5)  # the control patch's share of the image
    min_background: float = Field(0.2, ge=0.0, lt=1.0)  # share of the image the fillers must replace
    max_overlap: float = Field(0.25, ge=0.0, le=1.0)  # BR: another object's box may lie this much in the target's
    # the co-occurrence split's target alone must cover this share of the image (the paper keeps a single
    # object "not too small relative to the image size": a ball of 30 x 15 pixels alone is a patch of dirt)
    min_object_area: float = Field(0.01, ge=0.0, lt=1.0)
    max_images: int | None = Field(None, ge=1)  # per shard; None = every eligible image

    @field_validator("fillers")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError("fillers must be a non-empty list without repeats")
        return v


@EXPORTS.add("probe_b", order=20)
class ProbeBStage(ExportStage):
    """Probe-B images and groups for the images of the configured splits."""

    version = VERSION
    Options = ProbeBExport
    reads = ("hygiene", "plausibility")
    writes = outputs(PROBE_B_GROUPS)
    config = ("seed", "splits", "targets", "paths.rules", "exports.probe_b", *RENDERER_CONFIG)
    data = RENDERER_DATA
    publishes = ("probes",)  # its images go to probes/generated

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def prepare(self, run: Run, folder: Path) -> None:
        """Filler scenes (per split, the images with a large object-free region), and a clean image folder
        when no unit is done yet."""
        if not any((folder / "_done").glob("*.json")):
            shutil.rmtree(run.root / GENERATED, ignore_errors=True)
        scenes_file = folder / "scenes.json"
        if scenes_file.exists() or not run.cfg.exports.probe_b.enabled or run.images is None:
            return  # no group is made without the photos: no filler is needed (every unit counts its images skipped)
        cfg, words = run.cfg, Words.load()
        max_area = cfg.targets.max_area_frac
        scenes: dict[str, list[FillerScene]] = {}
        for row in run.records_all(HYGIENE_GRAPHS):
            split = split_of(row.image_id, cfg.splits)
            if split not in cfg.exports.probe_b.splits:
                continue
            g = row.scene_graph()
            boxes = [o.box for o in g.objects.values() if is_object(o, g, words, max_area)]
            rect = empty_rect(g, boxes) if boxes else None
            if rect is not None:  # what the filler shows: the objects whose boxes reach into the region
                names = sorted({o.name for o in g.objects.values() if _meets(o.box, rect)})
                scenes.setdefault(split, []).append(FillerScene(g.image_id, list(rect), names))
        write_json(scenes_file, {split: [asdict(s) for s in found] for split, found in scenes.items()}, indent=False)

    def run(self, unit: Unit) -> None:
        cfg, opts = unit.cfg, unit.cfg.exports.probe_b
        images = unit.images
        rows_in = unit.records(HYGIENE_GRAPHS)
        mine = (r for r in rows_in if split_of(r.image_id, cfg.splits) in opts.splits)
        rows: list[ProbeBGroupRow] = []
        if not opts.enabled or images is None:  # counted, not built into graphs: no group is made
            unit.items_in = sum(1 for _ in mine)
            unit.stats["skipped_no_images" if images is None else "skipped_disabled"] += unit.items_in
            unit.write("groups", rows)
            return
        graphs = [r.scene_graph() for r in mine]
        unit.items_in = len(graphs)
        if opts.max_images is not None and len(graphs) > opts.max_images:
            pick = random.Random(keyed_seed(cfg.seed, "probe_b", unit.shard))
            keep = set(pick.sample(range(len(graphs)), opts.max_images))
            graphs = [g for k, g in enumerate(graphs) if k in keep]
        if graphs:
            maker = GroupMaker(unit, images)  # type: ignore[arg-type]
            for g in graphs:
                row = maker.group(g)
                if row is not None:
                    rows.append(row)
        unit.write("groups", rows)


class GroupMaker:
    """Makes one image's Probe-B group: target, absent names, masks, fillers, the images."""

    def __init__(self, unit: Unit, images: Path) -> None:
        cfg = unit.cfg
        self.unit, self.cfg, self.opts, self.images = unit, cfg, cfg.exports.probe_b, images
        self.res = PathResources.load(cfg)
        self.words = self.res.words
        self.cert = Certifier(self.words, self.res.table)
        counts = Counts.from_rows(unit.read_all(PLAUSIBILITY_COUNTS))
        self.common = [n for n, _ in sorted(counts.names.items(), key=lambda x: (-x[1], x[0])) if self._usable(n)]
        stored = orjson.loads((unit.dir / "scenes.json").read_bytes())
        self.scenes = {split: [FillerScene(**s) for s in found] for split, found in stored.items()}
        self.out = unit.root / GENERATED

    def _usable(self, name: str) -> bool:
        return self.cert.absence_refusal(name) is None and self.words.name_category(name) is not None

    def _reject(self, g: SceneGraph, why: str) -> None:
        self.unit.stats[f"skipped:{why.split(':')[0]}"] += 1
        self.unit.reject(Reject("probe_b", why, g.image_id))

    def group(self, g: SceneGraph) -> ProbeBGroupRow | None:
        cfg, opts, seed = self.cfg, self.opts, self.cfg.seed
        objects = [o for o in g.objects.values() if is_object(o, g, self.words, cfg.targets.max_area_frac)]
        targets = [o for o in objects if target_reason(o, g, cfg, self.res) is None and self._alone(o, objects)]
        if not targets:
            self._reject(g, "no target: no object passes the target filter clear of the other boxes")
            return None
        pick = random.Random(keyed_seed(seed, "probe_b", g.image_id))
        target = sorted(targets, key=lambda o: o.id)[pick.randrange(len(targets))]
        split = split_of(g.image_id, cfg.splits)
        pool = [s for s in self.scenes.get(split, []) if s.image_id != g.image_id]
        scene = pool[random.Random(keyed_seed(seed, "scene", g.image_id)).randrange(len(pool))] if pool else None
        banned = {o.name for o in g.objects.values()} | set(scene.names if scene else [])
        absent = [  # no name in either graph (the target's included) is it, a form, a kind, a part or whole of it
            m for m in self.common[:COMMON_NAMES]
            if not any(n == m or self.words.name_relation(n, m) is not None for n in banned)
        ]  # fmt: skip
        if len(absent) < opts.absent_prompts:
            self._reject(g, f"absent names: only {len(absent)} common names are certainly absent")
            return None
        absent = sorted(random.Random(keyed_seed(seed, "absent", g.image_id)).sample(absent, opts.absent_prompts))
        try:
            with Image.open(image_file(self.images, g.image_id)) as im:
                rgb = np.asarray(im.convert("RGB"))
            scene_rgb = None
            if scene is not None and "scene" in opts.fillers:
                with Image.open(image_file(self.images, scene.image_id)) as im:
                    x, y, w, h = scene.rect
                    scene_rgb = np.asarray(im.convert("RGB").crop((x, y, x + w, y + h)))
        except (OSError, SyntaxError, ValueError) as e:
            self._reject(g, f"image unreadable: {e}")
            return None
        from hardneg.backends.object_masks import dilate, object_mask

        masks = {o.id: dilate(object_mask(rgb, o.box, keyed_seed(seed, g.image_id, o.id)), 2) for o in objects}
        keep_all = np.logical_or.reduce(list(masks.values()))
        background = 1.0 - float(keep_all.mean())
        if background < opts.min_background:
            self._reject(g, f"background: the fillers would replace {background:.2f} of the image")
            return None
        fill = fillers(opts.fillers, (g.width, g.height), scene_rgb, keyed_seed(seed, "noise", g.image_id))
        patch = self._patch(keep_all, keyed_seed(seed, "patch", g.image_id))
        paths = {"x0": self._link(g.image_id)}
        paths.update(self._variants(g.image_id, rgb, fill, keep_all, masks[target.id], patch))
        gid = content_id("probe_b", g.image_id, target.id)
        for kind in fill:
            self.unit.stats[f"groups:{kind}"] += 1
        return ProbeBGroupRow(
            id=gid,
            image_id=g.image_id,
            split=split,
            target={"object_id": target.id, "name": target.name, "box": list(target.box)},
            objects=sorted(masks),
            present=sorted({o.name for o in objects}),
            absent=absent,
            prompts={
                "target": f"a photo of {noun_phrase(self.words, target.name)}",
                "absent": [f"a photo of {noun_phrase(self.words, m)}" for m in absent],
            },
            images=paths,
            fillers=sorted(fill),
            background_fraction=round(background, 4),
            patch_box=list(patch),
            scene_image_id=scene.image_id if scene is not None and "scene" in fill else None,
            scene_names=scene.names if scene is not None and "scene" in fill else [],
        )

    def _alone(self, t: SceneObject, objects: list[SceneObject]) -> bool:
        """No other object's box lies more than `max_overlap` inside the target's, nor the target in it."""
        tx, ty, tw, th = t.box
        for o in objects:
            if o.id == t.id:
                continue
            ox, oy, ow, oh = o.box
            inter = max(0, min(tx + tw, ox + ow) - max(tx, ox)) * max(0, min(ty + th, oy + oh) - max(ty, oy))
            if inter > self.opts.max_overlap * min(o.area, t.area):
                return False
        return True

    def _patch(self, keep: np.ndarray, seed: int) -> tuple[int, int, int, int]:
        """A square of `patch_frac` of the image on the background: the keyed try covering fewest object pixels."""
        h, w = keep.shape
        side = max(1, min(w, h, round((self.opts.patch_frac * w * h) ** 0.5)))
        rng = random.Random(seed)
        best: tuple[float, tuple[int, int, int, int]] | None = None
        for _ in range(24):
            x, y = rng.randrange(w - side + 1), rng.randrange(h - side + 1)
            cover = float(keep[y : y + side, x : x + side].mean())
            if best is None or cover < best[0]:
                best = (cover, (x, y, side, side))
            if cover == 0.0:
                break
        assert best is not None
        return best[1]

    def _link(self, image_id: str) -> str:
        dst = self.out / f"{safe_name(image_id)}_x0.jpg"
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                dst.hardlink_to(image_file(self.images, image_id))
            except OSError:
                shutil.copyfile(image_file(self.images, image_id), dst)
        return dst.relative_to(self.unit.root).as_posix()

    def _variants(
        self, image_id: str, rgb: np.ndarray, fill: dict[str, np.ndarray], keep_all: np.ndarray,
        target: np.ndarray, patch: tuple[int, int, int, int],
    ) -> dict[str, str]:  # fmt: skip
        from hardneg.backends.object_masks import feather

        out: dict[str, str] = {}
        x, y, w, h = patch
        alpha_all, alpha_target = feather(keep_all, 1.0), feather(target, 1.0)
        for kind, f in fill.items():
            patched = rgb.copy()
            patched[y : y + h, x : x + w] = f[y : y + h, x : x + w]
            images = {
                f"x0_patch/{kind}": patched,
                f"bmr/{kind}": (rgb * alpha_all + f * (1 - alpha_all)).round().astype(np.uint8),
                f"br/{kind}": (rgb * alpha_target + f * (1 - alpha_target)).round().astype(np.uint8),
            }
            for variant, arr in images.items():
                dst = self.out / f"{safe_name(image_id)}_{variant.replace('/', '_')}.jpg"
                dst.parent.mkdir(parents=True, exist_ok=True)
                Image.fromarray(arr).save(dst, "JPEG", quality=95)
                out[variant] = dst.relative_to(self.unit.root).as_posix()
        return out
