"""The pipeline's stages as plain functions over a run folder (SPEC section 3b).

Prefect flows (flows/) only orchestrate these. Each stage takes the run folder (and a shard) and writes
files; its work is keyed by a fingerprint of what it depends on, so a rerun skips finished shards, redoes
a stage whose inputs changed, and never duplicates a record.

    <run>/manifest.json, attribute_categories.json, rejects.jsonl, splits/<split>/{positive,coco}.json
    <run>/inputs/demo/            the demo world, when the run uses it
    <run>/work/config.json        the validated config the stages read
    <run>/work/ingest/            validated graphs in shards of JSON Lines, and their rejects
    <run>/work/paths/             positives per shard, their rejects and counts
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from PIL import Image

from core.attributes import AttributeTable
from core.balance import BalanceItem, balance
from core.coco import CocoWriter
from core.config import RunConfig
from core.demo_world import GENERATOR_VERSION as DEMO_WORLD_VERSION
from core.io import JsonArrayWriter, atomic_write_bytes, read_jsonl, write_json, write_jsonl
from core.records import Reject, SceneGraph
from core.splits import image_unit, split_of
from core.stats import build_stats, write_stats
from filters.decide import Thresholds, decide_image, decide_text

log = logging.getLogger("hardneg")

SPLITS = ("train", "val", "test")
HARDNEG_VERSION = "0.1.0"


# --------------------------------------------------------------------------------------------------
# Run folder and stage bookkeeping


@dataclass(slots=True, frozen=True)
class RunFolder:
    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def config_file(self) -> Path:
        return self.work / "config.json"

    def config(self) -> RunConfig:
        return RunConfig.model_validate_json(self.config_file.read_bytes())

    def stage(self, name: str, fingerprint: str) -> Path:
        """The stage's work folder, emptied first if it holds work made under another fingerprint."""
        d = self.work / name
        fp_file = d / "_fingerprint"
        if d.exists() and (not fp_file.exists() or fp_file.read_text() != fingerprint):
            log.info("stage %s: inputs changed, redoing it", name)
            shutil.rmtree(d)
        if not d.exists():
            d.mkdir(parents=True)
            atomic_write_bytes(fp_file, fingerprint.encode())
        return d

    def opened(self, name: str, fingerprint: str) -> Path:
        """The folder of a stage that `stage()` opened for this fingerprint. Shard tasks run in parallel
        and must not reset it, so a mismatch is an error, not a reset."""
        d = self.work / name
        if not d.exists() or self.fingerprint_of(name) != fingerprint:
            raise RuntimeError(f"{name} stage is not open for this config: call open_{name}_stage first")
        return d

    def fingerprint_of(self, name: str) -> str:
        return (self.work / name / "_fingerprint").read_text()


def _shard_path(folder: Path, kind: str, like: Path) -> Path:
    """The `kind` file of the same shard as `like`: every stage names its shard files `<kind>-<NNNNN>.jsonl`."""
    return folder / f"{kind}-{like.name.rsplit('-', 1)[1]}"


def _hash(*parts: Any) -> str:
    return hashlib.sha1(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()[:16]


def _file_stamp(path: Path) -> list[Any]:
    """Cheap identity of an input file or folder: names, sizes, mtimes (never the content of GBs)."""
    if path.is_dir():
        return sorted(
            (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir() if p.name.endswith(".json")
        )
    st = path.stat()
    return [path.name, st.st_size, st.st_mtime_ns]


def _content_hash(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------------
# Stage 0: prepare


def prepare_run(cfg: RunConfig, root: Path) -> RunFolder:
    """Create the run folder, store the config and the attribute table, build the demo world if used."""
    run = RunFolder(root)
    run.work.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(run.config_file, cfg.model_dump_json(indent=2).encode())
    table = AttributeTable.load(cfg.resolve(cfg.attribute_table))
    write_json(root / "attribute_categories.json", table.to_json())
    if cfg.inputs.scene_graphs is None:
        from core.demo_world import build_demo_world

        demo_dir = root / "inputs" / "demo"
        fp = _hash(cfg.demo.model_dump())
        stamp = demo_dir / "_fingerprint"
        if not (stamp.exists() and stamp.read_text() == fp):
            log.info("building the demo world (%d scenes)", cfg.demo.n_scenes)
            if demo_dir.exists():
                shutil.rmtree(demo_dir)
            build_demo_world(demo_dir, n_scenes=cfg.demo.n_scenes, seed=cfg.demo.seed)
            atomic_write_bytes(stamp, fp.encode())
    return run


def resolve_inputs(run: RunFolder, cfg: RunConfig) -> tuple[Path, Path | None]:
    if cfg.inputs.scene_graphs is None:
        demo_dir = run.root / "inputs" / "demo"
        return demo_dir / "demo_sceneGraphs.json", demo_dir / "images"
    sg = cfg.resolve(cfg.inputs.scene_graphs)
    images = cfg.resolve(cfg.inputs.images) if cfg.inputs.images is not None else None
    if not sg.exists():
        raise ValueError(f"scene graphs not found: {sg}")
    if images is not None and not images.is_dir():
        raise ValueError(f"images folder not found: {images}")
    return sg, images


# --------------------------------------------------------------------------------------------------
# Stage 1: ingest (stream, validate, check images, shard)


def graph_to_row(g: SceneGraph) -> dict[str, Any]:
    return {"image_id": g.image_id, "graph": g.to_gqa()}


def row_to_graph(row: dict[str, Any]) -> SceneGraph:
    from core.gqa import validate_graph

    check = validate_graph(row["image_id"], row["graph"])
    if check.graph is None:  # the shard was written from a validated graph: this is corruption
        raise ValueError(f"work shard holds an invalid graph {row['image_id']}: {check.reason}")
    return check.graph


def check_image(images: Path, graph: SceneGraph) -> str | None:
    """None when `<images>/<image_id>.jpg` exists, decodes and has the graph's size."""
    from PIL import Image, UnidentifiedImageError

    path = images / f"{graph.image_id}.jpg"
    if not path.exists():
        return f"image file missing: {path.name}"
    try:
        with Image.open(path) as im:
            size = im.size
            im.verify()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        return f"image file corrupt: {path.name}: {e}"
    if size != (graph.width, graph.height):
        return f"image size {size[0]}x{size[1]} differs from the graph's {graph.width}x{graph.height}"
    return None


def ingest(run: RunFolder) -> list[Path]:
    """Stream the scene graphs into validated shards; returns the shard files in order."""
    from core.gqa import load_graphs

    cfg = run.config()
    sg, images = resolve_inputs(run, cfg)
    if cfg.inputs.scene_graphs is None:  # inside the run folder: identify it by what built it, so a moved run resumes
        source: list[Any] = ["demo", cfg.demo.model_dump()]
    else:
        source = [str(sg), _file_stamp(sg), str(images)]
    fp = _hash("ingest@v1", source, cfg.shard_size)
    d = run.stage("ingest", fp)
    done = d / "_done.json"
    if done.exists():
        return [d / name for name in orjson.loads(done.read_bytes())["shards"]]
    rejects: list[dict[str, Any]] = []
    repairs: Counter = Counter()
    counts: Counter = Counter()
    shards: list[str] = []
    buf: list[dict[str, Any]] = []
    seen: set[str] = set()
    vocab: dict[str, Counter] = {"names": Counter(), "attributes": Counter(), "relations": Counter()}

    def flush() -> None:
        name = f"graphs-{len(shards):05d}.jsonl"
        write_jsonl(d / name, buf)
        shards.append(name)
        buf.clear()

    for check in load_graphs(sg):
        counts["images_read"] += 1
        if check.graph is None:
            rejects.append(Reject("ingest", check.reason or "invalid", check.image_id).to_json())
            continue
        if check.image_id in seen:
            rejects.append(Reject("ingest", "duplicate image id", check.image_id).to_json())
            continue
        seen.add(check.image_id)
        repairs.update(check.repairs)
        if images is not None and (why := check_image(images, check.graph)):
            rejects.append(Reject("ingest", why, check.image_id).to_json())
            continue
        buf.append(graph_to_row(check.graph))
        counts["images_kept"] += 1
        for obj in check.graph.objects.values():
            vocab["names"][obj.name] += 1
            vocab["attributes"].update(obj.attributes)
            vocab["relations"].update(r.name for r in obj.relations)
        if len(buf) >= cfg.shard_size:
            flush()
    if buf:
        flush()
    counts["images_rejected"] = len(rejects)
    write_jsonl(d / "rejects.jsonl", rejects)
    write_json(
        d / "_done.json",
        {
            "shards": shards,
            "counts": dict(counts),
            "repairs": dict(sorted(repairs.items())),
            "vocab": {k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in vocab.items()},
        },
    )
    log.info("ingest: %d images kept, %d rejected, %d shards", counts["images_kept"], len(rejects), len(shards))
    return [d / s for s in shards]


# --------------------------------------------------------------------------------------------------
# Stage 2: positive paths, one shard at a time


def paths_fingerprint(run: RunFolder, cfg: RunConfig) -> str:
    data_files = [
        cfg.attribute_table,
        cfg.targets.poor_referents,
        cfg.paths.relations,
        cfg.paths.templates,
        cfg.paths.english,
    ]
    return _hash(
        "paths@v1",
        run.fingerprint_of("ingest"),
        cfg.fingerprint("seed", "attribute_table", "targets", "paths"),
        [_content_hash(cfg.resolve(p)) for p in data_files],
    )


def open_paths_stage(run: RunFolder) -> Path:
    """Open (or reset, when its inputs changed) the paths stage; once, before its shards run in parallel."""
    return run.stage("paths", paths_fingerprint(run, run.config()))


def paths_shard(run: RunFolder, shard: Path) -> Path:
    """Generate the positives of one ingest shard; skipped when its output already exists."""
    from generators.paths import PathResources, generate_positives

    cfg = run.config()
    d = run.opened("paths", paths_fingerprint(run, cfg))
    out = _shard_path(d, "positives", shard)
    if out.exists():
        return out
    res = PathResources.load(cfg)
    rows: list[dict[str, Any]] = []
    rejects: list[dict[str, Any]] = []
    stats: Counter = Counter()
    for row in read_jsonl(shard):
        graph = row_to_graph(row)
        positives, rej, st = generate_positives(graph, cfg, res)
        rows.extend(p.to_vanilla() for p in positives)
        rejects.extend(r.to_json() for r in rej)
        stats.update(st)
    # Rejects and counts first, the positives file last: its presence marks the shard done.
    write_jsonl(out.with_suffix(".rejects.jsonl"), rejects)
    write_json(out.with_suffix(".stats.json"), dict(sorted(stats.items())))
    write_jsonl(out, rows)
    return out


# --------------------------------------------------------------------------------------------------
# Stage 3: select (global balancing over every shard's candidates; cheap, metadata only)


def _rows(files: list[Path]) -> Iterator[dict[str, Any]]:
    for f in files:
        yield from read_jsonl(f)


def _relation_names(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted({t[1] for t in row["tuple"] if t[1] != "has attribute" and not t[1].startswith("same ")}))


def select(run: RunFolder, positive_files: list[Path]) -> Path:
    """Balance all candidates; writes the kept ids and each dropped id's reason."""
    cfg = run.config()
    fp = _hash("select@v1", run.fingerprint_of("paths"), cfg.fingerprint("balance", "seed"))
    d = run.stage("select", fp)
    out = d / "selection.json"
    if out.exists():
        return out
    items = [
        BalanceItem(r["id"], r["tuple_type"], r["level"], r["path"]["name"], _relation_names(r))
        for r in _rows(positive_files)
    ]
    if len({i.id for i in items}) != len(items):
        raise AssertionError("two positives share an id: content ids collided or a shard was read twice")
    kept, dropped = balance(items, cfg.balance, cfg.seed)
    write_json(out, {"kept": sorted(kept), "dropped": {str(k): v for k, v in sorted(dropped.items())}}, indent=False)
    return out


def _selection(run: RunFolder) -> tuple[set[int], dict[int, str]]:
    data = orjson.loads((run.work / "select" / "selection.json").read_bytes())
    return set(data["kept"]), {int(k): v for k, v in data["dropped"].items()}


# --------------------------------------------------------------------------------------------------
# Stage 4: language (rewrites and text negatives), one shard at a time


def language_fingerprint(run: RunFolder, cfg: RunConfig) -> str:
    lang = cfg.language
    files = [lang.lexicon, lang.name_categories]
    if lang.backend == "openai":
        files += [Path("prompts") / lang.openai.rewrite_prompt, Path("prompts") / lang.openai.replace_prompt]
    return _hash(
        "language@v1",
        run.fingerprint_of("select"),
        cfg.fingerprint("language", "seed"),
        [_content_hash(cfg.resolve(p)) for p in files],
    )


def open_language_stage(run: RunFolder) -> Path:
    return run.stage("language", language_fingerprint(run, run.config()))


def corpus_vocab(run: RunFolder) -> dict[str, Counter]:
    info = orjson.loads((run.work / "ingest" / "_done.json").read_bytes())
    return {k: Counter(v) for k, v in info["vocab"].items()}


def language_shard(run: RunFolder, positive_file: Path) -> Path:
    """Rewrite the shard's selected positives and make their text negatives; skipped when done."""
    from backends.registry import make_language_backend
    from core.vocab import Lexicon, NameCategories
    from generators.negatives import NegativeContext, make_text_negatives
    from generators.paths import PathResources
    from generators.rewrite import RewriteValidator, rewrite_records

    cfg = run.config()
    d = run.opened("language", language_fingerprint(run, cfg))
    out = d / positive_file.name
    if out.exists():
        return out
    kept, _ = _selection(run)
    positives = [r for r in read_jsonl(positive_file) if r["id"] in kept]
    shard = _shard_path(run.work / "ingest", "graphs", positive_file)
    graphs = {g.image_id: g for g in map(row_to_graph, read_jsonl(shard))}
    res = PathResources.load(cfg)
    lang = cfg.language
    lexicon = Lexicon.load(cfg.resolve(lang.lexicon))
    vocab = corpus_vocab(run)
    backend = make_language_backend(cfg, run.work, lexicon)
    validator = RewriteValidator(res.table, lexicon, frozenset(vocab["names"]))
    rejects: list[Reject] = []
    stats: Counter = Counter()
    if lang.rewrite_positives and positives:
        rej, st = rewrite_records(positives, backend, validator, cfg.seed, stage="rewrite")
        rejects += rej
        stats.update({f"rewrite_positives:{k}": v for k, v in st.items()})
    ctx = NegativeContext(
        table=res.table,
        names=NameCategories.load(cfg.resolve(lang.name_categories)),
        lexicon=lexicon,
        renderer=res.renderer,
        vocab=vocab,
        seed=cfg.seed,
        per_positive=lang.negatives_per_positive,
        max_rounds=lang.max_rounds,
        n_replacements=lang.n_replacements,
        types=tuple(lang.negative_types),
    )
    negatives, rej, st = (
        make_text_negatives(positives, graphs, ctx, backend) if lang.negatives_per_positive else ([], [], Counter())
    )
    rejects += rej
    stats.update(st)
    neg_rows = [n.to_vanilla() for n in negatives]
    if lang.rewrite_negatives and neg_rows:
        rej, st = rewrite_records(neg_rows, backend, validator, cfg.seed, stage="rewrite_negatives")
        rejects += rej
        stats.update({f"rewrite_negatives:{k}": v for k, v in st.items()})
    stats.update({f"backend:{k}": v for k, v in backend.stats().items()})
    write_jsonl(out.with_suffix(".rejects.jsonl"), [r.to_json() for r in rejects])
    write_json(out.with_suffix(".stats.json"), dict(sorted(stats.items())))
    write_jsonl(_negative_file(out), neg_rows)
    write_jsonl(out, positives)  # last: its presence marks the shard done
    return out


def _negative_file(language_file: Path) -> Path:
    return _shard_path(language_file.parent, "negatives", language_file)


# --------------------------------------------------------------------------------------------------
# Stage 4b: negative images, one shard at a time (only the configured splits; needs the source images)


def images_fingerprint(run: RunFolder, cfg: RunConfig) -> str:
    return _hash("images@v1", run.fingerprint_of("language"), cfg.fingerprint("images", "seed"))


def open_images_stage(run: RunFolder) -> Path:
    """Open (or reset) the stage and build the corpus's donor index for copy-paste edits."""
    from core.vocab import NameCategories
    from generators.paths import box_reason

    cfg = run.config()
    d = run.stage("images", images_fingerprint(run, cfg))
    donors_file = d / "donors.json"
    if donors_file.exists():
        return d
    names = NameCategories.load(cfg.resolve(cfg.language.name_categories))
    best: dict[str, list[tuple[int, str, str, list[int]]]] = {}
    for shard in sorted((run.work / "ingest").glob("graphs-*.jsonl")):
        for row in read_jsonl(shard):
            g = row_to_graph(row)
            for o in g.objects.values():
                if names.category(o.name) is None or box_reason(o, g, cfg, as_target=True) is not None:
                    continue
                best.setdefault(o.name, []).append((-o.area, g.image_id, o.id, list(o.box)))
    donors = {
        n: [{"image_id": i, "object_id": oid, "box": box} for _, i, oid, box in sorted(v)[: cfg.images.donors_per_name]]
        for n, v in sorted(best.items())
    }
    write_json(donors_file, donors, indent=False)
    return d


def images_shard(run: RunFolder, language_file: Path) -> Path:
    """Negative images for the shard's positives in the configured splits; skipped when done."""
    from backends.registry import make_inpaint_backend, make_language_backend
    from core.vocab import Lexicon, NameCategories
    from generators.negative_images import Donor, ImageContext, make_image_negatives
    from generators.paths import PathResources, target_reason

    cfg = run.config()
    d = run.opened("images", images_fingerprint(run, cfg))
    out = _shard_path(d, "image-negatives", language_file)
    if out.exists():
        return out
    _, images = resolve_inputs(run, cfg)
    stats: Counter = Counter()
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    positives = [r for r in read_jsonl(language_file) if split_of(r["image_id"], cfg.splits) in cfg.images.splits]
    if images is None or not cfg.images.enabled or cfg.images.per_positive == 0:
        stats["skipped_no_images" if images is None else "skipped_disabled"] += len(positives)
    elif positives:
        shard = _shard_path(run.work / "ingest", "graphs", language_file)
        graphs = {g.image_id: g for g in map(row_to_graph, read_jsonl(shard))}
        res = PathResources.load(cfg)
        lexicon = Lexicon.load(cfg.resolve(cfg.language.lexicon))
        donors = {
            n: [Donor(x["image_id"], x["object_id"], tuple(x["box"])) for x in v]
            for n, v in orjson.loads((d / "donors.json").read_bytes()).items()
        }
        ctx = ImageContext(
            table=res.table,
            names=NameCategories.load(cfg.resolve(cfg.language.name_categories)),
            vocab=corpus_vocab(run),
            donors=donors,
            images_dir=images,
            out_dir=run.root / "images",
            seed=cfg.seed,
            candidates=cfg.images.candidates,
            per_positive=cfg.images.per_positive,
            max_rounds=cfg.images.max_rounds,
            types=tuple(cfg.images.types),
            editable=lambda obj, graph: target_reason(obj, graph, cfg, res) is None,
        )
        rows, rejects, stats = make_image_negatives(
            positives, graphs, ctx, make_language_backend(cfg, run.work, lexicon), make_inpaint_backend(cfg)
        )
    write_jsonl(out.with_suffix(".rejects.jsonl"), [r.to_json() for r in rejects])
    write_json(out.with_suffix(".stats.json"), dict(sorted(stats.items())))
    write_jsonl(out, rows)
    return out


# --------------------------------------------------------------------------------------------------
# Stage 4c: filter scores (CLIP margins, similarity to the source, realism), one shard at a time


FILTER_MODEL_KEYS = ("clip_model", "similarity", "dinov2", "realism", "dire", "batch_size")


def filters_fingerprint(run: RunFolder, cfg: RunConfig) -> str:
    # Thresholds are not part of it: changing them re-decides (`hardneg split`), it never re-scores.
    models = {k: v for k, v in cfg.filters.model_dump(mode="json").items() if k in FILTER_MODEL_KEYS}
    return _hash("filters@v1", run.fingerprint_of("images"), models)


def open_filters_stage(run: RunFolder) -> Path:
    return run.stage("filters", filters_fingerprint(run, run.config()))


def _open_rgb(path: Path) -> Image.Image:
    with Image.open(path) as im:
        return im.convert("RGB")


def filters_shard(run: RunFolder, language_file: Path) -> Path:
    """Score the shard's text and image negatives; decisions happen in `assemble` from these scores."""
    from backends.registry import make_filter_scorers

    cfg = run.config()
    d = run.opened("filters", filters_fingerprint(run, cfg))
    out = _shard_path(d, "scores", language_file)
    if out.exists():
        return out
    _, images = resolve_inputs(run, cfg)
    image_file = _shard_path(run.work / "images", "image-negatives", language_file)
    positives = {r["id"]: r for r in read_jsonl(language_file)}
    text_negs = list(read_jsonl(_negative_file(language_file)))
    image_negs = list(read_jsonl(image_file)) if image_file.exists() else []
    clip, similarity, realism = make_filter_scorers(cfg)
    rows: list[dict[str, Any]] = []
    sources: dict[str, Image.Image] = {}

    def source(image_id: str) -> Image.Image | None:
        if images is None:
            return None
        if image_id not in sources:
            sources[image_id] = _open_rgb(images / f"{image_id}.jpg")
        return sources[image_id]

    if clip is not None and images is not None and text_negs:
        pairs = []
        for n in text_negs:
            img = source(n["image_id"])
            pairs += [(img, positives[n["positive_id"]]["expression"]), (img, n["expression"])]
        sims = clip.similarity(pairs)
        for i, n in enumerate(text_negs):
            rows.append({"id": n["id"], "kind": "text", "clip_margin": sims[2 * i] - sims[2 * i + 1]})
    for n in image_negs:
        src = source(n["source_image_id"])
        cands = [_open_rgb(run.root / f) for f in n["candidates"]]
        sim = similarity.similarity([(src, c) for c in cands])
        if n["edit_boxes"]:
            per_box = [realism.score([(src, c, tuple(b)) for c in cands]) for b in n["edit_boxes"]]
            real = [max(v) for v in zip(*per_box, strict=True)]
        else:
            real = [0.0 for _ in cands]  # a flip moves no pixel within the image: it is a real photograph
        scored = [{"similarity": s, "realism": r} for s, r in zip(sim, real, strict=True)]
        if clip is not None:
            text = positives[n["positive_id"]]["expression"]
            sims = clip.similarity([(src, text)] + [(c, text) for c in cands])
            for c, s in zip(scored, sims[1:], strict=True):
                c["clip_margin"] = sims[0] - s
        rows.append({"id": n["id"], "kind": "image", "candidates": scored})
    write_jsonl(out, rows)
    return out


# --------------------------------------------------------------------------------------------------
# Stage 5: refine scores (global: the n-gram scorer is fit on every positive). Scores only, no decision.


def refine_scores(run: RunFolder, language_files: list[Path]) -> Path:
    """Score every (positive, text negative) pair with the two configured text scorers."""
    from backends.text_scorers import make_scorer

    cfg = run.config()
    fp = _hash("refine@v1", run.fingerprint_of("language"), cfg.fingerprint("refine"))
    d = run.stage("refine", fp)
    out = d / "scores.jsonl"
    if out.exists():
        return out
    positives = {r["id"]: (r["image_id"], r["expression"]) for r in _rows(language_files)}
    negatives = [
        (r["id"], r["positive_id"], r["expression"]) for f in language_files for r in read_jsonl(_negative_file(f))
    ]
    rows = []
    if cfg.refine.enabled and negatives:
        # Cross-fitting: a scorer that is fit (the n-gram LM) is fit on the positives of one half of the
        # images and scores the other half, or it would have memorised every positive it scores and
        # prefer it by construction, leaving no pair a mirror cell.
        fold = {pid: int(image_unit(img) * 2) for pid, (img, _) in positives.items()}
        scorers = []
        for spec in cfg.refine.scorers:
            scorer = make_scorer(spec)
            if hasattr(scorer, "fit"):
                pair = []
                for k in (0, 1):
                    m = make_scorer(spec)
                    m.fit(sorted({t for pid, (_, t) in positives.items() if fold[pid] != k}))
                    pair.append(m)
                scorers.append(pair)
            else:
                scorers.append([scorer, scorer])
        for k in (0, 1):
            mine = [(nid, pid, text) for nid, pid, text in negatives if fold[pid] == k]
            texts = sorted({positives[pid][1] for _, pid, _ in mine} | {t for _, _, t in mine})
            if not texts:
                continue
            s1 = dict(zip(texts, scorers[0][k].score(texts), strict=True))
            s2 = dict(zip(texts, scorers[1][k].score(texts), strict=True))
            for nid, pid, text in mine:
                pos = positives[pid][1]
                rows.append({"id": nid, "s1": [s1[pos], s1[text]], "s2": [s2[pos], s2[text]]})
        rows.sort(key=lambda r: r["id"])
    write_jsonl(out, rows)
    return out


def refine_decision(cfg: RunConfig, scores_file: Path) -> tuple[set[int], dict[int, str], dict[int, dict[str, Any]]]:
    """Pure: (kept negative ids, dropped id -> reason, id -> scores) from stored scores and the config."""
    from filters.refine import RefinePair, refine

    rows = list(read_jsonl(scores_file))
    by_id = {r["id"]: r for r in rows}
    if not cfg.refine.enabled:
        return set(by_id), {}, by_id
    pairs = [RefinePair(str(r["id"]), r["s1"][0] - r["s1"][1], r["s2"][0] - r["s2"][1]) for r in rows]
    result = refine(pairs, seed=cfg.seed, bins_2d=cfg.refine.bins_2d, bins_1d=cfg.refine.bins_1d)
    return {int(k) for k in result.kept}, {int(k): v for k, v in result.dropped.items()}, by_id


# --------------------------------------------------------------------------------------------------
# Stage 6: split and write the run folder


def assemble(
    run: RunFolder, language_files: list[Path], scores_file: Path, image_files: list[Path] | None = None
) -> dict[str, Any]:
    """Apply the refinement decision, assign splits by image, write splits/, rejects.jsonl and manifest.json."""
    from generators.paths import PathResources

    cfg = run.config()
    sg, images = resolve_inputs(run, cfg)
    paths_dir = run.work / "paths"
    positive_files = sorted(p for p in paths_dir.glob("positives-*.jsonl") if ".rejects" not in p.name)
    kept_ids, dropped = _selection(run)
    refine_kept, refine_dropped, scores = refine_decision(cfg, scores_file)
    filter_scores = _filter_scores(run)
    thresholds = Thresholds(cfg.filters.min_clip_margin, cfg.filters.max_realism, cfg.filters.require_clip)
    passes: dict[str, list[int]] = {
        k: [0, 0] for k in ("refine", "filter_text", "filter_image", "filter_image_candidates")
    }

    writers = {s: JsonArrayWriter(run.root / "splits" / s / "positive.json") for s in SPLITS}
    neg_writers = {s: JsonArrayWriter(run.root / "splits" / s / "negative.json") for s in SPLITS}
    cocos = {s: CocoWriter(run.root / "splits" / s / "coco.json") for s in SPLITS}
    table: Counter = Counter()
    neg_table: Counter = Counter()
    # rejects.jsonl is rebuilt every time: the stage files first, then this stage's decisions, streamed
    # (a GQA run drops millions of candidates), so reruns never duplicate a line.
    late_rejects = _RejectSink(run.root / "rejects.jsonl")
    ingest_dir = run.work / "ingest"
    reject_files = [ingest_dir / "rejects.jsonl"]
    reject_files += [f.with_suffix(".rejects.jsonl") for f in positive_files]
    reject_files += [f.with_suffix(".rejects.jsonl") for f in language_files]
    reject_files += [f.with_suffix(".rejects.jsonl") for f in image_files or []]
    late_rejects.copy(reject_files)
    for r in _rows(positive_files):
        if r["id"] not in kept_ids:
            detail = {"tuple_type": r["tuple_type"], "level": r["level"], "expression": r["expression"]}
            late_rejects.append(Reject("balance", dropped[r["id"]], r["image_id"], r["id"], detail=detail).to_json())
    for f in language_files:
        for r in read_jsonl(f):
            split = split_of(r["image_id"], cfg.splits)
            r["split"] = split
            writers[split].write(r)
            cocos[split].add(r)
            table[(split, r["tuple_type"], r["level"])] += 1
        for r in read_jsonl(_negative_file(f)):
            sc = scores.get(r["id"])
            if sc is not None:
                r["scores"] = {"refine_s1": sc["s1"], "refine_s2": sc["s2"]}
            if r["id"] not in refine_kept and cfg.refine.enabled:
                why = refine_dropped.get(r["id"], "refine: not scored")
                detail = {"negative_type": r["negative_type"], "expression": r["expression"], **r.get("scores", {})}
                late_rejects.append(Reject("refine", why, r["image_id"], r["id"], detail=detail).to_json())
                continue
            passes["refine"][0] += 1
            fs = filter_scores.get(r["id"], {})
            if "clip_margin" in fs:
                r.setdefault("scores", {})["clip_margin"] = fs["clip_margin"]
            d = decide_text(fs, thresholds)
            passes["filter_text"][1] += 1
            if not d.keep:
                detail = {"negative_type": r["negative_type"], "expression": r["expression"], **r.get("scores", {})}
                late_rejects.append(Reject("filter", d.reason or "", r["image_id"], r["id"], detail=detail).to_json())
                continue
            passes["filter_text"][0] += 1
            split = split_of(r["image_id"], cfg.splits)  # always its positive's split: same image
            r["split"] = split
            neg_writers[split].write(r)
            cocos[split].add(r)
            neg_table[(split, r["negative_type"], r["negative_level"])] += 1
    passes["refine"][1] = passes["refine"][0] + len(refine_dropped)
    image_table: Counter = Counter()
    for f in image_files or []:
        for r in read_jsonl(f):
            cands = filter_scores.get(r["id"], {}).get("candidates") or [{} for _ in r["candidates"]]
            d = decide_image(cands, thresholds)
            passes["filter_image_candidates"][1] += len(cands)
            passes["filter_image"][1] += 1
            for k, why in d.losers:
                detail = {"negative_type": r["negative_type"], "file_name": r["candidates"][k], **cands[k]}
                late_rejects.append(Reject("filter", why, r["source_image_id"], r["id"], detail=detail).to_json())
            if not d.keep:
                late_rejects.append(Reject("filter", d.reason or "", r["source_image_id"], r["id"],
                                           detail={"negative_type": r["negative_type"]}).to_json())  # fmt: skip
                continue
            passes["filter_image"][0] += 1
            failed = sum(1 for _, why in d.losers if "best of" not in why)  # losers that passed lost only on rank
            passes["filter_image_candidates"][0] += len(cands) - failed
            r["file_name"] = r["candidates"][d.candidate]
            r["scores"] = cands[d.candidate]
            split = split_of(r["source_image_id"], cfg.splits)  # its positive's split
            r["split"] = split
            neg_writers[split].write(r)
            cocos[split].add(r)
            image_table[(split, r["negative_type"], r["negative_level"])] += 1
    for s in SPLITS:
        writers[s].close()
        neg_writers[s].close()
        cocos[s].close({"description": f"hardneg {s} split", "version": HARDNEG_VERSION, "split": s})

    late_rejects.close()

    ingest_info = orjson.loads((ingest_dir / "_done.json").read_bytes())
    path_stats: Counter = Counter()
    for f in positive_files:
        path_stats.update(orjson.loads(f.with_suffix(".stats.json").read_bytes()))
    lang_stats: Counter = Counter()
    for f in language_files:
        lang_stats.update(orjson.loads(f.with_suffix(".stats.json").read_bytes()))
    image_stats: Counter = Counter()
    for f in image_files or []:
        image_stats.update(orjson.loads(f.with_suffix(".stats.json").read_bytes()))
    res = PathResources.load(cfg)
    versions = res.versions() | {
        "language_backend": _backend_version(cfg),
        "negatives": "negatives_text@v1",
        "rewrite": "rewrite@v1",
    }
    if cfg.inputs.scene_graphs is None:
        versions["demo_world"] = DEMO_WORLD_VERSION
    manifest = {
        "hardneg_version": HARDNEG_VERSION,
        "run": run.root.name,
        "seed": cfg.seed,
        "config": cfg.model_dump(mode="json"),
        "config_fingerprint": cfg.fingerprint(),
        "inputs": {"scene_graphs": str(sg), "images": str(images) if images is not None else None},
        "versions": versions,
        "models": _models(cfg),
        "counts": {
            "ingest": ingest_info["counts"],
            "repairs": ingest_info["repairs"],
            "paths": dict(sorted(path_stats.items())),
            "positives_candidates": len(kept_ids) + len(dropped),
            "positives_kept": len(kept_ids),
            "balance_dropped": len(dropped),
            "balance_dropped_by_reason": dict(sorted(Counter(dropped.values()).items())),
            "language": dict(sorted(lang_stats.items())),
            "refine_kept": len(refine_kept) if cfg.refine.enabled else None,
            "refine_dropped": len(refine_dropped),
            "positives": {s: writers[s].count for s in SPLITS},
            "negatives": {s: neg_writers[s].count for s in SPLITS},
            "positives_by_split_type_level": {f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(table.items())},
            "negatives_by_split_type_level": {f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(neg_table.items())},
            "images": dict(sorted(image_stats.items())),
            "image_negatives_by_split_type_level": {
                f"{s}/{t}/L{lv}": n for (s, t, lv), n in sorted(image_table.items())
            },
        },
    }
    filters_seen = {
        "balance": (len(kept_ids), len(kept_ids) + len(dropped)),
        **{k: (p, n) for k, (p, n) in passes.items()},
    }
    stats = build_stats(table, neg_table, image_table, filters_seen)
    write_stats(run.root, stats)
    manifest["counts"]["filters"] = stats["filters"]
    write_json(run.root / "manifest.json", manifest)
    return manifest


class _RejectSink:
    """rejects.jsonl written as it goes (stage files copied, decisions appended), renamed into place."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp")
        self._f = self._tmp.open("wb")

    def copy(self, files: list[Path]) -> None:
        for f in files:
            if f.exists():
                with f.open("rb") as src:
                    shutil.copyfileobj(src, self._f, 1 << 20)

    def append(self, row: dict[str, Any]) -> None:
        self._f.write(orjson.dumps(row) + b"\n")

    def close(self) -> None:
        self._f.close()
        os.replace(self._tmp, self.path)


def _filter_scores(run: RunFolder) -> dict[int, dict[str, Any]]:
    """Stored filter scores by negative id (empty when the filters stage has not run)."""
    out: dict[int, dict[str, Any]] = {}
    for f in sorted((run.work / "filters").glob("scores-*.jsonl")) if (run.work / "filters").exists() else []:
        for r in read_jsonl(f):
            out[r["id"]] = r
    return out


def _backend_version(cfg: RunConfig) -> str:
    lang = cfg.language
    if lang.backend == "openai":
        return f"openai:{lang.openai.model}+{lang.openai.rewrite_prompt}+{lang.openai.replace_prompt}"
    return "lexicon@v1"


def _models(cfg: RunConfig) -> dict[str, Any]:
    from generators.rewrite import SPACY_MODEL

    out: dict[str, Any] = {"spacy": SPACY_MODEL, "refine_scorers": cfg.refine.scorers if cfg.refine.enabled else None}
    if cfg.language.backend == "openai":
        out["llm"] = {"model": cfg.language.openai.model, "base_url": cfg.language.openai.base_url}
    return out


# --------------------------------------------------------------------------------------------------
# Re-splitting from stored scores (`hardneg split`): no model is loaded


RESPLIT_KEYS = {
    "splits": None,  # every key
    "filters": {"min_clip_margin", "max_realism", "require_clip"},
    "refine": {"enabled", "bins_2d", "bins_1d"},
}


def resplit(root: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    """Re-apply thresholds and split proportions to a finished run's stored scores; rewrites splits/,
    rejects.jsonl, stats and the manifest. Only the keys in RESPLIT_KEYS may change: anything else needs
    new scores or new samples, i.e. `hardneg run`."""
    run = RunFolder(root)
    if not run.config_file.exists():
        raise ValueError(f"{root} is not a hardneg run folder (no work/config.json)")
    for section, value in overrides.items():
        allowed = RESPLIT_KEYS.get(section, set())
        if section not in RESPLIT_KEYS or not isinstance(value, dict):
            raise ValueError(
                f"split cannot change {section!r}: only {sorted(RESPLIT_KEYS)}; rerun `hardneg run` for that"
            )
        bad = sorted(set(value) - allowed) if allowed is not None else []
        if bad:
            raise ValueError(f"split cannot change {section}.{bad[0]}: it needs new scores; rerun `hardneg run`")
    base = run.config().model_dump(mode="json")
    for section, value in overrides.items():
        base[section] = {**base[section], **value}
    cfg = RunConfig.model_validate(base)
    language_files = sorted(p for p in (run.work / "language").glob("positives-*.jsonl") if ".rejects" not in p.name)
    image_dir = run.work / "images"
    image_files = sorted(p for p in image_dir.glob("image-negatives-*.jsonl") if ".rejects" not in p.name)
    scores = run.work / "refine" / "scores.jsonl"
    if not language_files or not scores.exists():
        raise ValueError(f"{root} has no finished language and refine stages to re-split; run `hardneg run` first")
    atomic_write_bytes(run.config_file, cfg.model_dump_json(indent=2).encode())
    return assemble(run, language_files, scores, image_files)


# --------------------------------------------------------------------------------------------------
# Without Prefect (tests, debugging): the same stages in one process


def run_local(cfg: RunConfig, root: Path) -> dict[str, Any]:
    run = prepare_run(cfg, root)
    shards = ingest(run)
    open_paths_stage(run)
    positive_files = [paths_shard(run, s) for s in shards]
    select(run, positive_files)
    open_language_stage(run)
    language_files = [language_shard(run, f) for f in positive_files]
    open_images_stage(run)
    image_files = [images_shard(run, f) for f in language_files]
    open_filters_stage(run)
    for f in language_files:
        filters_shard(run, f)
    scores = refine_scores(run, language_files)
    return assemble(run, language_files, scores, image_files)
