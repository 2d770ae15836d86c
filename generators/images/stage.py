"""Negative images: flip, replace object / attribute, swap object / attribute, remove object.

Each negative keeps its positive's expression and path and records the `edit` it applied as a change to
the scene graph (`core.edits`), one that describes what the pixels show. Sites come from the same
algorithm as text negatives (`generators/text/sites.py`), restricted to objects that may be edited; an edit is
kept only when the original path is certified false on the edited graph (`image_edits.falsified`: the
executor matches nothing and nothing the graph leaves open could still carry it). Then the inpainting
backend makes N candidate images, all kept for the filters (which verify the edit in the pixels and pick
one). Replacement words come from the language backend, restricted to words the image backend can render
(a colour it can paint, an object name with a donor crop in the corpus that fits the box).

Which kinds a run makes is `images.types`, or the backend's defaults (`types.default_types`): the paper's
five with diffusers; offline, only the kinds whose edits are verified in the pixels (the others are
counted as `off:<kind>` in the stage's stats, and stats.md says why).

Flips are refused where the picture holds print (a name that carries it, or lines of letters in the
pixels: `flip.py`), and at most `images.max_flips_per_image` positives of one photo get a flip, so one
mirrored photo is not most of a benchmark.
"""

from __future__ import annotations

import heapq
import shutil
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
from PIL import Image, JpegImagePlugin

from hardneg.backends.inpaint import InpaintBackend, InpaintJob
from hardneg.backends.language import LanguageBackend, ReplaceRequest
from hardneg.backends.registry import make_inpaint_backend, make_language_backend
from hardneg.core.config import RunConfig
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.ingest import corpus_vocab
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import safe_name
from hardneg.core.io import write_json
from hardneg.core.plugins import TEXT_NEGATIVES
from hardneg.core.records import Reject, SceneGraph
from hardneg.core.rows import HYGIENE_GRAPHS, IMAGE_NEGATIVES, LANGUAGE_POSITIVES, ImageNegativeRow, PositiveRow
from hardneg.core.runner.stage import Run, Stage, Unit
from hardneg.core.schema import outputs
from hardneg.core.splits import split_of
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.images.edits import (
    Donor,
    DonorUnreadable,
    ImageContext,
    ImageEdit,
    PasteRefused,
    backend_refusal,
    carried_by,
    falsified,
    save_like_source,
)
from hardneg.generators.images.types import ImageSearchState, ImageType, image_type, image_types, off_by_default
from hardneg.generators.paths.stage import PathResources, box_reason, target_reason
from hardneg.generators.paths.targets import RENDERER_CONFIG, RENDERER_DATA
from hardneg.generators.text.sites import Site, SiteSearch, SiteVocab, enumerate_sites, site_order
from hardneg.generators.text.types import text_type

GENERATOR = "negatives_image@v5"  # v4: objects on it left out, outline judged by edges; v5: its soft rim recoloured too


class ImageSearch(SiteSearch[ImageSearchState]):
    """Image negatives: a site becomes an `ImageEdit` whose graph change makes the path match nothing."""

    stage = "image_negatives"

    def __init__(self, ctx: ImageContext, language: LanguageBackend, inpaint: InpaintBackend) -> None:
        super().__init__(language, ctx.per_positive, ctx.max_rounds)
        self.ctx = ctx
        self.inpaint = inpaint
        self.vocab = SiteVocab(ctx.table, ctx.words)
        self.kinds: dict[str, ImageType] = {n: image_type(n) for n in ctx.types}
        self.rarity = {n: k.rarity for n, k in self.kinds.items()}
        self._done: dict[tuple[int, Site, str], ImageEdit | None] = {}

    def state(self, positive: PositiveRow, graph: SceneGraph) -> ImageSearchState | None:
        src = image_file(self.ctx.images_dir, positive.image_id)
        try:
            with Image.open(src) as im:
                im.load()
                image = im.convert("RGB")
                quant = (
                    getattr(im, "quantization", None),
                    JpegImagePlugin.get_sampling(im) if im.format == "JPEG" else -1,
                )
        except (OSError, SyntaxError, ValueError) as e:
            self.stats["source_unreadable"] += 1
            self.rejects.append(
                Reject(self.stage, f"source image unreadable: {src.name}: {e}", positive.image_id, positive.id)
            )
            return None
        path = positive.node()
        objects = [graph.objects.get(n.id or "") for n in path.nodes()]
        objects = [o if o is not None and self.ctx.editable(o, graph) else None for o in objects]
        shared = enumerate_sites(path, self.vocab, objects)
        sites = [s for kind in self.kinds.values() for s in kind.sites(shared, path, objects)]
        todo = site_order(positive.id, self.ctx.seed, "image-negatives", sites, self.ctx.types, self.rarity)
        return ImageSearchState(positive, path, iter(todo), graph=graph, image=image, quant=quant, objects=objects)

    def _choose(self, st: ImageSearchState, edit: ImageEdit) -> None:
        st.chosen.append(edit)
        st.made += 1
        self.kinds[edit.site.negative_type].chosen(st, edit)

    def _refuse(self, st: ImageSearchState, site: Site, why: str, **detail: Any) -> bool:
        self.stats[f"refused:{site.negative_type}"] += 1
        where = {**site.where(), **detail}
        self.rejects.append(Reject(self.stage, why, st.positive.image_id, st.positive.id, detail=where))
        return False

    def certified(self, st: ImageSearchState, edit: ImageEdit | None) -> bool:
        """Whether the edited picture certainly makes the positive's path false (a refusal is logged)."""
        if edit is None:
            return False
        why = falsified(st.path, st.graph, edit.edit, self.ctx.certifier)
        if why is None:
            return True
        self.stats[f"uncertified:{edit.site.negative_type}"] += 1
        detail = {**edit.site.where(), "edit": edit.edit}
        self.rejects.append(
            Reject(self.stage, f"the edit may leave the expression true: {why}", st.positive.image_id,
                   st.positive.id, detail=detail)
        )  # fmt: skip
        return False

    def needs_word(self, site: Site) -> bool:
        return self.kinds[site.negative_type].needs_word

    def direct(self, st: ImageSearchState, site: Site) -> bool:
        objects = st.objects
        text_kind = text_type(site.negative_type) if site.negative_type in TEXT_NEGATIVES else None
        if text_kind and (why := text_kind.refusal(site, st.path, self.vocab, objects)):  # the word tables' rules
            return self._refuse(st, site, why)
        kind = self.kinds[site.negative_type]
        if why := kind.refusal(site, objects, st, self.ctx):
            return self._refuse(st, site, why)
        edit = kind.edit(site, objects, st.image, self.ctx, st.graph, self.inpaint)
        if edit is None or not all(self.inpaint.supports(r) for r in edit.regions):
            return False
        for r in edit.regions:
            if why := backend_refusal(self.inpaint, st.image, r):
                return self._refuse(st, site, f"{r.op} of {r.box}: {why}")
        if self.certified(st, edit):
            self._choose(st, edit)
            return True
        return False

    def request(self, st: ImageSearchState, site: Site) -> ReplaceRequest | None:
        if (why := self.vocab.crowd_refusal(site, st.path)) is not None:
            self._refuse(st, site, why)
            return None
        obj = st.objects[site.nodes[0]]
        graph = st.graph
        kind = self.kinds[site.negative_type]
        options = tuple(
            w for w in kind.options(site, obj, self.ctx) if kind.renderable(site, obj, graph, self.ctx, self.inpaint, w)
        )[: self.ctx.max_options]
        if not options:
            return None
        return ReplaceRequest(
            f"img:{st.positive.id}:{site.negative_type}:{site.nodes}:{site.word}",
            st.positive.expression,
            site.part,  # type: ignore[arg-type]
            site.word or "",
            site.request_category,
            options,
            5,
        )

    def finished(self, st: ImageSearchState, site: Site, word: str) -> ImageEdit | None:
        """The edit for `word` when it is renderable and makes the path match nothing; each (site, word)
        is built once, since validation and the answer loop ask about the same words."""
        key = (st.positive.id, site, word)
        if key not in self._done:
            obj = st.objects[site.nodes[0]]
            kind = self.kinds[site.negative_type]
            done = None
            if word in kind.options(site, obj, self.ctx):
                try:
                    done = kind.edit_with(site, obj, st.graph, self.ctx, self.inpaint, word, st.image)
                except (DonorUnreadable, PasteRefused) as e:
                    self.stats["donor_unreadable" if isinstance(e, DonorUnreadable) else "paste_refused"] += 1
                    detail = {**site.where(), "word": word}
                    self.rejects.append(Reject(self.stage, str(e), st.positive.image_id, st.positive.id, detail=detail))
            self._done[key] = done if self.certified(st, done) else None
        return self._done[key]

    def check(self, st: ImageSearchState, site: Site, values: tuple[str, ...]) -> str | None:
        if any(self.finished(st, site, v) for v in values):
            return None
        return f"no renderable replacement that makes the path match nothing ({', '.join(values)})"

    def accept(self, st: ImageSearchState, site: Site, values: tuple[str, ...]) -> bool:
        done = next((d for v in values if (d := self.finished(st, site, v))), None)
        if done is None:
            return False
        self._choose(st, done)
        return True


def make_image_negatives(
    positives: list[PositiveRow],
    graphs: dict[str, SceneGraph],
    ctx: ImageContext,
    language: LanguageBackend,
    inpaint: InpaintBackend,
) -> tuple[list[ImageNegativeRow], list[Reject], Counter]:
    """Choose edits, inpaint N candidates each and write them; returns their records."""
    search = ImageSearch(ctx, language, inpaint)
    states = [st for p in positives if (st := search.state(p, graphs[p.image_id])) is not None]
    search.run(states)
    stats = search.stats
    jobs: list[tuple[ImageSearchState, ImageEdit, InpaintJob | None, int]] = []
    for st in states:
        for edit in st.chosen:
            nid = ImageNegativeRow.make_id(st.positive.id, edit.site.negative_type, edit.edit)
            job = None
            if search.kinds[edit.site.negative_type].painted:
                job = InpaintJob(str(nid), st.image, edit.regions, ctx.candidates, ctx.seed)
            jobs.append((st, edit, job, nid))
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    records: list[ImageNegativeRow] = []
    # Inpaint in chunks so only a few jobs' candidates are in memory at once (10 full images per job).
    outputs: dict[int, list[Image.Image]] = {}
    pending_jobs = [(nid, j) for _, _, j, nid in jobs if j is not None]
    for i in range(0, len(pending_jobs), ctx.chunk_jobs):
        chunk = pending_jobs[i : i + ctx.chunk_jobs]
        for (nid, _), cands in zip(chunk, inpaint.run([j for _, j in chunk]), strict=True):
            outputs[nid] = list(cands)
        for st, edit, _job, nid in [x for x in jobs if x[3] in outputs]:
            kind = search.kinds[edit.site.negative_type]
            records.append(_write(st, edit, kind, nid, outputs.pop(nid), ctx, inpaint.version, stats))
    for st, edit, job, nid in jobs:
        if job is None:  # a kind that makes its own picture (a flip: the mirrored source) has it as the one candidate
            kind = search.kinds[edit.site.negative_type]
            records.append(_write(st, edit, kind, nid, [kind.picture(st.image)], ctx, kind.name, stats))
    records.sort(key=lambda r: (r.source_image_id, r.id))
    return records, search.rejects, stats


def _write(
    st: ImageSearchState,
    edit: ImageEdit,
    kind: ImageType,
    nid: int,
    cands: list[Image.Image],
    ctx: ImageContext,
    backend: str,
    stats: Counter,
) -> ImageNegativeRow:
    """Save the candidates like their source and make the record."""
    p = st.positive
    files = []
    for k, im in enumerate(cands):
        name = f"{safe_name(p.image_id)}_{nid:x}_{k}.jpg"  # any id, a plain bounded name inside images/
        save_like_source(im, ctx.out_dir / name, st.quant)
        files.append(f"images/{name}")
    box = list(st.graph.objects[st.path.id].box)
    site = edit.site
    stats[f"made:{site.negative_type}:L{site.level}"] += 1
    stats["candidates_written"] += len(files)
    return ImageNegativeRow.made(
        id=nid,
        source_image_id=p.image_id,
        positive_id=p.id,
        negative_level=site.level,
        negative_type=site.negative_type,
        shuffle_index=list(site.nodes),
        ori_type=p.tuple_type,
        level=p.level,
        expression=p.expression,
        path=p.path,
        edit=edit.edit,
        edit_boxes=[list(r.box) for r in edit.regions],
        candidates=files,
        bbox=kind.target_box(box, p.width),
        width=p.width,
        height=p.height,
        generator=GENERATOR,
        backend=backend,
    )


class ImagesStage(Stage):
    """Negative images for the positives of the configured splits (the paper: test only)."""

    name = "images"
    version = GENERATOR
    reads = ("ingest", "hygiene", "language")
    writes = outputs(IMAGE_NEGATIVES)
    config = ("seed", "images", "splits", "language", "targets", *RENDERER_CONFIG)  # words and picks edits as paths do
    data = ("language.lexicon", *RENDERER_DATA)
    gpu = True

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def validate(self, cfg: RunConfig) -> None:
        for name in image_types(cfg):
            image_type(name)

    def prepare(self, run: Run, folder: Path) -> None:
        """The corpus's copy-paste donors: per object name, the largest boxes that could be targets; and, when
        no unit is done yet, no candidate image of an earlier attempt left (a photo edited since may now give
        no negative, and its old candidates must not stay behind)."""
        if not any((folder / "_done").glob("*.json")):
            shutil.rmtree(run.root / "images", ignore_errors=True)
        donors_file = folder / "donors.json"
        if donors_file.exists():
            return
        cfg = run.cfg
        words = Words.load()
        n = cfg.images.donors_per_name
        best: dict[str, list[_Kept]] = {}  # per name, the n first by (larger box, image id, object id): a heap
        for row in run.records_all(HYGIENE_GRAPHS):
            g = row.scene_graph()
            for o in g.objects.values():
                if words.name_category(o.name) is None or box_reason(o, g, cfg, as_target=True) is not None:
                    continue
                key, kept = (-o.area, g.image_id, o.id), best.setdefault(o.name, [])
                if len(kept) == n and not key < kept[0].key:  # no better than the last of the n: never built
                    continue
                held = tuple(replace(c, rel=tuple(round(v, 4) for v in c.rel)) for c in carried_by(g, o.box, o.id))
                entry = Donor(g.image_id, o.id, o.box, o.attributes, held).to_json()  # type: ignore[arg-type]
                (heapq.heappush if len(kept) < n else heapq.heapreplace)(kept, _Kept(key, entry))
        donors = {name: [k.entry for k in sorted(v, key=lambda k: k.key)] for name, v in sorted(best.items())}
        write_json(donors_file, donors, indent=False)

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        images = unit.images
        positives = [
            p for p in unit.records(LANGUAGE_POSITIVES) if split_of(p.image_id, cfg.splits) in cfg.images.splits
        ]
        unit.items_in = len(positives)
        rows: list[ImageNegativeRow] = []
        if images is None or not cfg.images.enabled or cfg.images.per_positive == 0:
            unit.stats["skipped_no_images" if images is None else "skipped_disabled"] += len(positives)
        elif positives:
            graphs = {r.image_id: r.scene_graph() for r in unit.records(HYGIENE_GRAPHS)}
            res = PathResources.load(cfg)
            lexicon = Lexicon.load(cfg.resolve(cfg.language.lexicon))
            donors = {
                n: [Donor.from_json(x) for x in v]
                for n, v in orjson.loads((unit.dir / "donors.json").read_bytes()).items()
            }
            ctx = ImageContext(
                table=res.table,
                words=res.words,
                vocab=corpus_vocab(unit.upstream("ingest")),
                donors=donors,
                images_dir=images,
                out_dir=unit.root / "images",
                seed=cfg.seed,
                candidates=cfg.images.candidates,
                per_positive=cfg.images.per_positive,
                max_rounds=cfg.images.max_rounds,
                types=image_types(cfg),
                editable=lambda obj, graph: target_reason(obj, graph, cfg, res) is None,
                max_flips_per_image=cfg.images.max_flips_per_image,
            )
            rows, rejects, stats = make_image_negatives(
                positives, graphs, ctx, make_language_backend(cfg, unit.run.work, lexicon), make_inpaint_backend(cfg)
            )
            unit.rejects.extend(rejects)
            unit.stats.update(stats)
        off = off_by_default(cfg.images.backend)
        if cfg.images.types is None:  # the paper's kinds this backend leaves out by default: stats.md says why
            unit.stats.update({f"off:{name}": 1 for name in off})
        else:  # asked for by name, though this backend's edits of that kind were never verified
            unit.stats.update({f"unverified:{name}": 1 for name in cfg.images.types if name in off})
        unit.write("image-negatives", rows)


@dataclass(slots=True, eq=False)
class _Kept:
    """A donor kept in its name's heap, the last of the kept on top (a heap's first is its least)."""

    key: tuple[float, str, str]
    entry: dict[str, Any]

    def __lt__(self, other: _Kept) -> bool:
        return self.key > other.key
