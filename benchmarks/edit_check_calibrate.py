"""Calibrate the edit checks (`filters/scorers/edit_check.py`) on real photos: make real offline edits, save them
for a person to look at, score them, print a table.

    .venv/bin/python -m benchmarks.edit_check_calibrate PHOTOS [--out DIR] [--labels LABELS.csv]

PHOTOS is a GQA-style folder: `images/<id>.jpg` and `sceneGraphs.json` (objects with name, x, y, w, h).
For every object that is a thing rather than stuff (not ground, sky, wall, ...; 16 px or more a side, at
most a third of the image), `OpenCVInpainter` makes:

- recolor: two target colours. The reduced graphs may name no colour, so the object's colour is the
  table's name whose range (`core.colors.in_range`) holds most of its GrabCut pixels; that name is the
  edit's `from` and the backend's `source_color`. Targets are the first two of red, blue, yellow, white,
  black that contradict it;
- recolor_wrong: a recolour told the wrong source colour (GQA's colour labels are noisy), so the backend
  recolours the wrong part of the object: partial and speckled recolours;
- remove: Telea removal;
- replace: copy-paste of a donor crop (the largest object of another name in another photo) as the
  backend does it: old object removed, the donor's GrabCut mask feathered in;
- replace_rect: the same donor pasted as a raw rectangle over the removal (what a failed donor mask does);
- swap: per photo, the largest and the smallest object swap names (each crop is fitted into the other's
  box), the backend's swap_object.

Each edit is saved as `<out>/<n>_<kind>.png`: source | candidate, cropped around the edited boxes and
enlarged, box outlined in the source half. Contact sheets of 12 (`sheet_<k>.png`) are for looking
through them quickly. The table gives every score and the default thresholds' decision; with `--labels`
(a CSV `n,label` with label good / artifact) it also counts agreement per edit kind.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from hardneg.backends.inpaint import EditRegion, InpaintJob
from hardneg.backends.inpaint_opencv import OpenCVInpainter
from hardneg.backends.object_masks import object_mask
from hardneg.core.colors import in_range, to_lab
from hardneg.filters.base import Item
from hardneg.filters.scorers.edit_check import EditCheckFilter, EditThresholds
from tests.helpers import image_negative_row

Box = tuple[int, int, int, int]
STUFF = {"field", "ground", "room", "wall", "floor", "sky", "fence", "clouds", "grass", "road", "water", "sand"}
BASIC = ("white", "black", "gray", "silver", "red", "blue", "green", "yellow", "brown", "orange", "pink", "purple")
TARGETS = ("red", "blue", "yellow", "white", "black")
SCORE_KEYS = (
    "recolor_hit",
    "recolor_left",
    "recolor_specks",
    "recolor_boxy",
    "recolor_clipped",
    "recolor_noise",
    "trace",
    "smear",
    "fill_mismatch",
    "paste_edge",
)
SHORT = {
    "recolor_hit": "hit",
    "recolor_left": "left",
    "recolor_specks": "specks",
    "recolor_boxy": "boxy",
    "recolor_clipped": "clipped",
    "recolor_noise": "noise",
    "fill_mismatch": "fill",
    "paste_edge": "paste",
}
MIN_COLOUR_SHARE = 0.4  # an object's colour is known when its name holds this share of its pixels


@dataclass
class Edit:
    n: int
    kind: str
    image_id: str
    what: str
    edit: dict[str, Any]
    boxes: tuple[Box, ...]
    source: Image.Image
    candidate: Image.Image
    scores: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    refused: str | None = None  # the backend's refusal before painting (`OpenCVInpainter.refusal`)


def load(folder: Path) -> tuple[dict[str, Any], dict[str, Image.Image]]:
    graphs = json.loads((folder / "sceneGraphs.json").read_text())
    images = {}
    for image_id in graphs:
        with Image.open(folder / "images" / f"{image_id}.jpg") as im:
            images[image_id] = im.convert("RGB")
    return graphs, images


def things(graph: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    area = graph["width"] * graph["height"]
    return [
        (oid, o)
        for oid, o in graph["objects"].items()
        if o["name"] not in STUFF and min(o["w"], o["h"]) >= 16 and o["w"] * o["h"] <= area / 3
    ]


def box_of(o: dict[str, Any]) -> Box:
    return (int(o["x"]), int(o["y"]), int(o["w"]), int(o["h"]))


def crop(image: Image.Image, box: Box) -> Image.Image:
    x, y, w, h = box
    return image.crop((x, y, x + w, y + h))


def dominant_colour(image: Image.Image, box: Box) -> str | None:
    """The basic colour name whose range holds most of the object's GrabCut pixels; None when no name
    holds MIN_COLOUR_SHARE of them (a plate of food, a patterned shirt: no one colour to change)."""
    rgb = np.asarray(image)
    mask = object_mask(rgb, box, seed=0)
    lab = to_lab(rgb[mask])
    share = {name: float(in_range(lab, name).mean()) for name in BASIC}
    best = max(share, key=share.__getitem__)
    return best if share[best] >= MIN_COLOUR_SHARE else None


def contradicting(colour: str) -> list[str]:
    family = {"white": {"silver"}, "silver": {"white", "gray"}, "gray": {"silver", "black"}}
    return [t for t in TARGETS if t != colour and t not in family.get(colour, set())]


def raw_rectangle(removed: Image.Image, donor: Image.Image, box: Box) -> Image.Image:
    """The donor crop fitted into `box` (aspect kept, bottom-centred) and pasted as a plain rectangle."""
    x, y, w, h = box
    s = min(w / donor.width, h / donor.height)
    nw, nh = max(1, min(w, round(donor.width * s))), max(1, min(h, round(donor.height * s)))
    out = removed.copy()
    out.paste(donor.resize((nw, nh), Image.BILINEAR), (x + (w - nw) // 2, y + h - nh))
    return out


def make_edits(graphs: dict[str, Any], images: dict[str, Image.Image]) -> Iterator[Edit]:
    backend = OpenCVInpainter()
    # donors: every thing of every photo, largest first; each replace takes the next one of another
    # photo and another name, so the donors vary
    pool = sorted(((i, o) for i, g in graphs.items() for _, o in things(g)), key=lambda t: -t[1]["w"] * t[1]["h"])
    turn = 0
    n = 0

    def run(key: str, image: Image.Image, regions: tuple[EditRegion, ...]) -> Image.Image:
        return backend.run([InpaintJob(key, image, regions, 1, 0)])[0][0]

    def refusal(image: Image.Image, *regions: EditRegion) -> str | None:
        return next((why for r in regions if (why := backend.refusal(image, r))), None)

    for image_id, graph in graphs.items():
        image = images[image_id]
        objs = things(graph)
        for oid, o in objs:
            box, name = box_of(o), o["name"]
            colour = dominant_colour(image, box)
            for target in contradicting(colour)[:2] if colour else []:
                n += 1
                edit = {"op": "set_attribute", "object": oid, "from": colour, "to": target}
                region = EditRegion(box, "recolor", f"a {target} {name}", color=target, source_color=colour)
                yield Edit(
                    n,
                    "recolor",
                    image_id,
                    f"{name} {colour}->{target}",
                    edit,
                    (box,),
                    image,
                    run(f"{oid}:{target}", image, (region,)),
                    refused=refusal(image, region),
                )
            if colour:
                wrong = next(c for c in ("green", "red", "blue") if c != colour)
                target = contradicting(colour)[0]
                n += 1
                edit = {"op": "set_attribute", "object": oid, "from": colour, "to": target}
                region = EditRegion(box, "recolor", f"a {target} {name}", color=target, source_color=wrong)
                yield Edit(
                    n,
                    "recolor_wrong",
                    image_id,
                    f"{name} {colour}->{target} (told {wrong})",
                    edit,
                    (box,),
                    image,
                    run(f"{oid}:wrong", image, (region,)),
                    refused=refusal(image, region),
                )
            n += 1
            removed = run(f"{oid}:remove", image, (EditRegion(box, "remove", "background"),))
            yield Edit(n, "remove", image_id, f"remove {name}", {"op": "remove", "object": oid}, (box,), image, removed)
            others = [(i, o) for i, o in pool if i != image_id and o["name"] != name]
            if not others:
                continue
            donor_id, donor_obj = others[turn % len(others)]
            turn += 1
            donor = crop(images[donor_id], box_of(donor_obj))
            dname = donor_obj["name"]
            edit = {"op": "rename", "object": oid, "name": dname}
            n += 1
            region = EditRegion(box, "replace", f"a {dname}", donor=donor)
            yield Edit(
                n,
                "replace",
                image_id,
                f"{name} -> {dname}",
                edit,
                (box,),
                image,
                run(f"{oid}:replace", image, (region,)),
                refused=refusal(image, region),
            )
            n += 1
            yield Edit(
                n,
                "replace_rect",
                image_id,
                f"{name} -> {dname} (rectangle)",
                edit,
                (box,),
                image,
                raw_rectangle(removed, donor, box),
            )
        if len(objs) >= 2:
            (ia, a), (ib, b) = (
                max(objs, key=lambda t: t[1]["w"] * t[1]["h"]),
                min(objs, key=lambda t: t[1]["w"] * t[1]["h"]),
            )
            ba, bb = box_of(a), box_of(b)
            regions = (
                EditRegion(ba, "replace", f"a {b['name']}", donor=crop(image, bb)),
                EditRegion(bb, "replace", f"a {a['name']}", donor=crop(image, ba)),
            )
            n += 1
            yield Edit(
                n,
                "swap",
                image_id,
                f"swap {a['name']} <-> {b['name']}",
                {"op": "swap_names", "objects": [ia, ib]},
                (ba, bb),
                image,
                run(f"{ia}:swap", image, regions),
                refused=refusal(image, *regions),
            )


def score(edits: list[Edit]) -> None:
    f = EditCheckFilter()
    items = [
        Item(e.n, "image_candidate", image_negative_row(e.edit), "", e.source, candidate=e.candidate, boxes=e.boxes)
        for e in edits
    ]
    thresholds = EditThresholds()
    for e, s in zip(edits, f.score(items), strict=True):
        e.scores = s
        e.reason = EditCheckFilter.keep(s, thresholds)[1]
        if e.refused:  # the pipeline never paints it: the backend refuses it first
            e.reason = f"refused before painting: {e.refused}" + (f"; {e.reason}" if e.reason else "")


def side_by_side(e: Edit, height: int = 300) -> Image.Image:
    """Source | candidate around the edited boxes, enlarged to `height`, boxes outlined on the source."""
    w, h = e.source.size
    xs = [b[0] for b in e.boxes] + [b[0] + b[2] for b in e.boxes]
    ys = [b[1] for b in e.boxes] + [b[1] + b[3] for b in e.boxes]
    pad = max(24, (max(xs) - min(xs) + max(ys) - min(ys)) // 4)
    win = (max(0, min(xs) - pad), max(0, min(ys) - pad), min(w, max(xs) + pad), min(h, max(ys) + pad))
    src = e.source.copy()
    draw = ImageDraw.Draw(src)
    for x, y, bw, bh in e.boxes:
        draw.rectangle((x - 1, y - 1, x + bw, y + bh), outline=(255, 0, 255))
    s = height / (win[3] - win[1])
    size = (max(1, round((win[2] - win[0]) * s)), height)
    left, right = src.crop(win).resize(size, Image.LANCZOS), e.candidate.crop(win).resize(size, Image.LANCZOS)
    out = Image.new("RGB", (2 * size[0] + 6, height + 18), (255, 255, 255))
    out.paste(left, (0, 18))
    out.paste(right, (size[0] + 6, 18))
    ImageDraw.Draw(out).text((2, 2), f"#{e.n} {e.kind}: {e.what}", fill=(0, 0, 0))
    return out


def save(edits: list[Edit], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    panels = []
    for e in edits:
        panel = side_by_side(e)
        panel.save(out / f"{e.n:03d}_{e.kind}.png")
        panels.append(panel.resize((round(panel.width * 200 / panel.height), 200)))
    for k in range(0, len(panels), 12):
        group = panels[k : k + 12]
        cols = 3
        cw = max(p.width for p in group)
        sheet = Image.new("RGB", (cols * (cw + 8), ((len(group) + cols - 1) // cols) * 208), (128, 128, 128))
        for i, p in enumerate(group):
            sheet.paste(p, ((i % cols) * (cw + 8), (i // cols) * 208))
        sheet.save(out / f"sheet_{k // 12:02d}.png")


def table(edits: list[Edit], labels: dict[int, str]) -> None:
    head = f"{'#':>3} {'kind':13} {'image':8} {'what':30} " + " ".join(f"{SHORT.get(k, k)[:7]:>7}" for k in SCORE_KEYS)
    print(head + "  decision  label")
    for e in edits:
        vals = " ".join(f"{e.scores[k]:7.3f}" if k in e.scores else f"{'-':>7}" for k in SCORE_KEYS)
        decision = "pass" if e.reason is None else "reject"
        print(f"{e.n:3d} {e.kind:13} {e.image_id[:8]:8} {e.what[:30]:30} {vals}  {decision:8}  {labels.get(e.n, '')}")
    counts: dict[str, Counter] = defaultdict(Counter)
    for e in edits:
        c = counts[e.kind]
        c["made"] += 1
        c["passed" if e.reason is None else "rejected"] += 1
        if e.n in labels:
            c[f"{labels[e.n]}/{'passed' if e.reason is None else 'rejected'}"] += 1
    print("\nkind           made passed rejected | good:passed good:rejected artifact:passed artifact:rejected")
    total: Counter = Counter()
    for kind, c in counts.items():
        total.update(c)
        print(
            f"{kind:13} {c['made']:5} {c['passed']:6} {c['rejected']:8} | {c['good/passed']:11} {c['good/rejected']:13}"
            f" {c['artifact/passed']:15} {c['artifact/rejected']:17}"
        )
    print(
        f"{'all':13} {total['made']:5} {total['passed']:6} {total['rejected']:8} | {total['good/passed']:11}"
        f" {total['good/rejected']:13} {total['artifact/passed']:15} {total['artifact/rejected']:17}"
    )
    for e in edits:
        if e.reason:
            print(f"#{e.n}: {e.reason}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("photos", type=Path, help="folder with images/<id>.jpg and sceneGraphs.json")
    ap.add_argument("--out", type=Path, default=Path("outputs/edit_check_calibration"))
    ap.add_argument("--labels", type=Path, help="CSV n,label (good / artifact) from looking at the PNGs")
    args = ap.parse_args()
    graphs, images = load(args.photos)
    edits = list(make_edits(graphs, images))
    score(edits)
    save(edits, args.out)
    labels: dict[int, str] = {}
    if args.labels:
        with args.labels.open() as fh:
            labels = {int(r["n"]): r["label"].strip() for r in csv.DictReader(fh)}
    table(edits, labels)
    print(f"\n{len(edits)} edits saved under {args.out}")


if __name__ == "__main__":
    main()
