"""Fuzzing ingest and the path stage with malformed graphs, ids, names and images.

Each example is a small corpus of good and bad images, run through the real stages (ingest up to paths,
`core.runner.stage.Run`) on a scene-graph file and an images folder written for it. Whatever the mix:
- no exception escapes;
- every bad image has an ingest reject with its (printable) id and a reason;
- every good image is kept, and the path stage's output is exactly what a run of the good images
  alone gives (bad input never changes good output);
- nothing is written outside the run folder, and no absolute or traversal id touches its target.
"""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from PIL import Image

from hardneg.core.config import load_config
from hardneg.core.errors import EmptyInput
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.ids import printable_id
from hardneg.core.io import read_jsonl
from hardneg.core.rows import PATHS_POSITIVES
from hardneg.core.runner.stage import Run
from hardneg.flows.pipeline import STAGES
from tests.test_bad_input import snapshot

UP_TO_PATHS = STAGES[: [s.name for s in STAGES].index("paths") + 1]
NAMES = ("cup", "table", "man", "dog", "car", "chair")
ATTRS = ("red", "blue", "small", "large", "wooden", "white")
RELS = ("on", "to the left of", "to the right of", "near", "behind")
ESCAPES = ("/tmp/hardneg-fuzz-abs", "../../hardneg-fuzz-up")  # ids that name a place outside the folder


@dataclass
class Entry:
    image_id: str
    member: bytes  # `"id": {graph}` as it stands in the file
    image: str  # how its image is written: ok, png, missing, truncated, wrong_size, garbage, empty, none
    bad: bool
    size: tuple[int, int]


@st.composite
def graphs(draw: Any) -> dict[str, Any]:
    """A valid GQA graph: boxes inside the image, relations between its objects."""
    w, h = draw(st.integers(24, 64)), draw(st.integers(24, 64))
    n = draw(st.integers(1, 4))
    objects = {}
    for i in range(n):
        x, y = draw(st.integers(0, w - 8)), draw(st.integers(0, h - 8))
        objects[f"{i + 1}"] = {
            "name": draw(st.sampled_from(NAMES)),
            "x": x,
            "y": y,
            "w": draw(st.integers(4, w - x)),
            "h": draw(st.integers(4, h - y)),
            "attributes": draw(st.lists(st.sampled_from(ATTRS), max_size=2, unique=True)),
            "relations": [
                {"name": draw(st.sampled_from(RELS)), "object": f"{k + 1}"}
                for k in draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True))
                if k != i
            ],
        }
    if draw(st.booleans()):  # repairable noise: still a good graph
        o = objects["1"]
        o["name"] = draw(st.sampled_from([f" {o['name']}", f"{o['name']}\n", f"big\t{o['name']}"]))
    return {"width": w, "height": h, "objects": objects}


def _set_name(g: dict[str, Any], name: str) -> bytes:
    g = json.loads(json.dumps(g))
    g["objects"]["1"]["name"] = name
    return orjson.dumps(g)


def _relations_dict(g: dict[str, Any]) -> bytes:
    g = json.loads(json.dumps(g))
    g["objects"]["1"]["relations"] = {"x": g["objects"]["1"]["relations"]}  # the GQA web page's form
    return orjson.dumps(g)


def _dup_object(g: dict[str, Any]) -> bytes:
    objs = b",".join(orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in g["objects"].items())
    twin = b'"1":' + orjson.dumps({**g["objects"]["1"], "name": "lamp"})
    return b'{"width":%d,"height":%d,"objects":{%s,%s}}' % (g["width"], g["height"], objs, twin)


def _many_objects(g: dict[str, Any]) -> bytes:
    o = {**g["objects"]["1"], "relations": []}
    return orjson.dumps({**g, "objects": {f"{k}": o for k in range(1, 1_002)}})


# graph defects: each turns a valid graph into the bytes of one that must be rejected
DEFECTS = {
    "control character": lambda g: _set_name(g, "cu\x1bp"),
    "NUL": lambda g: _set_name(g, "cup\x00"),
    "overlong name": lambda g: _set_name(g, "c" * 150),
    "duplicate object id": _dup_object,
    "duplicate key": lambda g: orjson.dumps(g).replace(b'"width":', b'"width":1,"width":', 1),
    "missing width": lambda g: orjson.dumps({k: v for k, v in g.items() if k != "width"}),
    "zero box": lambda g: orjson.dumps(g).replace(b'"w":', b'"w":0,"ww":', 1),
    "NaN": lambda g: orjson.dumps(g).replace(b'"height":', b'"height":NaN,"hh":', 1),
    "lone surrogate": lambda g: _set_name(g, "QQQ").replace(b"QQQ", b"\\ud800"),
    "invalid UTF-8": lambda g: _set_name(g, "QQQ").replace(b"QQQ", b"\xff\xfe"),
    "objects as list": lambda g: orjson.dumps({**g, "objects": list(g["objects"].values())}),
    "relations as dict": _relations_dict,
    # hostile: each cost a crash or minutes before the per-image limits
    "deep nesting": lambda g: orjson.dumps(g).replace(
        b'"attributes":', b'"attributes":' + b"[" * 600 + b"]" * 600 + b',"a":', 1
    ),
    "huge coordinate": lambda g: orjson.dumps(g).replace(b'"x":', b'"x":1.2e29,"xx":', 1),
    "too many objects": _many_objects,
    "over a megabyte": lambda g: orjson.dumps({**g, "note": "x" * 1_100_000}),
}
# png/gif: other formats named .jpg; cmyk: a JPEG in a mode colour words cannot trust; symlink: a link out
BAD_IMAGES = ("missing", "truncated", "wrong_size", "garbage", "empty", "png", "gif", "cmyk", "symlink")


@st.composite
def corpora(draw: Any) -> list[Entry]:
    entries: list[Entry] = []
    for i in range(draw(st.integers(1, 7))):
        g = draw(graphs())
        kind = draw(st.sampled_from(["good", "good", "good", "defect", "bad_id", "bad_image", "duplicate_id"]))
        prefix = draw(st.sampled_from(["", "Img ", "ü-", "x.", "-", "<img src=x onerror=alert(5)>"]))
        image_id, member, image, bad = f"{prefix}{i}", orjson.dumps(g), "ok", False
        if kind == "defect":
            member, bad = DEFECTS[draw(st.sampled_from(sorted(DEFECTS)))](g), True
        elif kind == "bad_id":
            image_id = draw(
                st.sampled_from([f"a/{i}", f"{i}\n", f"{i}\x00", "9" * 301 + str(i), f"{ESCAPES[i % 2]}{i}"])
            )
            image, bad = "none", True
        elif kind == "bad_image":
            image, bad = draw(st.sampled_from(BAD_IMAGES)), True
        elif kind == "duplicate_id" and entries:
            first = next((e for e in entries if not e.bad), None)
            if first is not None:
                image_id, image, bad = first.image_id, "none", True
        member = json.dumps(image_id).encode() + b": " + member
        entries.append(Entry(image_id, member, image, bad, (g["width"], g["height"])))
    return entries


def _image_bytes(kind: str, w: int, h: int) -> bytes:
    buf = io.BytesIO()
    im = Image.new("RGB", (w + 3 if kind == "wrong_size" else w, h), (120, 40, 200))
    im.putpixel((1, 1), (0, 255, 0))
    if kind == "cmyk":
        im = im.convert("CMYK")
    im.save(buf, {"png": "PNG", "gif": "GIF"}.get(kind, "JPEG"), quality=90)
    data = buf.getvalue()
    return {"truncated": data[: len(data) // 2], "garbage": b"\xff\xd8\xff\xe0 not a jpeg" * 7, "empty": b""}.get(
        kind, data
    )


def _write_corpus(folder: Path, entries: list[Entry]) -> tuple[Path, Path]:
    images = folder / "in" / "images"
    images.mkdir(parents=True)
    for e in entries:
        if e.image in ("none", "missing"):
            continue
        data = _image_bytes(e.image, *e.size)
        if e.image == "symlink":  # a good image, reached through a link that leaves the folder
            target = folder / "in" / "elsewhere" / f"{len(e.image_id)}-{hash(e.image_id)}.jpg"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(data)
            (images / f"{e.image_id}.jpg").symlink_to(target)
        else:
            (images / f"{e.image_id}.jpg").write_bytes(data)
    graphs_file = folder / "in" / "sceneGraphs.json"
    graphs_file.write_bytes(b"{" + b",\n".join(e.member for e in entries) + b"}")
    return graphs_file, images


def _run(folder: Path, entries: list[Entry]) -> tuple[Run, Path]:
    """The stages up to paths; a corpus with no image kept, or no positive made, ends in `EmptyInput`
    (a user error), raised by the stage that found it, whose units' outputs are still there to check."""
    graphs_file, images = _write_corpus(folder, entries)
    cfg = load_config(None, {"shard_size": 2, "inputs": {"scene_graphs": str(graphs_file), "images": str(images)}})
    root = folder / "out" / "run"
    for s in UP_TO_PATHS:
        s.validate(cfg)
    prepare_run(cfg, root)
    run = Run(root, cfg, UP_TO_PATHS)
    for name in run.order:
        try:
            run.run_stage(name)
        except EmptyInput:
            assert (name == "ingest") == all(e.bad for e in entries) and name in ("ingest", "paths")
            break
    return run, root


def _paths_output(run: Run) -> tuple[list[Any], list[Any]]:
    if not run.is_complete("ingest"):  # nothing kept: no path searched
        return [], []
    rejects = [r for f in run.reject_files() if "paths" in f.parts for r in read_jsonl(f)]
    return list(run.read_all(PATHS_POSITIVES)), rejects


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_bad_input_is_rejected_with_a_reason_and_never_changes_good_output(entries: list[Entry]):
    n = _check(entries)
    event(f"bad images: {sum(e.bad for e in entries)}, positives: {'3+' if n >= 3 else n}")


GOOD = {"width": 40, "height": 30, "objects": {"1": {"name": "cup", "x": 2, "y": 3, "w": 10, "h": 8,
        "attributes": ["red"], "relations": []}}}  # fmt: skip


@pytest.mark.parametrize("kind", [f"graph:{d}" for d in sorted(DEFECTS)] + [f"image:{b}" for b in BAD_IMAGES])
def test_each_kind_of_bad_input_alone_beside_a_good_image(kind: str):
    """Every defect and bad image, certainly drawn (the property test draws them at random)."""
    what, name = kind.split(":")
    member = DEFECTS[name](GOOD) if what == "graph" else orjson.dumps(GOOD)
    bad = Entry("7", b'"7": ' + member, name if what == "image" else "ok", True, (40, 30))
    _check([Entry("1", b'"1": ' + orjson.dumps(GOOD), "ok", False, (40, 30)), bad])


def _check(entries: list[Entry]) -> int:
    """Run `entries` and the good ones alone; check the rejects and the output; returns the positives."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before = snapshot(folder, folder / "out" / "run")
        run, root = _run(folder / "mixed", entries)
        after = snapshot(folder, folder / "mixed" / "out" / "run")
        new = set(after) - set(before)
        assert all("/mixed/in/" in p for p in new), f"written outside the run folder: {sorted(new)}"
        assert not list(Path("/tmp").glob("hardneg-fuzz-*")) and not list(folder.glob("**/hardneg-fuzz-*"))

        kept = [r["image_id"] for f in sorted((root / "work" / "ingest").glob("graphs-*.jsonl")) for r in read_jsonl(f)]
        rejects = list(read_jsonl(root / "work" / "ingest" / "_rejects" / "all.jsonl"))
        reasons: dict[str, list[str]] = {}
        for r in rejects:
            assert r["stage"] == "ingest" and r["reason"]
            reasons.setdefault(r["image_id"], []).append(r["reason"])
        for e in entries:
            if e.bad:
                assert reasons.get(printable_id(e.image_id)), f"no reject for bad image {e.image_id!r} ({e.image})"
        good = [e for e in entries if not e.bad]
        assert kept == [e.image_id for e in good]

        clean_run, _ = _run(folder / "clean", good)  # the good images alone
        got = _paths_output(run)
        assert got == _paths_output(clean_run)
        return len(got[0])
