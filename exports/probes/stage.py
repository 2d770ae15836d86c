"""The probes export: Probe-R, Probe-C and Probe-B in `RUN/probes/` (the probing paper).

Each probe is written twice: in the paper's own layout, which its evaluation scripts read unchanged
(`exports/probes/official.py`: `probe_r/<split>/data/...`, `probe_c/<split>/*.json`,
`probe_b/<split>/context/...` and their image folders), and as our comparison tables:
- `probes/probe_r/<split>.json`: one record per comparison, `{"id", "kind", "image", "correct",
  "swapped", ...}`: a model scores (image, correct) and (image, swapped) and the pair goes to
  `evaluation.probes.probe_accuracy` as `{"id", "kind", "score_correct", "score_swapped"}`;
- `probes/probe_c/<split>.json`: one record per 2 x 2 group, `{"id", "kind", "images": [x1, x2],
  "prompts": [p1, p2], ...}`, prompt i true of image i and false of the other: `evaluation.probes.
  group_scores` takes `scores[i][j]` = f(prompt i, image j);
- `probes/probe_b/<split>.json`: the Probe-B stage's groups (`exports/probes/background.py`): per variant
  image, the target's prompt against each absent name's (`probe_accuracy`, kind `probe_b/<variant>`).
Every record keeps its certificate (the paths that must match, or certainly match nothing, in which
image), and its `split` is its first image's (`core/splits.py`). Source images are linked under
`probes/images/`. Probe-R and Probe-C come from the decided positives (`exports/probes/relation_composition.py`);
this is a decision stage: `hardneg split` reruns it, while the Probe-B images it publishes stay as made.
It searches a batch of shards a unit (`exports.probes.batch_images`), on every worker; `finish` writes the
folder from the units' rows (`first_by_id`), the files one search over every positive would write.
"""

from __future__ import annotations

import functools
import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import Field

from hardneg.core.certify import VERSION as CERTIFIER
from hardneg.core.certify import Certifier
from hardneg.core.config import SplitName
from hardneg.core.config_exports import ExportOptions
from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.gqa.run_inputs import image_file
from hardneg.core.ids import safe_name
from hardneg.core.io import file_digest, write_json
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import PathNode, Reject
from hardneg.core.rows import PLAUSIBILITY_COUNTS
from hardneg.core.runner.stage import ALL, Run, Unit
from hardneg.core.schema import outputs, to_record
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.exports.base import ExportStage
from hardneg.exports.common import SPLITS, ExportFolder, KeptPositive, kept_positives
from hardneg.exports.corpus import Corpus, GraphChecks, certifier, corpus, shards_per_unit
from hardneg.exports.probes.official import (
    C_FILES,
    R_FILE,
    ClassLabels,
    class_list,
    coco_file,
    probe_b_tree,
    probe_c_record,
    probe_r_records,
)
from hardneg.exports.probes.relation_composition import ProbeSearch
from hardneg.exports.rows import PROBE_B_GROUPS, PROBE_C, PROBE_R, PROBE_R_SETS, ProbeCRow, ProbeRRow, ProbeRSetRow

# v2: the paper's own layout beside our tables; implausible predicates first; swapped-subject images;
# attribute swaps beyond antonyms, categories balanced. v3: Probe-R's swaps by the paper's rules (never seen
# in the triple, the subject absent from the anchor), its image sets without the anchor's other objects first;
# Probe-B's co-occurrence split, every filler's folders written. v4: certified with the corpus's notes
VERSION = f"probes@v4+{CERTIFIER}"
FOLDER = "probes"
TABLES = ("probe_r", "probe_c", "probe_b")


Facts = tuple[list[tuple[str, str, str, str, str]], list[tuple[str, str, str]]]


def probe_facts(path: PathNode) -> Facts:
    """A positive path's grounded relation triples (subject id, s, r, o, object id) and attributes
    (object id, name, attribute)."""
    triples, attrs = [], []
    for n in path.nodes():
        for a in n.attributes:
            attrs.append((n.id or "", n.name, a))
        for e in n.relations:
            triples.append((n.id or "", n.name, e.name, e.object.name, e.object.id or ""))
    return triples, attrs


@dataclass(slots=True)
class Shared:
    """What the three probes read: the word tables, the certifier, the corpus counts and index, and what the
    searches work out from those alone (`ProbeSearch`'s memo): one per worker, for all the shards it runs."""

    words: Words
    table: AttributeTable
    cert: Certifier
    counts: Counts
    memo: dict[str, Any]
    _index: Callable[[], Corpus]  # built when first read (`index`): the finish of a run without photos reads none

    @property
    def index(self) -> Corpus:
        return self._index()

    @classmethod
    def load(cls, unit: Unit) -> Shared:
        words, table, cert = certifier(unit)

        def build() -> Shared:
            counts = Counts.from_rows(unit.read_all(PLAUSIBILITY_COUNTS))
            return cls(words, table, cert, counts, {}, functools.cache(lambda: corpus(unit)))

        table_digest = file_digest(unit.cfg.resolve(unit.cfg.attribute_table))
        return unit.shared("plausibility", f"probes:{unit.cfg.splits.model_dump_json()}:{table_digest}", build)


class ProbesExport(ExportOptions):
    """Probe-R and Probe-C (the probing paper), from the decided positives."""

    enabled: bool = True
    # evaluation benchmarks (the probing paper has no train split): probes of these splits' positives
    splits: list[SplitName] = Field(default_factory=lambda: ["val", "test"])
    # Probe-R subject-only and swapped-subject images per triple (the paper: 10; its script averages
    # exactly 10, so its layout repeats a smaller set in turn); 0 leaves both sets, and the paper's file, out
    subject_only_images: int = Field(10, ge=0, le=10)
    candidates: int = Field(10, ge=1)  # corpus images certified per search (second image; image sets: 10 x theirs)
    max_category_share: float = Field(0.4, gt=0.0, le=1.0)  # Probe-C composition: no attribute category above it
    class_min_count: int = Field(5, ge=1)  # Probe-B's class list: corpus names seen at least this often
    batch_images: int = Field(12_500, ge=1)  # images of positives searched together (`shards_per_unit`)


@EXPORTS.add("probes", order=40)
class ProbesStage(ExportStage):
    """Probe-R and Probe-C from the decided positives; publishes Probe-B's groups beside them; writes all
    three in the paper's layout too."""

    version = VERSION
    Options = ProbesExport
    title = "Probes (Probe-R, Probe-C, Probe-B)"
    about = (
        "Probe-R: a relation prompt against the most implausible predicate never seen with the pair that the "
        "image refutes, or a subject never seen in the triple and absent from the image, with ten subject-only "
        "and ten swapped-subject images; Probe-C: 2 images x 2 prompts with "
        "the attribute swapped for its antonym or another of its category, or the object swapped; Probe-B: "
        "the background replaced by a filler, keeping every object (BMR) or the target (BR), scored over a "
        "class list of the corpus's names, and the target alone for the co-occurrence split; in the paper's own "
        "layout and as `evaluation.probes` tables"
    )
    reads = ("hygiene", "plausibility", "language", "decide", "probe_b")
    writes = outputs(PROBE_R, PROBE_C, PROBE_R_SETS)
    # a unit covers shards of the corpus; the certifier reads what a small thing is; Probe-B's official tree
    # is written here, in its settings
    config = ("seed", "splits", "exports.probes", "exports.probe_b", "shard_size", "language.small_unannotated")
    data = ("attribute_table",)
    decision = True
    publishes = (FOLDER,)

    def extra_fingerprint(self, run: Run) -> Any:
        return words_digest()

    def shards_per_unit(self, run: Run) -> int:
        return shards_per_unit(run.cfg, run.cfg.exports.probes.batch_images)

    def run(self, unit: Unit) -> None:
        """The Probe-R and Probe-C rows of the unit's positives (a batch of shards), one per id, by id; Probe-R's
        whole sets."""
        if not unit.cfg.exports.probes.enabled:
            return
        shared = Shared.load(unit)
        kept = kept_positives(unit, unit.cfg.exports.probes.splits)
        positives = sorted(((p, probe_facts(p.node())) for p in kept), key=lambda pf: pf[0].id)
        unit.items_in = len(positives)
        found, missed, sets = self._search(unit.cfg, shared, positives)
        for kind, n in missed.items():
            unit.stats[f"not_certified:{kind}"] += n
            unit.reject(Reject("probes", f"{kind}: no swap or image certified for {n} probes"))
        out: dict[str, dict[int, ProbeRRow | ProbeCRow]] = {"probe_r": {}, "probe_c": {}}
        for r in found:  # one record per id (its kind, images and prompts): two cups on one table ask one thing
            out["probe_r" if isinstance(r, ProbeRRow) else "probe_c"].setdefault(r.id, r)
        for name, rows in out.items():
            unit.write(name, (rows[i] for i in sorted(rows)))
        unit.write("sets", sets)

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Every unit's rows in the run's folder: one per id (the first positive's, as in one search over all),
        Probe-C's categories balanced, the images placed; the paper's layout; Probe-B's groups beside them."""
        opts = run.cfg.exports.probes
        folder = ExportFolder(run.root, FOLDER)
        folder.reset(*TABLES, "images")  # not `generated/`: Probe-B's images, which its stage publishes here
        groups = list(run.records_all(PROBE_B_GROUPS))
        tables: dict[str, list[Any]] = {"probe_r": [], "probe_c": []}
        official: dict[str, Any] = {}
        if opts.enabled:
            tables.update(self._tables(run, folder, Words.load(), official))
        tables["probe_b"] = groups
        counts: dict[str, dict[str, int]] = {}
        hard = hardness(tables)
        for name in list(tables):  # each table freed once written
            rows = tables.pop(name)
            parts: dict[str, list[Any]] = {s: [] for s in SPLITS}
            for r in rows:
                parts.setdefault(r.split, []).append(r)
            if name != "probe_b":  # Probe-R and Probe-C: the splits they are made for
                parts = {s: part for s, part in parts.items() if s in opts.splits or part}
            folder.write_tables(parts, f"{name}/")
            c = Counter((r.kind if name != "probe_b" else "probe_b/groups", r.split) for r in rows)
            for kind in sorted({k for k, _ in c}):
                counts[kind] = {s: c.get((kind, s), 0) for s in SPLITS}
        b = run.cfg.exports.probe_b
        if b.enabled and b.splits:  # the corpus's counts and index: here only for Probe-B's class list and scene names
            shared = Shared.load(Unit(run, self, ALL))  # read as the stage's units read them
            classes = class_list(shared.counts, shared.words, shared.cert, opts.class_min_count)
            labels = ClassLabels(classes, shared.words, shared.cert)

            def names_of(image_id: str) -> frozenset[str]:  # the first group's call builds the corpus index
                info = shared.index.images.get(image_id)
                return info.names if info is not None else frozenset()

            official["probe_b"] = probe_b_tree(
                folder, run.root, groups, labels, shared.words, names_of, sorted(b.splits), b.fillers, b.min_object_area
            )
            official["probe_b_classes"] = len(classes)
        summary = {"shape": "probes", "version": VERSION, "enabled": opts.enabled, "counts": counts,
                   "official": official, "hardness": hard,
                   "notes": official_notes(official, b.splits, opts.splits if opts.enabled else SPLITS)}  # fmt: skip
        folder.write_summary(summary)
        return {"meta": {"counts": counts}}

    def _tables(self, run: Run, folder: ExportFolder, words: Words, official: dict[str, Any]) -> dict[str, list[Any]]:
        opts = run.cfg.exports.probes
        images = run.images

        def link(image_id: str, rel: str | None = None) -> str | None:
            if images is None:
                return None
            return folder.place(image_file(images, image_id), rel or f"images/{safe_name(image_id)}.jpg")

        def per_unit(kind: str) -> list[Iterator[Any]]:  # each unit's records of `kind`, in its order
            record = run.record_type(self.name, kind)
            return [(to_record(r, record) for r in run.read(self.name, kind, u)) for u in run.units(self.name)]

        out: dict[str, list[Any]] = {"probe_r": [], "probe_c": []}
        for r in first_by_id(per_unit("probe_r")):
            r.image = link(r.image_id)
            out["probe_r"].append(r)
        for r in first_by_id(per_unit("probe_c")):
            r.images = [link(i) for i in r.image_ids]
            out["probe_c"].append(r)
        comp = [r for r in out["probe_c"] if r.kind == "probe_c/composition"]
        kept = {r.id for r in balance_categories(comp, opts.max_category_share)}
        out["probe_c"] = [r for r in out["probe_c"] if r.kind != "probe_c/composition" or r.id in kept]
        sets = heapq.merge(*per_unit("sets"), key=lambda s: s.positive_id)  # the positives' order, as one search's
        splits = [s for s in SPLITS if s in opts.splits]
        official["probe_r"] = self._official_r(folder, sets, words, link, splits)
        official["probe_c"] = self._official_c(folder, out["probe_c"], link, splits)
        return out

    @staticmethod
    def _search(
        cfg: Any, shared: Shared, positives: list[tuple[KeptPositive, Facts]]
    ) -> tuple[list[ProbeRRow | ProbeCRow], dict[str, int], list[ProbeRSetRow]]:
        """Every probe of the positives' triples and attributes (each positive's id, image and split, and its
        `probe_facts`), certified: the rows, the count of probes left uncertified per kind, and Probe-R's sets
        for the paper's record."""
        opts = cfg.exports.probes
        checks = GraphChecks(shared.table, shared.index)
        search = ProbeSearch(shared.words, shared.cert, shared.counts, shared.index, checks, cfg.seed,
                             opts.candidates, opts.subject_only_images, shared.memo)  # fmt: skip
        seen: set[tuple[str, ...]] = set()
        for p, (triples, attrs) in positives:
            for sid, s, r, o, oid in triples:
                if (key := (p.image_id, sid, r, oid)) not in seen:
                    seen.add(key)
                    search.relation(p, s, r, o)
            for oid, n, a in attrs:
                if (key := (p.image_id, oid, a)) not in seen:
                    seen.add(key)
                    search.attribute(p, n, a)
        checks.run()
        found, missed = search.results()
        sets = search.relation_sets()
        search.close()
        return found, missed, sets

    @staticmethod
    def _official_r(
        folder: ExportFolder, sets: Iterable[ProbeRSetRow], words: Words, link: Any, splits: list[str]
    ) -> dict[str, Any]:
        """The paper's Probe-R file per split of `splits` (each written, empty or not); the counts."""
        records = probe_r_records(sets, words, lambda i, stem: link(i, f"probe_r/images/{stem}.jpg"))
        out = {}
        for split in splits:
            part = records.get(split, {})
            write_json(folder.dir / "probe_r" / split / R_FILE, part)
            padded = sum(min(r["hardneg"]["distinct"].values()) < len(r["positive_image_ids"]) for r in part.values())
            out[split] = {"records": len(part), "image_sets_repeating_images": padded}
        return out

    @staticmethod
    def _official_c(folder: ExportFolder, rows: list[ProbeCRow], link: Any, splits: list[str]) -> dict[str, Any]:
        """The paper's two Probe-C files per split of `splits`; the counts."""
        out: dict[str, Any] = {}
        for split in splits:
            out[split] = {}
            for kind, name in C_FILES.items():
                part = [probe_c_record(r) for r in rows if r.split == split and r.kind == kind]
                for r in rows:
                    if r.split == split and r.kind == kind:
                        for i in r.image_ids:
                            link(i, f"probe_c/images/{coco_file(i)}")
                write_json(folder.dir / "probe_c" / split / name, part)
                out[split][name] = len(part)
        return out


def official_notes(official: dict[str, Any], b_splits: list[str], splits: Iterable[str] = SPLITS) -> list[str]:
    """stats.md's lines on the splits where a probe's official file holds nothing: written all the same, and
    the script runs on it to 0 items; Probe-R's and Probe-C's splits outside `exports.probes.splits` and
    Probe-B's outside `exports.probe_b.splits` are not written."""
    out = []
    for split in SPLITS:
        empty = []
        if split in official.get("probe_r", {}) and not official["probe_r"][split]["records"]:
            empty.append("Probe-R (`relation_eval_subject.json`)")
        c = official.get("probe_c", {}).get(split, {})
        empty += [f"Probe-C (`{name}`)" for name, n in c.items() if not n]
        b = official.get("probe_b", {}).get(split)
        if b is not None and not b["images"]:
            empty.append("Probe-B (its folders empty)")
        elif b is not None and not b["cooccurrence"]:
            empty.append("Probe-B's co-occurrence split (`object_context_dataset.json`)")
        if empty:
            out.append(f"{split}: nothing in {', '.join(empty)}; written all the same, and the script runs to 0 items")
    if "probe_r" in official:
        out += [f"{s}: no Probe-R or Probe-C (evaluation benchmarks; `exports.probes.splits` adds it)"
                for s in SPLITS if s not in splits]  # fmt: skip
    if "probe_b" in official:
        out += [f"{s}: no Probe-B (`exports.probe_b.splits` leaves it out), so no `probe_b/{s}/`"
                for s in SPLITS if s not in b_splits]  # fmt: skip
    return out


Probe = TypeVar("Probe", ProbeRRow, ProbeCRow)


def first_by_id(shards: Iterable[Iterable[Probe]]) -> Iterator[Probe]:
    """The shards' rows by id, of each id the first positive's (each shard's rows come by id, one per id): what
    one search over every positive keeps, though a probe that positives of two shards ask (the same triple,
    the same third image) comes from both."""
    last = None
    for r in heapq.merge(*shards, key=lambda r: (r.id, r.positive_id)):
        if r.id != last:
            last = r.id
            yield r


def hardness(tables: dict[str, list[Any]]) -> dict[str, Any]:
    """How hard the negatives are: the predicate swaps never seen with their subject in the corpus, the
    attribute categories of the composition swaps, the attribute pairs."""
    preds = [r for r in tables["probe_r"] if r.kind == "probe_r/predicate"]
    never = sum((r.plausibility or {}).get("subject_relation", 1) == 0 for r in preds)
    comp = [r for r in tables["probe_c"] if r.kind == "probe_c/composition"]
    return {
        "predicate_swaps": len(preds),
        "predicate_never_seen_with_subject": never,
        "composition_categories": dict(Counter(str(r.category) for r in comp).most_common()),
        "composition_swaps": dict(Counter("/".join(r.swap["attribute"]) for r in comp).most_common(12)),
    }


def balance_categories(rows: list[ProbeCRow], share: float) -> list[ProbeCRow]:
    """Probe-C composition rows with no attribute category above `share` of them, per split (the rows past
    a category's cap dropped in their given order): sizes have the most antonyms, and a probe of sizes
    alone says nothing about colours or materials. A split with one category keeps it whole."""
    out: list[ProbeCRow] = []
    for split in sorted({r.split for r in rows}):
        mine = [r for r in rows if r.split == split]
        sizes: dict[Any, int] = defaultdict(int)
        for r in mine:
            sizes[r.category] += 1
        while len(sizes) > 1:
            big = max(sizes, key=lambda k: (sizes[k], str(k)))
            rest = sum(sizes.values()) - sizes[big]
            cap = max(1, int(share / (1.0 - share) * rest))
            if sizes[big] <= cap:
                break
            sizes[big] = cap
        kept: dict[Any, int] = defaultdict(int)
        for r in mine:
            if kept[r.category] < sizes[r.category]:
                kept[r.category] += 1
                out.append(r)
    return out
