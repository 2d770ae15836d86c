"""Held-out edit candidates: photos the `edits` filter's thresholds were never chosen on, labelled by eye.

`benchmarks.edit_labels` measures the filter on the candidates its thresholds were chosen from (the
in-sample split). This module makes the offline backend's candidates on four other photos, with boxes,
names and colours given by hand, and their labels (`benchmarks/edit_labels_heldout.csv`) were given
looking at each candidate beside its source, before the filter's verdict on any of them was read:

- Grace Hopper's portrait (matplotlib's sample data) and the motorcycle in a garage (scikit-image's
  `motorcycle_left.png`), both installed with hardneg;
- the pagoda and the flower of scikit-learn's sample images (`load_sample_image`): used when scikit-learn
  is installed, or from a folder named by `--sklearn-images` (or `HARDNEG_SKLEARN_IMAGES`), e.g. the
  `sklearn/datasets/images` folder of the wheel that `pip download --no-deps scikit-learn` fetches.
  Without either, their candidates are left out and the report says so.

Per object: a recolour to the first colour `edit_labels._targets` gives it (shade 0, the backend's first
candidate) and to the second (shade 1), and a removal (fill 0); per photo, its flip. An object's `inside`
names the annotated objects lying inside its box (the tie on the shirt): the backend keeps their pixels
out of the edit, as the pipeline does with a graph's objects.

    .venv/bin/python -m benchmarks.edit_heldout --render DIR   # draw each candidate beside its source
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from benchmarks.edit_labels import Candidate, _targets, render

LABELS = Path(__file__).with_name("edit_labels_heldout.csv")
LEGACY = ("v1", "telea_v1")  # the in-sample edits as they were made before: measured by the filter, never emitted
Box = tuple[int, int, int, int]
# photo -> (name, box xywh, the colour a person calls it, the names of the objects inside its box)
OBJECTS: dict[str, list[tuple[str, Box, str, tuple[str, ...]]]] = {
    "moto": [
        ("tank", (345, 158, 145, 87), "red", ()),
        ("seat", (150, 158, 206, 97), "black", ()),
        ("front fender", (505, 262, 137, 56), "red", ()),
        ("rear fender", (108, 195, 222, 90), "red", ()),
        ("cooler", (520, 178, 96, 74), "red", ()),
        ("bin", (563, 136, 62, 32), "white", ()),
        ("box", (527, 30, 66, 69), "brown", ()),
        ("box2", (612, 186, 71, 90), "brown", ()),
        ("bottle", (400, 52, 21, 40), "yellow", ()),
        ("wheel", (512, 292, 172, 160), "black", ()),
        ("bench", (40, 105, 247, 203), "brown", ()),
        ("small box", (634, 75, 48, 27), "white", ()),
        ("headlight", (515, 122, 48, 66), "gray", ()),
    ],
    "grace": [
        ("hat", (150, 22, 225, 165), "black", ("emblem",)),
        ("emblem", (222, 30, 82, 55), "white", ()),
        ("glasses", (185, 168, 175, 64), "brown", ()),
        ("shirt", (195, 318, 135, 202), "white", ("tie",)),
        ("tie", (216, 405, 84, 65), "black", ()),
        ("name tag", (78, 483, 90, 34), "gray", ()),
        ("ribbons", (322, 487, 133, 40), "red", ()),
        ("button", (232, 574, 28, 26), "yellow", ()),
        ("star", (93, 72, 38, 38), "white", ()),
        ("jacket", (0, 315, 512, 285), "blue", ("name tag", "ribbons", "button", "shirt")),
    ],
    "china": [
        ("roof", (95, 55, 225, 80), "orange", ()),
        ("finial", (195, 28, 22, 30), "yellow", ()),
        ("island", (422, 225, 80, 17), "green", ()),
        ("lower roof", (205, 325, 167, 67), "orange", ()),
        ("middle roof", (62, 240, 290, 50), "orange", ()),
        ("tower", (62, 28, 310, 390), "red", ("roof", "finial", "middle roof", "lower roof")),
        ("tree", (545, 135, 95, 292), "green", ()),
    ],
    "flower": [
        ("flower", (168, 84, 279, 278), "orange", ()),
        ("small flower", (287, 374, 155, 53), "orange", ()),
        ("bud", (578, 392, 44, 35), "yellow", ()),
    ],
}


def _sklearn(name: str, folder: Path | None) -> np.ndarray | None:
    try:
        from sklearn.datasets import load_sample_image  # type: ignore[import-not-found]

        return np.ascontiguousarray(load_sample_image(f"{name}.jpg"))
    except ImportError:
        pass
    path = (folder or Path(os.environ.get("HARDNEG_SKLEARN_IMAGES", "/nonexistent"))) / f"{name}.jpg"
    return np.asarray(Image.open(path).convert("RGB")) if path.exists() else None


def photos(sklearn_images: Path | None = None) -> dict[str, np.ndarray | None]:
    """The held-out photos as RGB uint8 arrays (None: not available here)."""
    import matplotlib.cbook
    import skimage

    grace = matplotlib.cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)
    moto = Path(skimage.__file__).parent / "data" / "motorcycle_left.png"
    return {
        "moto": np.asarray(Image.open(moto).convert("RGB")),
        "grace": np.asarray(Image.open(grace).convert("RGB")),
        "china": _sklearn("china", sklearn_images),
        "flower": _sklearn("flower", sklearn_images),
    }


def _inside(box: Box, names: tuple[str, ...], objs: list[tuple[str, Box, str, tuple[str, ...]]]) -> tuple[Box, ...]:
    where = {n: b for n, b, _, _ in objs}
    return tuple(where[n] for n in names)


def candidates(sklearn_images: Path | None = None) -> Iterator[Candidate]:
    """Every held-out candidate, in a fixed order (module docstring); the photos not available are skipped."""
    return made(photos(sklearn_images), OBJECTS, "ho")


def made(
    images: dict[str, np.ndarray | None], objects: dict[str, list[tuple[str, Box, str, tuple[str, ...]]]], prefix: str
) -> Iterator[Candidate]:
    """The offline backend's candidates on `images` with their hand-given `objects` (module docstring), ids
    starting with `prefix`; the photos not available (None) are skipped."""
    from hardneg.backends.inpaint import EditRegion, InpaintJob
    from hardneg.backends.inpaint_opencv import OpenCVInpainter

    backend = OpenCVInpainter()

    def run(key: str, image: np.ndarray, region: EditRegion, k: int) -> np.ndarray:
        return np.asarray(backend.run([InpaintJob(key, Image.fromarray(image), (region,), k + 1, 0)])[0][k])

    for photo, rgb in images.items():
        if rgb is None:
            continue
        image_id = f"{prefix}-{photo}"
        objs = objects[photo]
        for name, box, old, inside in objs:
            others = _inside(box, inside, objs)
            oid = name.replace(" ", "_")
            for k, new in enumerate(_targets(old)[:2]):
                edit = {"op": "set_attribute", "object": oid, "from": old, "to": new}
                if others:  # the filter judges the mask the backend edited, as in the pipeline
                    edit["inside"] = [[list(b) for b in others]]
                region = EditRegion(box, "recolor", f"a {new} {name}", color=new, source_color=old, inside=others)
                key = f"{image_id}:{oid}:{new}"
                why = backend.refusal(Image.fromarray(rgb), region) or ""
                yield Candidate(f"{key}:dye{k}", "dye", image_id, f"{name} {old}->{new} (shade {k})", edit, (box,),
                                rgb, run(key, rgb, region, k), why)  # fmt: skip
            region = EditRegion(box, "remove", "background", inside=others)
            key = f"{image_id}:{oid}:remove"
            why = backend.refusal(Image.fromarray(rgb), region) or ""
            yield Candidate(f"{key}:fill", "fill", image_id, f"remove {name}", {"op": "remove", "object": oid},
                            (box,), rgb, run(key, rgb, region, 0), why)  # fmt: skip
        names = tuple(n for n, _, _, _ in objs)
        yield Candidate(f"{image_id}:flip", "flip", image_id, "mirrored", {"op": "flip"}, (), rgb, rgb[:, ::-1],
                        names=names)  # fmt: skip


def counts(cands: list[Candidate], labels: dict[str, dict[str, str]]) -> dict[str, Counter]:
    """Per kind: labelled, good, kept by the filter (flips: by the print rule) and emitted (kept and not
    refused by the backend; never the edits as they were made before, `LEGACY`, which no backend makes
    now), with how many of those are good. Candidates whose pixels differ from those
    labelled are counted under "changed"."""
    from benchmarks.edit_labels import GOOD, passes, print_rule

    out: dict[str, Counter] = defaultdict(Counter)
    for c in cands:
        lab = labels.get(c.id)
        if lab is None or not lab.get("label"):
            out[c.kind]["unlabelled"] += 1
            continue
        if lab.get("digest") not in ("", None, c.digest):
            out[c.kind]["changed"] += 1
            continue
        good = lab["label"] == GOOD
        kept = print_rule(c) is None if c.maker == "flip" else passes(c)
        emitted = kept and not c.refused and c.maker not in LEGACY
        k = out[c.kind]
        k["n"] += 1
        k["good"] += good
        k["kept"] += kept
        k["kept_good"] += kept and good
        k["emitted"] += emitted
        k["emitted_good"] += emitted and good
    return out


def side_by_side(inside: dict[str, Counter], *held: tuple[str, dict[str, Counter]]) -> str:
    """The filter's precision and recall per kind, on the labels its thresholds were chosen from and on
    each held-out set (`held`: its name and counts), side by side (filter alone, then end to end: the
    backend's refusals and the filter)."""
    from benchmarks.edit_labels import _pr

    lines = [
        "| kind | split | labelled | good | filter precision | filter recall | emitted precision | emitted recall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    splits = [("in-sample", inside), *held]
    for kind in sorted(set().union(*(c for _, c in splits))):
        for split, counts_ in splits:
            k = counts_.get(kind, Counter())
            f, e = _pr(k["good"], k["kept_good"], k["kept"]), _pr(k["good"], k["emitted_good"], k["emitted"])
            lines.append(f"| {kind} | {split} | {k['n']} | {k['good']} | {' | '.join(f.split(' | '))} "
                         f"| {' | '.join(e.split(' | '))} |")  # fmt: skip
    for split, counts_ in held:
        changed = {kind: k["changed"] for kind, k in counts_.items() if k["changed"]}
        if changed:
            lines.append(f"\n{split} candidates changed since they were labelled (not counted): {changed}")
    return "\n".join(lines) + "\n"


def missing(sklearn_images: Path | None = None) -> list[str]:
    return [p for p, rgb in photos(sklearn_images).items() if rgb is None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--render", type=Path, required=True, help="draw every candidate beside its source here")
    ap.add_argument("--sklearn-images", type=Path, help="a folder holding scikit-learn's china.jpg and flower.jpg")
    ap.add_argument("--ids", action="store_true", help="print each candidate's number, id and digest")
    args = ap.parse_args(argv)
    cands = list(candidates(args.sklearn_images))
    render(cands, args.render)
    if args.ids:
        for n, c in enumerate(cands):
            print(f"#{n} {c.id} {c.kind} {c.maker} {c.digest}")
    gone = missing(args.sklearn_images)
    print(f"{len(cands)} held-out candidates drawn into {args.render}" + (f"; not available: {gone}" if gone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
