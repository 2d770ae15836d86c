"""Negative expressions: each kind of text negative (`generators/text/types.py`: replace object / attribute /
relation, swap object / attribute), at level 1 (the change is on the target) and level 2 (on a related object).

Each negative is built as an altered *path*, kept only when the executor says it matches nothing in the
image's graph and the graph contradicts it for every object that could carry it (a missing annotation
proves nothing: `core/certify.py`), and rendered with its positive's template. Replacement words come from
the language backend (an LLM, or the lexicon's corpus vocabulary); swaps exchange two object names or two attributes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hardneg.backends.language import LanguageBackend, ReplaceRequest
from hardneg.core.certify import VERSION as CERTIFY_VERSION
from hardneg.core.certify import Certifier
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.gqa.annotations import SMALL, AnnotationStats
from hardneg.core.gqa.plausibility import Plausibility
from hardneg.core.plugins import TEXT_NEGATIVES
from hardneg.core.records import PathNode, Reject, SceneGraph, TextChange
from hardneg.core.rows import PositiveRow, TextNegativeRow
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.generators.paths.expressions import Renderer, carry_change
from hardneg.generators.text.context import VERSION as CONTEXT_VERSION
from hardneg.generators.text.context import Context
from hardneg.generators.text.photo import SHOWN, PhotoColours
from hardneg.generators.text.scene import LikelyAbsent, SceneFit
from hardneg.generators.text.sites import (
    SearchState,
    Site,
    SiteSearch,
    SiteVocab,
    enumerate_sites,
    refusal_kind,
    site_order,
)
from hardneg.generators.text.types import text_type
from hardneg.generators.text.worn import UnboxedClothes

# v2 certified false; v3 plausible, worded like the positive; v4 crowds the corpus knows, no colour the photo shows,
# words per site; v5 no small thing likely there; v6 none foreign to the scene; v7 no swap whose subject does what its
# kind never does; v8 none far less fitting; v9 none naming another object again; v10 no swap in one class; v11 none
# true of unboxed clothes; v12 renamed colours on photos; v13 none barely known; v14 one node ruled out by the photo;
# v15 a swap reads an unlisted compound by its head; v16 a name is foreign where what it needs is not (a boat, water)
GENERATOR = f"negatives_text@v16+{CERTIFY_VERSION}+{CONTEXT_VERSION}"
ABSENT_PART = (
    "names a part, and none is annotated: where something it is part of is in view, parts go unannotated; where "
    "nothing is, the expression is absurd"
)


@dataclass(slots=True)
class NegativeContext:
    table: AttributeTable
    words: Words
    renderer: Renderer
    vocab: dict[str, Counter]  # corpus vocabulary: "names", "attributes", "relations" -> counts
    seed: int
    per_positive: int = 1
    max_rounds: int = 3
    n_replacements: int = 5
    words_per_site: int = 1  # negatives one replace site may make, each with another word
    max_options: int = 40
    types: tuple[str, ...] = field(default_factory=TEXT_NEGATIVES.names)  # default: every registered kind
    plausibility: Plausibility | None = None  # corpus statistics: absurd swaps are refused
    context: Context | None = None  # what the corpus attests where a word changes (generators/text/context.py)
    notes: AnnotationStats | None = None  # how the corpus annotates: crowds, likely there (core/gqa/annotations.py)
    small: float = SMALL  # a name whose usual box is under this share of the image is overlooked (0: none)
    scene_fit: float | None = None  # a replacement name fitting the image's names worse than this is left out
    replacement_fit: float | None = None  # ... or fitting them this much worse than the name it replaces
    images: Path | None = None  # the run's images: a colour the photo shows on the object is no negative
    min_area: float = 0.0  # a piece of clothing put on a person is readable at this share of the image
    refused: Counter = field(default_factory=Counter)  # corpus words kept out of the options, by rule
    _pool: dict[tuple[Any, ...], tuple[str, ...]] = field(default_factory=dict)
    _options: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[float, ...]]] = field(default_factory=dict)

    @property
    def site_vocab(self) -> SiteVocab:
        return SiteVocab(self.table, self.words, self.notes)

    def pool(self, site: Site, path: PathNode) -> tuple[str, ...]:
        """Corpus words of the site's category that contradict the replaced word, most frequent first."""
        obj = path.nodes()[site.nodes[0]].relations[site.edge].object.name if site.part == "relation" else None
        key = (site.part, site.word, site.category, obj)
        got = self._pool.get(key)
        if got is None:
            vocab = self.site_vocab
            if site.part == "object":
                pool = [n for n in self.vocab["names"] if vocab.object_category(n) == site.category]
            elif site.part == "attribute":
                pool = [a for a in self.vocab["attributes"] if vocab.attribute_category(a) == site.category]
            else:
                pool = [r for r in self.vocab["relations"] if vocab.relation_category(r) is not None]
            counts = {**self.vocab["names"], **self.vocab["attributes"], **self.vocab["relations"]}
            pool = sorted({p for p in pool if p != site.word}, key=lambda w: (-counts.get(w, 0), w))
            keep = []
            for w in pool:
                ok, why = vocab.contradicts(site, path, w)
                if ok:
                    keep.append(w)
                else:
                    self.refused[f"{site.part}:{refusal_kind(why)}"] += 1
            got = self._pool[key] = tuple(keep)
        return got

    def options(self, site: Site, path: PathNode) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """The replacement words to draw from, with their weights: the contradicting words of the pool that
        the corpus attests in the site's context (`generators/text/context.py`), most plausible first (the
        lexicon backend draws by weight; an LLM sees them as a shortlist). Without a context: the pool's
        most frequent words, unweighted."""
        others = self.other_names(site, path)
        if self.context is None:
            return tuple(w for w in self.pool(site, path) if not self.names_another(w, others))[: self.max_options], ()
        frame = self.context.frame(path, site)
        key = (site.part, site.word, site.category, frame, others)
        got = self._options.get(key)
        if got is None:
            words, weights, unattested = self.context.attested(
                frame, [w for w in self.pool(site, path) if not self.names_another(w, others)]
            )
            self.refused[f"{site.part}:unattested"] += unattested
            got = self._options[key] = (words[: self.max_options], weights[: self.max_options])
        return got

    @staticmethod
    def other_names(site: Site, path: PathNode) -> frozenset[str]:
        """Names of the path's other objects: an object replaced by one of them reads as a second object of
        that name ("the chair to the right of the sofa" -> "the sofa to the right of the sofa")."""
        if site.part != "object":
            return frozenset()
        return frozenset(n.name for i, n in enumerate(path.nodes()) if i not in site.nodes)

    def names_another(self, word: str, others: frozenset[str]) -> bool:
        """Whether `word` names one of `others` again: its name, a plural or a synonym (the sofa, the couch)."""
        return word in others or any(self.words.same_kind(word, o) for o in others)


def apply_site(path: PathNode, site: Site, replacement: str | None = None) -> PathNode:
    """The altered path of the site's kind (ids dropped: a negative grounds nothing)."""
    return text_type(site.negative_type).apply(path, site, replacement).without_ids()


class TextSearch(SiteSearch[SearchState]):
    """Text negatives: an altered path that matches nothing in the image's graph, in its positive's template."""

    stage = "negatives"

    def __init__(self, ctx: NegativeContext, backend: LanguageBackend, graphs: dict[str, SceneGraph]) -> None:
        super().__init__(backend, ctx.per_positive, ctx.max_rounds)
        self.ctx = ctx
        self.vocab = ctx.site_vocab
        self.graphs = graphs
        self.certifier = Certifier(ctx.words, ctx.table, ctx.notes, ctx.small)
        self.worn = UnboxedClothes(ctx.words, ctx.table, self.certifier, ctx.min_area)
        self.fit = SceneFit(ctx.notes, ctx.scene_fit, ctx.replacement_fit, ctx.words) if ctx.notes is not None else None
        self.absent = LikelyAbsent(self.fit, ctx.small, ctx.refused) if self.fit is not None else None
        self._truths: dict[tuple[str, PathNode], tuple[str | None, str | None] | None] = {}  # see `_truth`
        self.indexes: dict[str, GraphIndex] = {}
        self._scenes: dict[str, frozenset[str]] = {}
        self._parts: dict[tuple[str, str, str], str | None] = {}  # (image, replaced, name) -> why it cannot replace it
        self.made: list[TextNegativeRow] = []
        self.photos = PhotoColours(ctx.images)

    def state(self, positive: PositiveRow) -> SearchState:
        path = positive.node()
        if positive.image_id not in self.indexes:
            self.indexes[positive.image_id] = GraphIndex(self.graphs[positive.image_id], self.ctx.table)
        sites = enumerate_sites(path, self.ctx.site_vocab, types=self.ctx.types)
        todo = site_order(positive.id, self.ctx.seed, "negatives", sites, self.ctx.types)
        return SearchState(positive, path, iter(todo))

    def direct(self, st: SearchState, site: Site) -> bool:
        """A site that needs no word (a swap): refused when its kind says it cannot be fair
        (`TextNegativeType.refusal`), says what the positive says in another order, or leaves an object with
        an attribute or relation the corpus never attests for its name ("the cupboard over the toilet" ->
        "the toilet over the cupboard"). Where two objects of the image stand (left of, behind, near) is
        never absurd: they share the scene."""
        kind = text_type(site.negative_type)
        if (why := kind.refusal(site, st.path, self.vocab)) is not None:
            self._refuse(st, site, why)
            return False
        neg = apply_site(st.bare, site)
        if neg.meaning() == st.bare.meaning():
            self._refuse(st, site, "swap says the same thing in another order")
            return False
        if self.ctx.plausibility is not None and (why := self.ctx.plausibility.absurd(neg)) is not None:
            self._refuse(st, site, f"absurd swap: {why}")
            return False
        if self.ctx.context is not None:
            scene = self._scene(st.positive.image_id)
            weight, why = self.ctx.context.weigh(neg, kind.change(site), scene)
            if weight <= 0:
                self._refuse(st, site, f"absurd swap: {why}")
                return False
        return self._keep(st, site, neg, None)

    def _unfit(self, image_id: str, name: str, original: str) -> str | None:
        """Why `name` cannot replace `original` in the image, or None: a part of things only (a crust, not a
        sink, which rooms have) with nothing there it could be, foreign to the scene (`SceneFit`) or barely known."""
        if (key := (image_id, original, name)) not in self._parts:
            part = self.ctx.words.is_part_of_things(name) and not self.certifier.candidates(name, self.graphs[image_id])
            why = self.fit.why(name, self._scene(image_id), original) if self.fit is not None else None
            if why is None and self.absent is not None and self.absent.barely_known(name):  # from any backend
                why = f"{name!r} is in too few of the corpus's images to say it is not there unannotated"
            self._parts[key] = f"{name!r} {ABSENT_PART}" if part else why
        return self._parts[key]

    def _scene(self, image_id: str) -> frozenset[str]:
        """The names of the image's objects (memoised per image)."""
        if image_id not in self._scenes:
            self._scenes[image_id] = frozenset(o.name for o in self.graphs[image_id].objects.values())
        return self._scenes[image_id]

    def _refuse(self, st: SearchState, site: Site, why: str, **detail: Any) -> None:
        self.stats[f"refused:{site.negative_type}:{refusal_kind(why)}"] += 1
        detail = {**site.where(), **detail}
        self.rejects.append(Reject(self.stage, why, st.positive.image_id, st.positive.id, detail=detail))

    def request(self, st: SearchState, site: Site) -> ReplaceRequest | None:
        if (why := self.vocab.crowd_refusal(site, st.path)) is not None:
            self._refuse(st, site, why)
            return None
        img = st.positive.image_id
        options, weights = self.ctx.options(site, st.path)
        if site.part == "object" and self.absent is not None:  # no word the scene likely holds unannotated
            could_be = lambda w: bool(self.certifier.candidates(w, self.graphs[img], self.indexes[img]))  # noqa: E731
            options, weights = self.absent.filter(options, weights, img, site.word or "", self._scene(img), could_be)
        if not options:  # no other word of this category that the corpus attests here: nothing to ask
            return None
        return ReplaceRequest(
            key=f"{st.positive.id}:{site.negative_type}:{site.nodes}:{site.edge}:{site.word}",
            expression=st.positive.expression,
            part=site.part,  # type: ignore[arg-type]
            word=site.word or "",
            category=site.request_category,
            options=options,
            weights=weights,
            n=self.ctx.n_replacements,
        )

    def check(self, st: SearchState, site: Site, values: tuple[str, ...]) -> str | None:
        """None when some value contradicts the original and makes the path match nothing, else why none
        does (an LLM is asked again with this reason)."""
        why: list[str] = []
        for v in values:
            ok, reason = self.usable(st, site, v)
            if not ok:
                why.append(reason)
            elif (truth := self._truth(st, neg := apply_site(st.bare, site, v))) is None:
                if (shown := self._shown(st, neg)) is None:
                    return None
                why.append(f"{v!r} {shown}")
            else:
                hit, doubt = truth
                why.append(f"{v!r} is still true of object {hit} in the image" if hit else f"{v!r} {doubt}")
        return "; ".join(why) or "no replacement given"

    def usable(self, st: SearchState, site: Site, value: str) -> tuple[bool, str]:
        """Whether a proposed word may replace the site's: it contradicts the original, names no other object of
        the path, and the corpus attests it in that context (an LLM's answer is held to what the lexicon draws from)."""
        ok, why = self.vocab.contradicts(site, st.path, value)
        if not ok:
            return ok, why
        if self.ctx.names_another(value, self.ctx.other_names(site, st.path)):
            return False, f"{value!r} already names another object of the expression"
        if site.part == "object" and (why := self._unfit(st.positive.image_id, value, site.word or "")) is not None:
            return False, why
        if self.ctx.context is not None:
            weight, why_not = self.ctx.context.fill(self.ctx.context.frame(st.path, site), value)
            if weight <= 0:
                return False, f"{value!r} does not fit: {why_not}"
        return True, ""

    def accept(self, st: SearchState, site: Site, values: tuple[str, ...]) -> bool:
        """Negatives from the first `words_per_site` values that make one (while the positive has room), each
        word contradicting the ones used before it ("behind" and "standing behind" are one negative twice):
        a site of a small corpus is often its only one, and refinement and the type mix choose among them."""
        used: list[str] = []
        for v in values:
            if len(used) >= self.ctx.words_per_site or st.made >= self.per_positive:
                break
            if any(not self.vocab.contradicts(replace(site, word=u), st.path, v)[0] for u in used):
                continue
            if self.usable(st, site, v)[0] and self._keep(st, site, apply_site(st.bare, site, v), v):
                used.append(v)
        return bool(used)

    def _truth(self, st: SearchState, neg_path: PathNode) -> tuple[str | None, str | None] | None:
        """None when the negative is false of the image; else (an object the executor finds it true of, None)
        or (None, why the graph does not make it false). A graph leaves things out: an object with no colour
        annotated is not "not white", a missing edge is not "not on", an absent crowd name proves nothing. So
        a negative must be *contradicted* for every object that could carry it (`Certifier.uncontradicted`),
        and for the clothes the graph leaves off its people too (`UnboxedClothes`): "the small ball with the same
        color as the car" (swapped from "the small car ... as the ball") may be true of a ball whose size nobody
        annotated. Memoised per image and path: judged when the backend validates a word and when it is kept."""
        if (key := (image := st.positive.image_id, neg_path)) not in self._truths:
            if hit := execute(neg_path, self.indexes[image]):
                self._truths[key] = (sorted(hit)[0], None)
            elif (doubt := self.certifier.uncontradicted(neg_path, self.graphs[image], self.indexes[image])) or (
                doubt := self.worn.doubt(neg_path, self.graphs[image])
            ):
                self._truths[key] = (None, f"may be true: {doubt}")
            else:
                self._truths[key] = None
        return self._truths[key]

    def _shown(self, st: SearchState, neg_path: PathNode) -> str | None:
        """Why the photo says a colour the negative states of an object may be there (`generators/text/photo.py`),
        or None. Node by node against the positive: a colour it adds to a node (a replaced or swapped colour) is
        checked on every object the node could be, and every colour of a node that now bears another name (a
        replaced or swapped object) on every object of that name: "the black sign" made "the black parking
        meter" is still true of an orange meter whose head is black below. A node whose colour no object it could
        be shows makes the path false, whatever the others show ("the gray jacket ..." with no gray jacket)."""
        old, new = st.path.nodes(), neg_path.nodes()
        if self.photos.images is None or len(old) != len(new):
            return None
        image = st.positive.image_id
        doubt = None
        for a, b in zip(old, new, strict=True):
            stated = b.attributes if a.name != b.name else tuple(w for w in b.attributes if w not in a.attributes)
            objects = self.certifier.candidates(b.name, self.graphs[image], self.indexes[image]) if stated else ()
            for word in stated:
                shares = [(o, self.photos.shown(image, o, word)) for o in objects]
                if objects and all(x is not None and x < SHOWN for _, x in shares):
                    return None  # the photo rules this node out: the path is false
                if doubt is None and (shown := [(o, x) for o, x in shares if x is not None and x >= SHOWN]):
                    (o, x), *_ = shown
                    doubt = f"may be true: the photo shows {word} on {o.name} {o.id} ({x:.0%} of its box)"
        return doubt

    def _keep(self, st: SearchState, site: Site, neg_path: PathNode, replacement: str | None) -> bool:
        pos = st.positive
        idx = self.indexes[pos.image_id]
        if (truth := self._truth(st, neg_path)) is not None:
            if replacement is None:  # a swap that may be true: say so (a replacement's check already did)
                hit, doubt = truth
                self._refuse(st, site, f"still true of object {hit} in the image" if hit else doubt or "")
            return False
        if (shown := self._shown(st, neg_path)) is not None:
            if replacement is None:
                self._refuse(st, site, shown)
            return False
        nid = TextNegativeRow.make_id(pos.id, site.negative_type, neg_path)
        if nid in st.seen:
            return False
        st.seen.add(nid)
        change = TextChange(site.nodes, site.word, replacement, site.other, site.edge).to_json()
        template_text = self.ctx.renderer.render_with(neg_path, pos.tuple_type, pos.template, idx, st.path)
        worded = pos.template_expression if pos.template_expression is not None else pos.expression
        expression = carry_change(worded, pos.expression, template_text)
        source = pos.expression_source
        if expression is None:  # the rewrite reworded the changed words: the template's text
            expression, source = template_text, "template"
            self.stats["surface:template_fallback"] += 1
        self.made.append(TextNegativeRow.made(
            id=nid, positive_id=pos.id, image_id=pos.image_id, width=pos.width, height=pos.height, path=neg_path,
            ori_type=pos.tuple_type, level=pos.level, negative_type=site.negative_type, negative_level=site.level,
            shuffle_index=list(site.nodes), change=change, expression=expression, template=pos.template,
            template_expression=template_text, expression_source=source, bbox=pos.bbox, generator=GENERATOR,
            backend=self.backend.version if replacement is not None else "none",
        ))  # fmt: skip
        st.made += 1
        self.stats[f"made:{site.negative_type}:L{site.level}"] += 1
        return True


def make_text_negatives(
    positives: list[PositiveRow],
    graphs: dict[str, SceneGraph],
    ctx: NegativeContext,
    backend: LanguageBackend,
) -> tuple[list[TextNegativeRow], list[Reject], Counter]:
    """Up to `per_positive` negatives per positive, batching replace requests per round."""
    search = TextSearch(ctx, backend, graphs)
    search.run([search.state(p) for p in positives])
    search.stats.update({f"options_refused:{k}": v for k, v in ctx.refused.items()})
    return search.made, search.rejects, search.stats


def iter_keep_words(path: PathNode) -> Iterator[tuple[str, str]]:
    """(kind, phrase) of everything a rewrite must keep: names, attributes, relations, same categories."""
    for n in path.nodes():
        yield ("object", n.name)
        for a in n.attributes:
            yield ("attribute", a)
        for e in n.relations:
            yield ("relation", e.name)
        for s in n.same:
            yield ("category", s.category)


def replay(positive_path: PathNode, negative: TextNegativeRow) -> PathNode:
    """Re-apply a written negative's recorded `change` to its positive's path (for re-checking)."""
    ch = TextChange.from_json(negative.change)
    site = Site(negative.negative_type, negative.negative_level, ch.nodes, word=ch.word, edge=ch.edge, other=ch.other)
    return apply_site(positive_path, site, ch.replacement)
