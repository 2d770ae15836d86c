"""Negative images (SPEC 1.5): flip, replace object / attribute, swap object / attribute.

Each negative keeps its positive's expression and path and records the `edit` it applied as a change to
the scene graph (`core.edits`). A plan is kept only when the executor says the original path matches
nothing in the edited graph; then the inpainting backend makes N candidate images, all kept for the
filters (which pick one). Replacement words come from the language backend, restricted to words the image
backend can render (a colour it can paint, an object name with a donor crop in the corpus).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, JpegImagePlugin

from backends.inpaint import EditRegion, InpaintBackend, InpaintJob
from backends.language import LanguageBackend, ReplaceRequest
from core.attributes import AttributeTable
from core.edits import apply_edit, has_left_right
from core.executor import GraphIndex, execute
from core.records import PathNode, Reject, SceneGraph, SceneObject, content_id
from core.vocab import NameCategories
from generators.negatives import keyed_seed

GENERATOR = "negatives_image@v1"
IMAGE_TYPES = ("replace_object", "replace_attribute", "swap_object", "swap_attribute", "flip")
RARITY = {"flip": 0, "swap_attribute": 0, "swap_object": 1, "replace_attribute": 2, "replace_object": 2}


@dataclass(slots=True)
class Donor:
    image_id: str
    object_id: str
    box: tuple[int, int, int, int]


@dataclass(slots=True)
class Plan:
    negative_type: str
    level: int
    nodes: tuple[int, ...]
    edit: dict[str, Any] | None  # None until a replacement word is chosen
    regions: list[EditRegion] = field(default_factory=list)
    # replace plans: what to ask the language backend
    part: str | None = None
    word: str | None = None
    category: str | None = None
    options: tuple[str, ...] = ()
    object_id: str | None = None


@dataclass(slots=True)
class ImageContext:
    table: AttributeTable
    names: NameCategories
    vocab: dict[str, Counter]
    donors: dict[str, list[Donor]]  # name -> donor objects across the corpus
    images_dir: Path
    out_dir: Path  # <run>/images
    seed: int
    candidates: int = 10
    chunk_jobs: int = 8  # jobs inpainted per backend call; bounds memory to chunk_jobs x candidates images
    per_positive: int = 1
    max_rounds: int = 3
    types: tuple[str, ...] = IMAGE_TYPES
    # Which objects may be edited: the pipeline passes the target filter (no stuff such as "floor", no
    # box covering most of the image), so an edit never repaints the ground or pastes a sky into a cup.
    editable: Callable[[SceneObject, SceneGraph], bool] = lambda obj, graph: True


def _prompt(attrs: tuple[str, ...], name: str) -> str:
    words = " ".join((*attrs, name))
    return f"a photo of {'an' if words[:1] in 'aeiou' else 'a'} {words}"


def plans_for(path: PathNode, graph: SceneGraph, ctx: ImageContext, image: Image.Image) -> list[Plan]:
    """Every structurally possible image edit of a positive, before choosing words."""
    nodes = path.nodes()
    objs = [graph.objects.get(n.id or "") for n in nodes]
    objs = [o if o is not None and ctx.editable(o, graph) else None for o in objs]
    out: list[Plan] = []
    lr_root = any(has_left_right(a) for a in nodes[0].attributes) or any(
        has_left_right(e.name) for e in nodes[0].relations
    )
    lr_any = any(has_left_right(a) for n in nodes for a in n.attributes) or any(
        has_left_right(e.name) for n in nodes for e in n.relations
    )
    if lr_any:
        out.append(Plan("flip", 1 if lr_root else 2, (0,), {"op": "flip"}))
    for i, (n, o) in enumerate(zip(nodes, objs, strict=True)):
        if o is None:
            continue
        level = 1 if i == 0 else 2
        cat = ctx.names.category(o.name)
        if cat is not None:
            opts = tuple(m for m in ctx.vocab["names"] if ctx.names.category(m) == cat and m != o.name)
            out.append(
                Plan(
                    "replace_object",
                    level,
                    (i,),
                    None,
                    part="object",
                    word=o.name,
                    category=f"object: {cat}",
                    options=opts,
                    object_id=o.id,
                )
            )
        for a in n.attributes:
            c = ctx.table.category(a)
            if c is None:
                continue
            opts = tuple(b for b in ctx.vocab["attributes"] if ctx.table.category(b) == c and b not in o.attributes)
            out.append(
                Plan(
                    "replace_attribute",
                    level,
                    (i,),
                    None,
                    part="attribute",
                    word=a,
                    category=c,
                    options=opts,
                    object_id=o.id,
                )
            )
    for i in range(len(nodes)):
        for k in range(i + 1, len(nodes)):
            oi, ok = objs[i], objs[k]
            if oi is None or ok is None or oi.id == ok.id:
                continue
            level = 1 if i == 0 else 2
            if oi.name != ok.name:
                # Swapping objects pastes each one's own crop into the other's box.
                regions = [
                    EditRegion(oi.box, "replace", _prompt((), ok.name), donor=_crop(image, ok.box)),
                    EditRegion(ok.box, "replace", _prompt((), oi.name), donor=_crop(image, oi.box)),
                ]
                out.append(Plan("swap_object", level, (i, k), {"op": "swap_names", "objects": [oi.id, ok.id]}, regions))
            for a in nodes[i].attributes:
                for b in nodes[k].attributes:
                    c = ctx.table.category(a)
                    if c is None or c != ctx.table.category(b) or a == b or a in ok.attributes or b in oi.attributes:
                        continue
                    regions = [_attr_region(oi.box, b, c, oi.name, a), _attr_region(ok.box, a, c, ok.name, b)]
                    out.append(
                        Plan(
                            "swap_attribute",
                            level,
                            (i, k),
                            {"op": "swap_attributes", "objects": [oi.id, ok.id], "from": [a, b]},
                            regions,
                        )
                    )
    return [p for p in out if p.negative_type in ctx.types]


def _attr_region(
    box: tuple[int, int, int, int], new: str, category: str, name: str, old: str | None = None
) -> EditRegion:
    if category == "color":
        return EditRegion(box, "recolor", _prompt((new,), name), color=new, source_color=old)
    return EditRegion(box, "replace", _prompt((new,), name))


def _source_crop(images_dir: Path, donor: Donor) -> Image.Image:
    with Image.open(images_dir / f"{donor.image_id}.jpg") as im:
        x, y, w, h = donor.box
        return im.convert("RGB").crop((x, y, x + w, y + h))


def _finish(plan: Plan, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str | None) -> Plan | None:
    """Fill in the edit and regions of a replace plan for `word`; None when the backend cannot render it."""
    o = graph.objects[plan.object_id]  # type: ignore[index]
    if plan.negative_type == "replace_attribute":
        region = _attr_region(o.box, word, plan.category, o.name, plan.word)  # type: ignore[arg-type]
        if not backend.supports(region):
            return None
        return Plan(
            plan.negative_type,
            plan.level,
            plan.nodes,
            {"op": "set_attribute", "object": o.id, "from": plan.word, "to": word},
            [region],
        )
    # replace_object: a donor of the new name from another image, else (copy-paste backends) removal
    keep_attrs = tuple(a for a in o.attributes if ctx.table.category(a) == "color")[:1]
    donors = [d for d in ctx.donors.get(word or "", []) if d.image_id != graph.image_id]
    donor = None
    if donors:
        pick = donors[random.Random(keyed_seed(ctx.seed, "donor", graph.image_id, o.id, word)).randrange(len(donors))]
        try:
            donor = _source_crop(ctx.images_dir, pick)
        except OSError:
            donor = None
    region = EditRegion(o.box, "replace", _prompt(keep_attrs, word or ""), donor=donor)
    if backend.supports(region):
        return Plan(
            plan.negative_type, plan.level, plan.nodes, {"op": "rename", "object": o.id, "name": word}, [region]
        )
    region = EditRegion(o.box, "remove", "background")
    if backend.supports(region):
        return Plan(plan.negative_type, plan.level, plan.nodes, {"op": "remove", "object": o.id}, [region])
    return None


_PLACEHOLDER = Image.new("RGB", (1, 1))


def _renderable(plan: Plan, graph: SceneGraph, ctx: ImageContext, backend: InpaintBackend, word: str) -> bool:
    """Whether `_finish` can render `word`, without reading any donor image."""
    o = graph.objects[plan.object_id]  # type: ignore[index]
    if plan.negative_type == "replace_attribute":
        return backend.supports(_attr_region(o.box, word, plan.category, o.name))  # type: ignore[arg-type]
    has_donor = any(d.image_id != graph.image_id for d in ctx.donors.get(word, []))
    return backend.supports(
        EditRegion(o.box, "replace", _prompt((), word), donor=_PLACEHOLDER if has_donor else None)
    ) or backend.supports(EditRegion(o.box, "remove", "background"))


def _matches_nothing(path: PathNode, graph: SceneGraph, edit: dict[str, Any], table: AttributeTable) -> bool:
    return execute(path.without_ids(), GraphIndex(apply_edit(graph, edit), table)) == frozenset()


def _crop(image: Image.Image, box: tuple[int, int, int, int]) -> Image.Image:
    x, y, w, h = box
    return image.crop((x, y, x + w, y + h))


def make_image_negatives(
    positives: list[dict[str, Any]],
    graphs: dict[str, SceneGraph],
    ctx: ImageContext,
    language: LanguageBackend,
    inpaint: InpaintBackend,
) -> tuple[list[dict[str, Any]], list[Reject], Counter]:
    """Plan, choose words, inpaint N candidates and write them; returns vanilla records."""
    stats: Counter = Counter()
    rejects: list[Reject] = []
    states = []
    for p in positives:
        path = PathNode.from_json(p["path"])
        graph = graphs[p["image_id"]]
        src = ctx.images_dir / f"{p['image_id']}.jpg"
        try:
            with Image.open(src) as im:
                im.load()
                image = im.convert("RGB")
                quant = (
                    getattr(im, "quantization", None),
                    JpegImagePlugin.get_sampling(im) if im.format == "JPEG" else -1,
                )
        except (OSError, SyntaxError, ValueError) as e:
            stats["source_unreadable"] += 1
            rejects.append(
                Reject("image_negatives", f"source image unreadable: {src.name}: {e}", p["image_id"], p["id"])
            )
            continue
        plans = plans_for(path, graph, ctx, image)
        rng = random.Random(keyed_seed(ctx.seed, "image-negatives", p["id"]))
        draw = {id(pl): rng.random() for pl in plans}
        plans.sort(key=lambda pl: (RARITY[pl.negative_type], -pl.level, draw[id(pl)]))
        states.append(
            {"pos": p, "path": path, "graph": graph, "image": image, "quant": quant, "todo": iter(plans), "chosen": []}
        )

    for _ in range(ctx.max_rounds):
        pending: list[tuple[dict, Plan, ReplaceRequest]] = []
        for st in states:
            while len(st["chosen"]) < ctx.per_positive:
                plan = next(st["todo"], None)
                if plan is None:
                    break
                if plan.edit is not None:  # flip and swaps: no word to choose
                    if all(inpaint.supports(r) for r in plan.regions) and _matches_nothing(
                        st["path"], st["graph"], plan.edit, ctx.table
                    ):
                        st["chosen"].append(plan)
                    else:
                        stats[f"not_negative:{plan.negative_type}"] += 1
                    continue
                options = tuple(w for w in plan.options if _renderable(plan, st["graph"], ctx, inpaint, w))[:40]
                if not options:
                    stats[f"no_renderable_word:{plan.negative_type}"] += 1
                    continue
                req = ReplaceRequest(
                    f"img:{st['pos']['id']}:{plan.negative_type}:{plan.nodes}:{plan.word}",
                    st["pos"]["expression"],
                    plan.part,
                    plan.word,
                    plan.category,
                    options,
                    5,
                )  # type: ignore[arg-type]
                pending.append((st, plan, req))
                break
        if not pending:
            break
        by_key = {req.key: (st, plan) for st, plan, req in pending}

        done_cache: dict[tuple[int, str], Plan | None] = {}

        def finished(st, plan, word, done_cache=done_cache):
            # Validation and the answer loop ask about the same words: read each donor and re-check once.
            key = (id(plan), word)
            if key not in done_cache:
                done = _finish(plan, st["graph"], ctx, inpaint, word) if word in plan.options else None
                ok = done is not None and _matches_nothing(st["path"], st["graph"], done.edit, ctx.table)
                done_cache[key] = done if ok else None
            return done_cache[key]

        def validate(req, values, by_key=by_key):
            st, plan = by_key[req.key]
            if any(finished(st, plan, v) for v in values):
                return None
            return f"no renderable replacement that makes the path match nothing ({', '.join(values)})"

        answers = language.replace([req for _, _, req in pending], validate)
        for (st, plan, _req), ans in zip(pending, answers, strict=True):
            done = next((d for v in (ans.values or ()) if (d := finished(st, plan, v))), None)
            if done is None:
                stats[f"replace_failed:{plan.negative_type}"] += 1
                rejects.append(
                    Reject(
                        "image_negatives",
                        ans.error or "no usable replacement",
                        st["pos"]["image_id"],
                        st["pos"]["id"],
                        detail={"negative_type": plan.negative_type, "word": plan.word, "raw": ans.raw},
                    )
                )
                continue
            st["chosen"].append(done)

    records: list[dict[str, Any]] = []
    jobs: list[tuple[dict, Plan, InpaintJob | None, int]] = []
    for st in states:
        for plan in st["chosen"]:
            nid = content_id(
                "negative-image", str(st["pos"]["id"]), plan.negative_type, repr(sorted(plan.edit.items()))
            )
            job = None
            if plan.negative_type != "flip":
                if not all(inpaint.supports(r) for r in plan.regions):
                    stats[f"unsupported:{plan.negative_type}"] += 1
                    continue
                job = InpaintJob(str(nid), st["image"], tuple(plan.regions), ctx.candidates, ctx.seed)
            jobs.append((st, plan, job, nid))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    # Inpaint in chunks so only a few jobs' candidates are in memory at once (10 full images per job).
    outputs: dict[int, list[Image.Image]] = {}
    pending_jobs = [(nid, j) for _, _, j, nid in jobs if j is not None]
    for i in range(0, len(pending_jobs), ctx.chunk_jobs):
        chunk = pending_jobs[i : i + ctx.chunk_jobs]
        for (nid, _), cands in zip(chunk, inpaint.run([j for _, j in chunk]), strict=True):
            outputs[nid] = [c for c in cands]
        for st, plan, job, nid in [x for x in jobs if x[3] in outputs]:
            records.append(_write(st, plan, job, nid, outputs.pop(nid), ctx, inpaint, stats))
    for st, plan, job, nid in jobs:
        if job is None:  # flips: the mirrored source is the one candidate
            records.append(
                _write(
                    st, plan, job, nid, [st["image"].transpose(Image.Transpose.FLIP_LEFT_RIGHT)], ctx, inpaint, stats
                )
            )
    records.sort(key=lambda r: (r["source_image_id"], r["id"]))
    return records, rejects, stats


def _write(st, plan, job, nid, cands, ctx, inpaint, stats) -> dict[str, Any]:
    """Save the candidates like their source and build the vanilla record."""
    files = []
    for k, im in enumerate(cands):
        name = f"{st['pos']['image_id']}_{nid:x}_{k}.jpg"
        _save_like_source(im, ctx.out_dir / name, st["quant"])
        files.append(f"images/{name}")
    p = st["pos"]
    target = st["graph"].objects[PathNode.from_json(p["path"]).id]
    x, y, w, h = target.box
    bbox = [p["width"] - x - w, y, w, h] if plan.negative_type == "flip" else [x, y, w, h]
    record = {
        "id": nid,
        "image_id": f"{p['image_id']}_{nid:x}",
        "source_image_id": p["image_id"],
        "positive_id": p["id"],
        "negative_level": plan.level,
        "negative_type": plan.negative_type,
        "shuffle_index": list(plan.nodes),
        "ori_type": p["tuple_type"],
        "negative_cate": "image",
        "tuple_type": p["tuple_type"],
        "level": p["level"],
        "expression": p["expression"],
        "path": p["path"],
        "edit": plan.edit,
        "edit_boxes": [list(r.box) for r in plan.regions],  # where the pixels changed (none for flip)
        "file_name": files[0],
        "candidates": files,
        "bbox": bbox,
        "width": p["width"],
        "height": p["height"],
        "generator": GENERATOR,
        "backend": "flip" if job is None else inpaint.version,
    }
    stats[f"made:{plan.negative_type}:L{plan.level}"] += 1
    stats["candidates_written"] += len(files)
    return record


def _save_like_source(image: Image.Image, path: Path, source: tuple[Any, int]) -> None:
    """JPEG with the source's quantisation tables and subsampling, so scores compare like with like
    (SPEC section 6); a source that is not a JPEG gets quality 95."""
    qtables, sampling = source
    if qtables:
        image.save(path, "JPEG", qtables=qtables, subsampling=sampling if sampling != -1 else 0)
    else:
        image.save(path, "JPEG", quality=95)
