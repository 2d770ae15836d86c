"""The `edits` filter measured against people: offline edit candidates on real photos, labelled by eye.

    .venv/bin/python -m benchmarks.edit_labels                 # precision and recall against the labels
    .venv/bin/python -m benchmarks.edit_labels --render DIR    # also draw each candidate beside its source

The candidates are made here, deterministically, on the eight real photos of `tests/data/photos8` (four GQA
and four Visual Genome photos, with their graphs) and on scikit-image's sample photos with boxes drawn by
hand (`SAMPLE_OBJECTS`); their labels are `benchmarks/edit_labels.csv` (one row per candidate: its id, the
label a person gave it looking at the source and the candidate side by side, and the verdict of the filter
as it was before these checks, `edits@v1`, recorded when it was labelled). Makers:

- `dye`: the offline recolour (`core.pixels.recolour`, candidate 0, and for some objects candidate 1 of a
  second colour); `v1`: the recolour before it (`benchmarks/edit_legacy.py`);
- `fill`: the offline removal (`OpenCVInpainter`, fill 0); `telea_v1`: the removal before it;
- `paste`: a copy-paste replacement by the offline backend (the donor: the largest object of another name
  in another photo); `swap`: two objects' crops exchanged;
- `flip`: the photo mirrored (the filter does not see flips; the print rule decides them).

Every candidate is made whether or not the backend would refuse it, so the filter is measured on bad edits
as well as good; `refused` (the backend's reason before painting) gives the end-to-end numbers too.

Labels: `good` (the named thing plainly changed, and it looks like a photograph), `still_true` (the edit
left the expression true: part of the object in the old colour, the object still standing), `artifact`
(changed, but a person sees the edit: a flat cut-out, a smear, a pasted rectangle, other things recoloured),
`unchanged`, `mirrored_print` (a flip that shows print backwards).

Printed per kind and maker: candidates, labelled good, the filter's precision (good among those it keeps)
and recall (kept among the good), before (`edits@v1`, from the CSV) and now; then the same for what the
pipeline would emit (the backend's refusals, then the filter), and for flips the print rule against labels.
A candidate whose pixels differ from those labelled (the digest in the CSV) is reported, not counted.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from benchmarks.edit_legacy import recolour_v1, remove_v1

REPO = Path(__file__).resolve().parents[1]
PHOTOS = REPO / "tests" / "data" / "photos8"
LABELS = Path(__file__).with_name("edit_labels.csv")
STUFF = {
    "field", "ground", "room", "wall", "floor", "sky", "fence", "clouds", "grass", "road", "water", "sand",
    "street", "sidewalk", "building", "trees", "tree", "area", "shade", "leaves", "bush", "carpet", "windows",
    "window", "patio", "color", "colour", "back", "chin", "frame", "crosswalk", "bikes",
}  # fmt: skip
TARGETS = ("blue", "red", "green", "yellow", "black", "white")
# scikit-image's sample photos with boxes drawn by hand: (name, box xywh, colour a person would call it)
SAMPLE_OBJECTS: dict[str, list[tuple[str, tuple[int, int, int, int], str]]] = {
    "astronaut": [
        ("suit", (18, 238, 345, 274), "orange"),
        ("patch", (133, 345, 80, 80), "blue"),
        ("helmet", (276, 342, 236, 170), "black"),
        ("rocket", (352, 0, 118, 292), "white"),
    ],
    "coffee": [("saucer", (74, 66, 406, 324), "red"), ("spoon", (322, 64, 104, 264), "silver")],
    "chelsea": [("nose", (230, 222, 62, 46), "pink"), ("eye", (134, 84, 78, 64), "green")],
    "rocket": [("rocket", (300, 124, 46, 288), "white")],
}
FLIP_SAMPLES = ("astronaut", "coffee", "chelsea", "rocket", "camera", "logo", "page", "text")
KIND = {"dye": "replace_attribute", "v1": "replace_attribute", "dye_swap": "swap_attribute",
        "fill": "remove_object", "telea_v1": "remove_object", "paste": "replace_object", "swap": "swap_object",
        "flip": "flip"}  # fmt: skip
GOOD = "good"


@dataclass
class Candidate:
    id: str
    maker: str
    image_id: str
    what: str
    edit: dict[str, Any]
    boxes: tuple[tuple[int, int, int, int], ...]
    source: np.ndarray
    pixels: np.ndarray
    refused: str = ""
    names: tuple[str, ...] = ()  # flips: the names the photo's graph gives (the print rule reads them)
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return KIND[self.maker]

    @property
    def digest(self) -> str:
        return hashlib.blake2b(self.pixels.tobytes(), digest_size=6).hexdigest()


def _sample(name: str) -> np.ndarray:
    import skimage.data

    a = getattr(skimage.data, name)()
    a = np.stack([a] * 3, axis=-1) if a.ndim == 2 else a[..., :3]
    return np.ascontiguousarray(a.astype(np.uint8))


def _photos() -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    graphs = json.loads((PHOTOS / "sceneGraphs.json").read_text())
    images = {i: np.asarray(Image.open(PHOTOS / "images" / f"{i}.jpg").convert("RGB")) for i in graphs}
    return graphs, images


def _things(graph: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The graph's objects an edit could name: not stuff, 20 px a side or more, at most a quarter of the
    photo, one per duplicate box (Visual Genome boxes the same object several times)."""
    area = graph["width"] * graph["height"]
    out: list[tuple[str, dict[str, Any]]] = []
    for oid, o in sorted(graph["objects"].items()):
        if o["name"] in STUFF or min(o["w"], o["h"]) < 20 or o["w"] * o["h"] > area / 4:
            continue
        if any(_iou(_box(o), _box(p)) > 0.6 for _, p in out):
            continue
        out.append((oid, o))
    return out


def _box(o: dict[str, Any]) -> tuple[int, int, int, int]:
    return int(o["x"]), int(o["y"]), int(o["w"]), int(o["h"])


def _iou(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / max(1, a[2] * a[3] + b[2] * b[3] - inter)


def _colour(o: dict[str, Any], rgb: np.ndarray) -> str | None:
    """The object's colour: its graph's colour word, else the term that most of its mask reads (half)."""
    from hardneg.core.colors import read_colours
    from hardneg.core.pixels.evidence import colour_word
    from hardneg.core.pixels.masks import object_mask

    word = next((a for a in o.get("attributes", []) if colour_word(a) and len(colour_word(a) or ()) == 1), None)
    if word:
        return word
    m = object_mask(rgb, _box(o))
    x0, y0, x1, y1 = m.box
    reading = read_colours(rgb[y0:y1, x0:x1], m.mask)
    top = reading.dominant
    return top if top and reading.shares[top] >= 0.5 and top != "beige" else None


def _targets(old: str) -> list[str]:
    from hardneg.core.pixels.evidence import colour_word

    parts = colour_word(old) or ()
    close = {t for p in parts for t in p.terms | p.near}
    return [t for t in TARGETS if t not in close]


def candidates() -> Iterator[Candidate]:
    """Every candidate, in a fixed order (module docstring)."""
    from hardneg.backends.inpaint import EditRegion, InpaintJob
    from hardneg.backends.inpaint_opencv import OpenCVInpainter

    backend = OpenCVInpainter()

    def run(key: str, image: np.ndarray, regions: tuple[EditRegion, ...], k: int = 0) -> np.ndarray:
        pil = Image.fromarray(image)
        return np.asarray(backend.run([InpaintJob(key, pil, regions, k + 1, 0)])[0][k])

    def refusal(image: np.ndarray, *regions: EditRegion) -> str:
        pil = Image.fromarray(image)
        return next((why for r in regions if (why := backend.refusal(pil, r))), "") or ""

    graphs, images = _photos()
    scenes: list[tuple[str, np.ndarray, list[tuple[str, str, tuple[int, int, int, int], str | None]]]] = []
    for image_id, graph in graphs.items():
        rgb = images[image_id]
        objs = [(oid, o["name"], _box(o), _colour(o, rgb)) for oid, o in _things(graph)]
        scenes.append((image_id, rgb, objs))
    for name, objs in SAMPLE_OBJECTS.items():
        scenes.append((f"sk-{name}", _sample(name), [(n, n, b, c) for n, b, c in objs]))
    donors = sorted(
        ((i, oid, name, box) for i, rgb, objs in scenes[:8] for oid, name, box, _ in objs),
        key=lambda t: (-t[3][2] * t[3][3], t[0], t[1]),
    )
    turn = 0
    for image_id, rgb, objs in scenes:
        coloured = [(oid, name, box, old) for oid, name, box, old in objs if old]
        for n, (oid, name, box, old) in enumerate(coloured[:7]):
            assert old is not None
            targets = _targets(old)
            new = targets[0]
            edit = {"op": "set_attribute", "object": oid, "from": old, "to": new}
            region = EditRegion(box, "recolor", f"a {new} {name}", color=new, source_color=old)
            key = f"{image_id}:{oid}:{new}"
            why = refusal(rgb, region)
            yield Candidate(f"{key}:dye", "dye", image_id, f"{name} {old}->{new}", edit, (box,), rgb,
                            run(key, rgb, (region,)), why)  # fmt: skip
            yield Candidate(f"{key}:v1", "v1", image_id, f"{name} {old}->{new}", edit, (box,), rgb,
                            recolour_v1(rgb, box, old, new))  # fmt: skip
            if n % 2 == 0 and len(targets) > 1:
                new2 = targets[1]
                edit2 = {"op": "set_attribute", "object": oid, "from": old, "to": new2}
                region2 = EditRegion(box, "recolor", f"a {new2} {name}", color=new2, source_color=old)
                key2 = f"{image_id}:{oid}:{new2}"
                yield Candidate(f"{key2}:dye1", "dye", image_id, f"{name} {old}->{new2} (shade 1)", edit2, (box,),
                                rgb, run(key2, rgb, (region2,), 1), refusal(rgb, region2))  # fmt: skip
        if len(coloured) >= 2:  # the two largest objects of different colours trade colours
            pair = sorted(coloured, key=lambda t: -t[2][2] * t[2][3])
            a = pair[0]
            b = next((t for t in pair[1:] if t[3] in _targets(a[3]) or a[3] in _targets(t[3])), None)  # type: ignore[arg-type]
            if b is not None:
                regions = (
                    EditRegion(a[2], "recolor", "", color=_paint_word(b[3]), source_color=a[3]),
                    EditRegion(b[2], "recolor", "", color=_paint_word(a[3]), source_color=b[3]),
                )
                if all(backend.supports(r) for r in regions):
                    edit = {"op": "swap_attributes", "objects": [a[0], b[0]], "from": [a[3], b[3]]}
                    key = f"{image_id}:{a[0]}+{b[0]}"
                    what = f"{a[1]} {a[3]} <-> {b[1]} {b[3]}"
                    yield Candidate(f"{key}:dye_swap", "dye_swap", image_id, what, edit, (a[2], b[2]), rgb,
                                    run(key, rgb, regions), refusal(rgb, *regions))  # fmt: skip
        for oid, name, box, _ in objs[:5]:
            edit = {"op": "remove", "object": oid}
            region = EditRegion(box, "remove", "background")
            key = f"{image_id}:{oid}:remove"
            yield Candidate(f"{key}:fill", "fill", image_id, f"remove {name}", edit, (box,), rgb,
                            run(key, rgb, (region,)), refusal(rgb, region))  # fmt: skip
            yield Candidate(f"{key}:telea_v1", "telea_v1", image_id, f"remove {name}", edit, (box,), rgb,
                            remove_v1(rgb, box))  # fmt: skip
        if not image_id.startswith("sk-") and objs:  # copy-paste: a donor of another name from another photo
            for oid, name, box, _ in objs[:2]:
                others = [d for d in donors if d[0] != image_id and d[2] != name]
                di, _, dname, dbox = others[turn % len(others)]
                turn += 1
                donor = Image.fromarray(images[di]).crop((dbox[0], dbox[1], dbox[0] + dbox[2], dbox[1] + dbox[3]))
                region = EditRegion(box, "replace", f"a {dname}", donor=donor)
                edit = {"op": "rename", "object": oid, "name": dname}
                key = f"{image_id}:{oid}:paste"
                yield Candidate(f"{key}:paste", "paste", image_id, f"{name} -> {dname}", edit, (box,), rgb,
                                run(key, rgb, (region,)), refusal(rgb, region))  # fmt: skip
    for image_id, graph in graphs.items():
        names = tuple(o["name"] for o in graph["objects"].values())
        rgb = images[image_id]
        yield Candidate(f"{image_id}:flip", "flip", image_id, "mirrored", {"op": "flip"}, (), rgb, rgb[:, ::-1],
                        names=names)  # fmt: skip
    for name in FLIP_SAMPLES:
        rgb = _sample(name)
        yield Candidate(f"sk-{name}:flip", "flip", f"sk-{name}", "mirrored", {"op": "flip"}, (), rgb, rgb[:, ::-1])


def _paint_word(word: str | None) -> str:
    from hardneg.core.pixels.recolour import paintable

    return paintable(word) or (word or "")


# -- scoring --------------------------------------------------------------------------------------------


def score(cands: list[Candidate]) -> None:
    """The current `edits` filter's scores of every non-flip candidate (into `Candidate.scores`)."""
    from hardneg.filters.base import Item
    from hardneg.filters.scorers.edit_check import EditCheckFilter
    from tests.helpers import image_negative_row

    f = EditCheckFilter()
    for c in cands:
        if c.maker == "flip":
            continue
        item = Item(0, "image_candidate", image_negative_row(c.edit), "", Image.fromarray(c.source),
                    candidate=Image.fromarray(c.pixels), boxes=c.boxes)  # fmt: skip
        c.scores = f.score([item])[0]


def passes(c: Candidate) -> bool:
    from hardneg.filters.scorers.edit_check import EditCheckFilter

    return EditCheckFilter.keep(c.scores, EditCheckFilter.Thresholds())[0]


def print_rule(c: Candidate) -> str | None:
    """Why the flip rule refuses this flip (names, then the pixels), or None."""
    from hardneg.core.words.table import Words
    from hardneg.generators.images.flip import print_refusal

    return print_refusal(c.source, c.names, Words.load())


def old_print_rule(c: Candidate) -> bool:
    """The flip rule before: a name the word tables call a surface of text."""
    from hardneg.core.words.table import Words

    words = Words.load()
    return any(words.surface_kind(n) == "text" for n in c.names)


def _pr(good: int, kept_good: int, kept: int) -> str:
    p = f"{kept_good / kept:.0%}" if kept else "-"
    r = f"{kept_good / good:.0%}" if good else "-"
    return f"{p} ({kept_good}/{kept}) | {r} ({kept_good}/{good})"


def report(cands: list[Candidate], labels: dict[str, dict[str, str]]) -> str:
    rows: dict[tuple[str, str], Counter] = defaultdict(Counter)
    drift = [c.id for c in cands if c.id in labels and labels[c.id].get("digest") not in ("", None, c.digest)]
    for c in cands:
        lab = labels.get(c.id)
        if lab is None or not lab.get("label") or c.id in drift:
            continue
        good = lab["label"] == GOOD
        k = rows[(c.kind, c.maker)]
        k["n"] += 1
        k["good"] += good
        k[f"label:{lab['label']}"] += 1
        if c.maker == "flip":
            kept_before, kept_now = not old_print_rule(c), print_rule(c) is None
        else:
            kept_before, kept_now = lab.get("v1") == "pass", passes(c)
        k["kept_v1"] += kept_before
        k["kept_v1_good"] += kept_before and good
        k["kept"] += kept_now
        k["kept_good"] += kept_now and good
        emitted = kept_now and not c.refused
        k["emitted"] += emitted
        k["emitted_good"] += emitted and good
    lines = [
        "| kind | maker | labelled | good | labels | v1 precision | v1 recall | now precision | now recall "
        "| emitted (refusals + filter) precision | recall |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    totals: dict[str, Counter] = defaultdict(Counter)
    for (kind, maker), k in sorted(rows.items()):
        labs = ", ".join(f"{x[6:]} {n}" for x, n in sorted(k.items()) if x.startswith("label:"))
        lines.append(
            f"| {kind} | {maker} | {k['n']} | {k['good']} | {labs} | {_pr(k['good'], k['kept_v1_good'], k['kept_v1'])} "
            f"| {_pr(k['good'], k['kept_good'], k['kept'])} | {_pr(k['good'], k['emitted_good'], k['emitted'])} |"
        )
        totals[kind].update(k)
    lines += [
        "",
        "Per kind, every maker together:",
        "",
        "| kind | labelled | good | v1 precision | v1 recall | now precision | now recall | emitted precision "
        "| emitted recall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, k in sorted(totals.items()):
        lines.append(
            f"| {kind} | {k['n']} | {k['good']} | {_pr(k['good'], k['kept_v1_good'], k['kept_v1'])} "
            f"| {_pr(k['good'], k['kept_good'], k['kept'])} | {_pr(k['good'], k['emitted_good'], k['emitted'])} |"
        )
    missing = [c.id for c in cands if c.id not in labels or not labels[c.id].get("label")]
    if missing:
        lines.append(f"\n{len(missing)} candidates have no label yet (first: {missing[0]}).")
    if drift:
        changed = ", ".join(drift[:5])
        lines.append(f"\n{len(drift)} candidates changed since they were labelled (not counted): {changed}")
    return "\n".join(lines) + "\n"


def truth_report(cands: list[Candidate], labels: dict[str, dict[str, str]]) -> str:
    """`benchmarks.image_truth` against the same labels: for each labelled recolour and removal of the real
    photos, the audit's verdict (the picture re-derived from the edit's words, then the expression "the
    <old colour> <name>" or "the <name>" re-executed on it with the certificate) beside the label. The audit
    reads the graph, not the pixels: it can say an edit is still true only when the graph says so (another
    object of the name), never that a part of the object was left."""
    from benchmarks.image_truth import pixel_graph
    from hardneg.core.certify import Certifier
    from hardneg.core.gqa.loader import load_graphs
    from hardneg.core.records import PathNode
    from hardneg.core.words.attribute_table import AttributeTable
    from hardneg.core.words.table import Words

    table = AttributeTable.load()
    certifier = Certifier(Words.load(), table)
    graphs = {c.image_id: c.graph for c in load_graphs(PHOTOS / "sceneGraphs.json")}
    counts: Counter = Counter()
    for c in cands:
        lab = labels.get(c.id, {}).get("label")
        if not lab or c.image_id not in graphs or c.edit.get("op") not in ("set_attribute", "remove"):
            continue
        graph = graphs[c.image_id]
        obj = graph.objects.get(c.edit["object"])
        if obj is None:
            continue
        old = c.edit.get("from")
        attrs = (old,) if c.edit["op"] == "set_attribute" and old in obj.attributes else ()
        if c.edit["op"] == "set_attribute" and not attrs:
            counts["no_claim"] += 1  # the colour came from the pixels: the graph's expression names none
            continue
        edited = pixel_graph(c.edit, graph, graphs, table)
        true = edited is not None and certifier.nothing(PathNode(obj.name, attrs), edited) is not None
        counts[(lab, true)] += 1
    labs = sorted({lab for lab, _ in (k for k in counts if isinstance(k, tuple))})
    per = ", ".join(f"{lab} {counts[(lab, True)]} of {counts[(lab, True)] + counts[(lab, False)]}" for lab in labs)
    return (
        f"\nbenchmarks.image_truth on the labelled recolours and removals of the real photos, what it calls still "
        f"true, per label: {per}; {counts['no_claim']} recolours of a colour read from the pixels, which the "
        f"graph does not name, not judged\n"
    )


# -- drawing ---------------------------------------------------------------------------------------------


def tile(c: Candidate, n: int) -> Image.Image:
    """The source and the candidate side by side, cropped around the edited boxes (box outlined)."""
    h, w = c.source.shape[:2]
    if c.boxes:
        x0 = min(b[0] for b in c.boxes)
        y0 = min(b[1] for b in c.boxes)
        x1 = max(b[0] + b[2] for b in c.boxes)
        y1 = max(b[1] + b[3] for b in c.boxes)
        m = max(24, int(0.35 * max(x1 - x0, y1 - y0)))
        r = (max(0, x0 - m), max(0, y0 - m), min(w, x1 + m), min(h, y1 + m))
    else:
        r = (0, 0, w, h)
    a = Image.fromarray(c.source).crop(r)
    b = Image.fromarray(c.pixels).crop(r)
    s = 300 / max(a.size)
    a, b = (
        a.resize((max(1, round(a.width * s)), max(1, round(a.height * s)))),
        b.resize((max(1, round(a.width * s)), max(1, round(a.height * s)))),
    )
    draw = ImageDraw.Draw(a)
    for bx in c.boxes:
        draw.rectangle([(bx[0] - r[0]) * s, (bx[1] - r[1]) * s, (bx[0] + bx[2] - r[0]) * s,
                        (bx[1] + bx[3] - r[1]) * s], outline=(255, 0, 255))  # fmt: skip
    out = Image.new("RGB", (a.width * 2 + 8, a.height + 16), "white")
    out.paste(a, (0, 16))
    out.paste(b, (a.width + 8, 16))
    ImageDraw.Draw(out).text((2, 2), f"#{n} {c.maker}: {c.what} [{c.image_id}]", fill="black")
    return out


def render(cands: list[Candidate], folder: Path, per_sheet: int = 8) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tiles = [tile(c, n) for n, c in enumerate(cands)]
    for k in range(0, len(tiles), per_sheet):
        group = tiles[k : k + per_sheet]
        width = 2 * max(t.width for t in group) + 10
        rows = [group[i : i + 2] for i in range(0, len(group), 2)]
        sheet = Image.new("RGB", (width, sum(max(t.height for t in r) for r in rows) + 4), (170, 170, 170))
        y = 0
        for row in rows:
            x = 0
            for t in row:
                sheet.paste(t, (x, y))
                x += width // 2
            y += max(t.height for t in row)
        sheet.save(folder / f"sheet_{k // per_sheet:02d}.png")


def read_labels(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    with path.open(newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--render", type=Path, help="draw every candidate beside its source into sheets here")
    ap.add_argument("--list", action="store_true", help="print every candidate with its label and scores")
    ap.add_argument("--sklearn-images", type=Path, help="scikit-learn's sample photos for the held-out split")
    ap.add_argument("--opencv-images", type=Path, help="OpenCV's sample photos for the second held-out split")
    args = ap.parse_args(argv)
    cands = list(candidates())
    score(cands)
    labels = read_labels(args.labels)
    from benchmarks import edit_heldout, edit_heldout_b

    held = list(edit_heldout.candidates(args.sklearn_images))
    held_b = list(edit_heldout_b.candidates(args.opencv_images))
    score(held)
    score(held_b)
    gone = edit_heldout.missing(args.sklearn_images) + ([] if held_b else ["OpenCV's (held-out B)"])
    sys.stdout.write(
        "In-sample (the thresholds were chosen on these), held-out (labelled before the filter was run on "
        "them) and held-out B (labelled after the rules measured on held-out were chosen)"
        + (f"; held-out photos not available here: {', '.join(gone)}" if gone else "")
        + ":\n\n"
    )
    both = edit_heldout.side_by_side(
        edit_heldout.counts(cands, labels),
        ("held-out", edit_heldout.counts(held, read_labels(edit_heldout.LABELS))),
        ("held-out B", edit_heldout.counts(held_b, read_labels(edit_heldout_b.LABELS))),
    )
    sys.stdout.write(both + "\nIn-sample, per maker:\n\n")
    if args.render:
        render(cands, args.render)
    if args.list:
        for n, c in enumerate(cands):
            lab = labels.get(c.id, {})
            keep = "-" if c.maker == "flip" else ("pass" if passes(c) else "fail")
            sc = " ".join(f"{k}={v:.2f}" for k, v in sorted(c.scores.items()))
            print(f"#{n} {c.id} [{lab.get('label', '?')}] filter={keep} refused={c.refused[:60]!r} {sc}")
    sys.stdout.write(report(cands, labels))
    sys.stdout.write(truth_report(cands, labels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
