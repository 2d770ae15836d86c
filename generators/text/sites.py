"""Where and how a positive can be altered into a negative: one algorithm for text negatives (an altered
path) and image negatives (an edited image).

1. `enumerate_sites`: every structurally possible alteration of a path, as typed `Site`s, each kind of
   text negative giving its own (`generators/text/types.py`: replace the object / an attribute / a
   relation of node i, swap the objects or two attributes of nodes i and k). Level 1 when the change is
   on the target (node 0), 2 on a related object. An image negative passes the path's grounded objects,
   so a node whose object cannot be edited gets no site and attribute swaps are checked against the
   objects' full attribute sets.
2. `order_sites`: kinds that few paths allow first (each kind's `rarity`), level 2 before level 1, groups
   in a keyed random order, sites shuffled within each group, so every (type, level) is represented.
3. `SiteSearch`: walk each positive's sites in that order until it has its quota; a site that needs no
   word (a swap, a flip) is tried at once; a replace site becomes one request to the language backend,
   batched over all positives, one outstanding request per positive per round, for `max_rounds` rounds.
   Subclasses say what trying, asking, checking and accepting mean for text and for images.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from hardneg.backends.language import Answer, LanguageBackend, ReplaceRequest
from hardneg.core.geometry import direction
from hardneg.core.gqa.annotations import AnnotationStats
from hardneg.core.plugins import IMAGE_NEGATIVES, TEXT_NEGATIVES
from hardneg.core.records import PathNode, Reject, SceneObject, keyed_seed
from hardneg.core.rows import PositiveRow
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words


@dataclass(slots=True, frozen=True)
class Site:
    """One way to alter a path: what to change, where (node indices in `PathNode.nodes()` order), and
    at which negative level."""

    negative_type: str
    level: int
    nodes: tuple[int, ...]
    word: str | None = None  # replace: the word replaced; swap_attribute: the first node's attribute
    edge: int | None = None  # replace_relation: which relation of the node
    category: str | None = None  # the replaced word's category (object, attribute or relation category)
    other: str | None = None  # swap_attribute: the attribute on the second node

    def where(self) -> dict[str, Any]:
        """What a reject about this site records: two sites alike but for where never read alike."""
        out: dict[str, Any] = {"negative_type": self.negative_type, "nodes": list(self.nodes)}
        if self.edge is not None:
            out["edge"] = self.edge
        if self.word is not None:
            out["word"] = self.word
        return out

    @property
    def part(self) -> str:
        """What the site changes ("object", "attribute", "relation"), as its kind declares it
        (`TextNegativeType.part`; for a kind of negative image alone, `ImageType.part`)."""
        kinds = TEXT_NEGATIVES if self.negative_type in TEXT_NEGATIVES else IMAGE_NEGATIVES
        return kinds.get(self.negative_type).part

    @property
    def request_category(self) -> str | None:
        """How the category is named to the language backend ("color", "object: vehicle")."""
        return self.category if self.part == "attribute" else f"{self.part}: {self.category}"


REFUSAL_KINDS = (  # (label, phrase in the reason): which rule refused a candidate negative (for the counts)
    ("likely in the scene unannotated", "likely there unannotated"), ("shown in the photo", "the photo shows"),
    ("not contradicted by the graph", "may be true: "),
    ("synonym", "synonym"), ("plural form", "plural form"), ("is-a", "hyponym"), ("is-a", "hypernym"),
    ("part/whole", "part of"), ("part/whole", "worn"), ("overlapping names", "can name one object"),
    ("compatible", "can hold at once"), ("compatible", "point the same way"), ("crowd name", "crowd name"),
    ("person attribute", "person noun"), ("symmetric swap", "symmetric relation"), ("absurd", "absurd"),
    ("still true (graph or boxes)", "still true"), ("unknown word", "not in the"), ("unknown word", "do not know"),
    ("uncategorised", "no category"), ("uncategorised", "no scale"),
    ("not listed as contradicting", "no contradiction"),
    ("implied", "implies"),
    ("unattested in context", "does not fit"), ("repeated name", "already names another object"),
    ("same meaning", "same thing in another order"), ("absent part", "names a part, and none is annotated"),
)  # fmt: skip


def refusal_kind(reason: str) -> str:
    """The rule behind a refusal's reason, for counting what each rule rejected."""
    return next((label for label, phrase in REFUSAL_KINDS if phrase in reason), "other")


@dataclass(slots=True, frozen=True)
class SiteVocab:
    """The tables that categorise and relate words (`core/words/table.py`); a word without a category cannot
    be replaced, and a replacement must contradict the word it replaces. With the corpus's `notes` (the
    run's and the prior's, `core/gqa/annotations.py`), a name the corpus says comes in many is a crowd too."""

    table: AttributeTable
    words: Words
    notes: AnnotationStats | None = field(default=None, compare=False)

    def crowd(self, name: str) -> str | None:
        """Why `name` cannot carry a claim that something is unique or absent: the word tables' crowd and
        background names, and the names the corpus says come in many (one annotated, the next maybe not)."""
        why = self.words.crowd_reason(name)
        if why is None and self.notes is not None:
            why = self.notes.comes_in_many(name)
        return why

    def object_category(self, name: str) -> str | None:
        return self.words.name_category(name)

    def attribute_category(self, attribute: str) -> str | None:
        return self.table.category(attribute)

    def relation_category(self, relation: str) -> str | None:
        if direction(relation) is not None:
            return "spatial"
        return "relation" if self.words.relation_form(relation) is not None else None

    def crowd_refusal(self, site: Site, path: PathNode) -> str | None:
        """A negative claims something is absent; a crowd or background name (trees, grass, windows)
        cannot carry that claim, because unannotated instances are everywhere. So no replacement touches
        a node of such a name, or a relation to one."""
        node = path.nodes()[site.nodes[0]]
        names = [node.name]
        if site.part == "relation":
            names.append(node.relations[site.edge].object.name)  # type: ignore[index]
        for n in names:
            if (why := self.crowd(n)) is not None:
                return f"the change rests on the crowd name {n!r} ({why})"
        return None

    def contradicts(self, site: Site, path: PathNode, word: str) -> tuple[bool, str]:
        """Whether `word` in place of the site's word makes a claim the original cannot also make true:
        (True, "") or (False, why not). Same category is not enough."""
        old = site.word or ""
        if site.part == "object" and self.crowd(word) is not None:
            return False, f"{word!r} is a crowd name: its absence cannot be claimed ({self.crowd(word)})"
        if site.part == "object":
            if self.object_category(word) is None:
                return False, f"{word!r} is no object name in the word tables"
            if self.object_category(old) == "object_part" and not self.words.shares_whole(old, word):
                return False, f"{word!r} is no part of what {old!r} is part of: in its place it reads as absurd"
            return self.words.names_contradict(old, word)
        if site.part == "attribute":
            if self.attribute_category(word) != site.category:
                return False, f"{word!r} is not a {site.category} like {old!r}"
            return self.words.attributes_contradict(old, word, path.nodes()[site.nodes[0]].name)
        obj = path.nodes()[site.nodes[0]].relations[site.edge].object.name  # type: ignore[index]
        return self.words.relations_contradict(old, word, obj=obj)

    def names_swap_refusal(
        self, site: Site, path: PathNode, objects: Sequence[SceneObject | None] | None = None
    ) -> str | None:
        """Why swapping the names of the site's two nodes would not make a sensible, fair negative, or None:
        - a crowd or background name cannot carry the claim (one of the many trees may fit either way);
        - two names that can name one object (a kind, a part, a synonym, or one class: a man and a player)
          swap into a claim that may still hold;
        - a colour or other person-describing attribute is never moved onto a person noun;
        - two nodes joined by a symmetric relation (next to, near) with the same attributes swap into the
          same statement read from the other side."""
        nodes = path.nodes()
        i, k = site.nodes
        a, b = nodes[i], nodes[k]
        w = self.words
        for n in (a, b):
            if (why := self.crowd(n.name)) is not None:
                return f"swap involves the crowd name {n.name!r} ({why})"
        # a swap exchanges two objects of the image, so the names need not share a category (a chair
        # and a lamp); they must only be unable to name one object (not synonyms, kinds, parts)
        for n in (a.name, b.name):  # a compound the tables do not list is a kind of its head ("work truck")
            if not w.is_known(n) and not (len(n.split()) > 1 and w.is_known(n.split()[-1])):
                return f"swap involves {n!r}, which the word tables do not know"
        if (rel := w.name_relation(a.name, b.name)) is not None:
            return f"swap of names that can name one object: {a.name!r} and {b.name!r} ({rel})"
        if (why := w.one_class(a.name, b.name)) is not None:  # both may hold of each: "the player left of the man"
            return f"swap of names that can name one object: {why}"
        for noun, attrs in ((b.name, a.attributes), (a.name, b.attributes)):
            if w.is_person(noun) and (bad := [x for x in attrs if w.is_person_attribute(x)]):
                return f"swap would describe the person noun {noun!r} as {bad[0]!r}"
        attrs_a = set(a.attributes if objects is None else objects[i].attributes)  # type: ignore[union-attr]
        attrs_b = set(b.attributes if objects is None else objects[k].attributes)  # type: ignore[union-attr]
        joined = [e.name for e in a.relations if e.object is b] + [e.name for e in b.relations if e.object is a]
        if attrs_a == attrs_b and any(w.is_symmetric(r) for r in joined):
            return "swap across a symmetric relation between equally described objects states the same fact"
        return None

    def attributes_swap_refusal(self, site: Site, path: PathNode) -> str | None:
        """Why swapping two attributes of the site's nodes would not make a sensible, fair negative, or
        None: two attributes that do not contradict swap into a claim that may still hold, and a
        person-describing attribute is never moved onto a person noun."""
        nodes = path.nodes()
        i, k = site.nodes
        a, b = nodes[i], nodes[k]
        w = self.words
        x, y = site.word or "", site.other or ""
        for name in (a.name, b.name):  # each node's object ends up with the other's word
            ok, why = w.attributes_contradict(x, y, name)
            if not ok:
                return f"swap of attributes that do not contradict: {why}"
        for noun, attr in ((b.name, x), (a.name, y)):
            if w.is_person(noun) and w.is_person_attribute(attr):
                return f"swap would describe the person noun {noun!r} as {attr!r}"
        return None


def enumerate_sites(
    path: PathNode,
    vocab: SiteVocab,
    objects: Sequence[SceneObject | None] | None = None,
    types: Sequence[str] | None = None,
) -> list[Site]:
    """Every structurally possible alteration of `path` by the kinds `types` (default: every registered
    kind of text negative), in a stable order. `objects`, aligned with `path.nodes()`, are the editable
    grounded objects of an image negative (None where not editable)."""
    return [
        s
        for name in (TEXT_NEGATIVES.names() if types is None else types)
        for s in TEXT_NEGATIVES.get(name)().sites(path, vocab, objects)
    ]


def rarities() -> dict[str, int]:
    """Each kind of text negative's rarity: kinds that few paths allow come first (`order_sites`)."""
    return {name: cls.rarity for name, cls in TEXT_NEGATIVES.items()}


def order_sites(
    sites: Sequence[Site], types: Sequence[str], rng: random.Random, rarity: dict[str, int] | None = None
) -> list[Site]:
    """Sites of the wanted types grouped by (type, level): rarer kinds and level 2 first, groups in a
    keyed random order, sites shuffled within each group. `rarity` by kind: default, the text kinds'."""
    rarity = rarities() if rarity is None else rarity
    groups: dict[tuple[str, int], list[Site]] = {}
    for s in sites:
        if s.negative_type in types:
            groups.setdefault((s.negative_type, s.level), []).append(s)
    draw = {k: rng.random() for k in sorted(groups)}
    ordered: list[Site] = []
    for k in sorted(groups, key=lambda k: (rarity[k[0]], -k[1], draw[k])):
        rng.shuffle(groups[k])
        ordered.extend(groups[k])
    return ordered


@dataclass(slots=True)
class SearchState:
    """One positive's walk through its sites."""

    positive: PositiveRow
    path: PathNode
    todo: Iterator[Site]
    made: int = 0
    seen: set[Any] = field(default_factory=set)
    _bare: PathNode | None = None

    @property
    def bare(self) -> PathNode:
        """The path without ids (once per positive): what a negative alters (a negative grounds nothing)."""
        if self._bare is None:
            self._bare = self.path.without_ids()
        return self._bare


S = TypeVar("S", bound=SearchState)


class SiteSearch(Generic[S]):
    """The rounds loop shared by text and image negatives (see the module docstring), over states of type
    `S` (a subclass of `SearchState` holds what its search needs: the image search's the graph and photo).
    Subclasses implement `direct`, `request`, `check` and `accept`; `stats` and `rejects` collect what
    happened."""

    stage = "negatives"  # the reject stage name

    def __init__(self, backend: LanguageBackend, per_positive: int, max_rounds: int) -> None:
        self.backend = backend
        self.per_positive = per_positive
        self.max_rounds = max_rounds
        self.stats: Counter = Counter()
        self.rejects: list[Reject] = []

    # -- what a subclass decides -------------------------------------------------------------------

    def needs_word(self, site: Site) -> bool:
        """Whether the site is a replacement whose word the language backend chooses."""
        return bool(TEXT_NEGATIVES.get(site.negative_type).needs_word)

    def direct(self, st: S, site: Site) -> bool:
        """Try a site that needs no word (a swap, a flip); True when it made a negative."""
        raise NotImplementedError

    def request(self, st: S, site: Site) -> ReplaceRequest | None:
        """The replace request for a site, or None when there is nothing to ask (no candidate word)."""
        raise NotImplementedError

    def check(self, st: S, site: Site, values: tuple[str, ...]) -> str | None:
        """None when some value would make a negative, else why none does (the backend may ask again)."""
        raise NotImplementedError

    def accept(self, st: S, site: Site, values: tuple[str, ...]) -> bool:
        """Make the negative from the first value that works; False when none does."""
        raise NotImplementedError

    # -- the loop ----------------------------------------------------------------------------------

    def run(self, states: list[S]) -> None:
        for _round in range(self.max_rounds):
            pending: list[tuple[S, Site, ReplaceRequest]] = []
            for st in states:
                while st.made < self.per_positive:
                    site = next(st.todo, None)
                    if site is None:
                        break
                    if not self.needs_word(site):
                        if not self.direct(st, site):
                            self.stats[f"not_negative:{site.negative_type}"] += 1
                        continue
                    req = self.request(st, site)
                    if req is None:
                        self.stats[f"no_alternative:{site.negative_type}"] += 1
                        continue
                    pending.append((st, site, req))
                    break  # one outstanding request per positive per round
            if not pending:
                break
            by_key = {req.key: (st, site) for st, site, req in pending}

            def validate(req: Any, values: tuple[str, ...], by_key: dict = by_key) -> str | None:
                st, site = by_key[req.key]
                return self.check(st, site, values)

            answers: list[Answer] = self.backend.replace([req for _, _, req in pending], validate)
            for (st, site, _req), ans in zip(pending, answers, strict=True):
                if ans.values is not None and self.accept(st, site, ans.values):
                    continue
                self.stats[f"replace_failed:{site.negative_type}"] += 1
                detail = {**site.where(), "raw": ans.raw, "attempts": ans.attempts}
                why = ans.error or "no usable replacement"
                self.rejects.append(Reject(self.stage, why, st.positive.image_id, st.positive.id, detail=detail))
        for st in states:
            self.stats["positives_with_negative" if st.made else "positives_without_negative"] += 1


def site_order(
    positive_id: int,
    seed: int,
    salt: str,
    sites: Sequence[Site],
    types: Sequence[str],
    rarity: dict[str, int] | None = None,
) -> list[Site]:
    """`order_sites` keyed by (seed, salt, positive): the same positive always walks the same order."""
    return order_sites(sites, types, random.Random(keyed_seed(seed, salt, positive_id)), rarity)
