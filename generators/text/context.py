"""What the corpus says fits where a negative changes a word: plausible by construction, not by filtering.

A negative is a fair test when it is false of the image and as plausible as its positive: "the cup on the
saucer" -> "the bowl on the saucer" tests whether a model looks; "the meat on a straw", "the framed cake
hanging on the wall", "the silk bridge" test nothing, because a blind reader rejects them. So every fact a
negative changes must be *attested*: seen in the corpus's scene graphs, in that context.

The facts of a path are its attributes ("attr", a, name) and its relations ("rel", subject, relation,
object). A change touches some of them; each touched fact must be seen

- exactly (N(white, plate) > 0; N(meat, on, plate) > 0), or
- for a relation, with a name the change kept backed off to its kind (the word tables' replacement
  category, `Words.name_category`), which lets a corpus of a hundred images speak: "bowl" in place of
  "plate" in "the soup on the plate" is attested by N(soup, on, bowl) or N(food, on, bowl). The changed
  name never backs off, or a kind would always have some member that fits: "straw" in "the meat on the
  straw" needs something of the kind of meat seen on a straw, and nothing is;
- for an attribute, on the kind of its name (N(silk, structure) = 0: no silk bridge; N(framed, food) = 0:
  no framed cake), or when the word tables' `free_on` says its category fits anything of that kind (made
  things come in any colour, anything in sizes: a green chair needs no evidence, a blue banana does), or,
  for a colour, when the tables' `comes_in` says the natural kind comes in it (a black horse, white
  bread: a hundred images rarely show every colour a horse comes in);
- for a positional relation (left/right, in front/behind, next to, near: `Words.is_positional`), also when
  the two names, or a changed name and the kind of the other, are seen in any positional relation either
  way, or the two names are annotated in one image of the corpus, or both are objects of the image: any
  two objects that share a scene stand somewhere relative to each other, and a scene and its mirror image
  are equally plausible (the reason flips are fair negatives). "The girl in front of the zebra" needs a
  zebra seen beside a person. A positional relation that starts with a verb ("parked next to", "standing
  behind") says what its subject does as well as where it is: a subject the change put there must be seen
  doing it, in any relation of the verb or as an attribute, itself or its kind ("the building parked next
  to the truck" is no swap of "the truck parked next to the building": nothing of a building's kind is
  ever parked).

The counts are the run's plus the prior of real graphs (`core/gqa/prior.py`), so ten images attest what
thousands of real ones do, and a run of thousands speaks for itself.

A change's weight is the product of its facts' counts (a fact seen only backed off weighs `BACKOFF` times
its backed-off count, a free attribute `BACKOFF` squared times the attribute's count); a change that
touches no fact (a bare name) weighs its word's corpus count. Replacements are drawn in proportion to
these weights, so a negative's words are distributed like the positives' words in that context, which
is what leaves a blind scorer at chance without throwing most negatives away.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hardneg.core.gqa.plausibility import Counts
from hardneg.core.records import PathNode
from hardneg.core.words.table import Words
from hardneg.generators.text.sites import Site

VERSION = "context@v5"  # v2: names annotated in one image attest a positional relation; v3: an attribute kept
# on a changed name is not backed off to the name's kind, nor is a material or a colour; v4: a changed subject of a
# positional relation with a verb must be seen doing it; v5: a colour a natural kind comes in
BACKOFF = 0.1  # the weight of a count seen only with a context name backed off to its category
NAME_OWN = frozenset({"material", "color"})  # attribute categories never backed off to the name's kind

Fact = tuple[str | None, ...]  # ("attr", a, name) or ("rel", subject, relation, object); None: the word to fill
HOLE = None


@dataclass(slots=True, frozen=True)
class Change:
    """What an alteration of a path changes, by node index (`PathNode.nodes()` order): the nodes whose
    name changed, the (node, attribute) pairs newly stated, and the (node, edge) relations replaced."""

    names: frozenset[int] = frozenset()
    attributes: frozenset[tuple[int, str]] = frozenset()
    edges: frozenset[tuple[int, int]] = frozenset()


class Context:
    """Attested facts and their weights over the run's corpus statistics (`core/plausibility.Counts`)."""

    def __init__(self, counts: Counts, words: Words, seen_together: Counter | None = None) -> None:
        self.c = counts
        self.words = words
        # (name, other name), sorted -> images annotating both (`AnnotationStats.together`): read, not copied
        self.seen_together: Counter = seen_together if seen_together is not None else Counter()
        self._cls: dict[str, str | None] = {}
        # (attribute, category of the name); never a material or a colour, which fit a name, not its kind: glass
        # tables but no glass couches, blue flowers but no blue trees (a made thing's colour is free: `free_on`)
        self.attr_kind: Counter = Counter()
        for (a, n), k in counts.attribute_name.items():
            if (cls := self.kind(n)) is not None and words.attribute_category(a) not in NAME_OWN:
                self.attr_kind[(a, cls)] += k
        self.subject_kind: Counter = Counter()  # (category of the subject, relation, object)
        self.object_kind: Counter = Counter()  # (subject, relation, category of the object)
        # two names, or a name and the kind of another ("kind:animal"), seen in a positional relation
        self.together: Counter = Counter()
        # (name or "kind:<category>", verb): seen as the subject of a relation that starts with the verb, or with
        # the verb as an attribute ("parked")
        self.does: Counter = Counter()
        self._positional: dict[str, bool] = {}
        self._free: dict[tuple[str, str | None], bool] = {}
        for (s, r, o), k in counts.triples.items():
            cs, co = self.kind(s), self.kind(o)
            if cs is not None:
                self.subject_kind[(cs, r, o)] += k
            if co is not None:
                self.object_kind[(s, r, co)] += k
            if self.positional(r):
                self.together[frozenset((s, o))] += k
                if cs is not None:
                    self.together[frozenset((f"kind:{cs}", o))] += k
                if co is not None:
                    self.together[frozenset((s, f"kind:{co}"))] += k
            if (verb := verb_of(r)) is not None:
                self.does[(s, verb)] += k
                if cs is not None:
                    self.does[(f"kind:{cs}", verb)] += k
        for (a, n), k in counts.attribute_name.items():  # "parked" is also said of a car
            self.does[(n, a)] += k
            if (cls := self.kind(n)) is not None:
                self.does[(f"kind:{cls}", a)] += k

    def positional(self, relation: str) -> bool:
        if relation not in self._positional:
            self._positional[relation] = self.words.is_positional(relation)
        return self._positional[relation]

    def free(self, attribute: str, kind: str | None) -> bool:
        key = (attribute, kind)
        if key not in self._free:
            self._free[key] = self.words.fits_any(attribute, kind)
        return self._free[key]

    def kind(self, name: str) -> str | None:
        """The name's replacement category (the back-off class), memoised."""
        if name not in self._cls:
            self._cls[name] = self.words.name_category(name)
        return self._cls[name]

    # -- one fact ------------------------------------------------------------------------------------

    def support(self, fact: Fact, changed: frozenset[str] = frozenset(), scene: frozenset[str] = frozenset()) -> float:
        """How strongly the corpus attests `fact` (0: never seen in any allowed form). `changed` names the
        fact's name slots the alteration changed ("s", "o", or "n" for an attribute's name): a changed name
        is never backed off, unless every name of the fact changed (a swap of two related objects). `scene`:
        the names of the image's objects; a positional relation between two of them is plausible whatever
        the corpus says, since they share the scene (a swap rearranges objects of the image)."""
        c = self.c
        if fact[0] == "attr":
            _, a, n = fact
            if exact := c.attribute_name[(a, n)]:
                return exact
            cls = self.kind(n)
            # a changed name is not backed off here either: "cloth" is seen on couches, which are furniture,
            # and a couch replaced by a desk keeps "cloth" only where a cloth desk is seen
            if cls is not None and "n" not in changed and (back := self.attr_kind[(a, cls)]):
                return BACKOFF * back
            # a word that fits anything of the name's kind (a colour on a made thing), or a colour the natural
            # kind comes in (a black horse): as plausible as the word is common, at the next level down
            return BACKOFF * BACKOFF * c.attributes[a] if self.free(a, cls) or self.words.comes_in(a, n) else 0.0
        _, s, r, o = fact
        if exact := c.triples[(s, r, o)]:
            return exact
        both = "s" in changed and "o" in changed
        back = 0
        if (both or "s" not in changed) and (cs := self.kind(s)) is not None:
            back = max(back, self.subject_kind[(cs, r, o)])
        if (both or "o" not in changed) and (co := self.kind(o)) is not None:
            back = max(back, self.object_kind[(s, r, co)])
        if self.positional(r) and ("s" not in changed or self.can(s, r)):
            if s in scene and o in scene:
                back = max(back, 1)
            back = max(back, self.together[frozenset((s, o))], self.seen_together[(s, o) if s < o else (o, s)])
            # seen beside something of the kind of the name it did not change (the changed one stays exact)
            if (both or "s" not in changed) and (cs := self.kind(s)) is not None:
                back = max(back, self.together[frozenset((f"kind:{cs}", o))])
            if (both or "o" not in changed) and (co := self.kind(o)) is not None:
                back = max(back, self.together[frozenset((s, f"kind:{co}"))])
        return BACKOFF * back

    def can(self, subject: str, relation: str) -> bool:
        """Whether `subject`, or something of its kind, is seen doing what `relation`'s verb says (True for a
        relation without a verb)."""
        if (verb := verb_of(relation)) is None:
            return True
        cls = self.kind(subject)
        return bool(self.does[(subject, verb)] or (cls is not None and self.does[(f"kind:{cls}", verb)]))

    @staticmethod
    def describe(fact: Fact) -> str:
        return f"'{fact[1]} {fact[2]}'" if fact[0] == "attr" else f"'{fact[1]} {fact[2]} {fact[3]}'"

    # -- a change of a path --------------------------------------------------------------------------

    def touched(self, path: PathNode, change: Change) -> Iterator[tuple[Fact, frozenset[str]]]:
        """The facts of `path` (already altered) that `change` touches, each with its changed name slots."""
        nodes = path.nodes()
        index = {id(n): i for i, n in enumerate(nodes)}
        renamed = change.names
        for i in sorted(renamed):
            for a in nodes[i].attributes:
                yield ("attr", a, nodes[i].name), frozenset({"n"})
        for i, a in sorted(change.attributes):
            yield ("attr", a, nodes[i].name), frozenset()
        for i, n in enumerate(nodes):
            for j, e in enumerate(n.relations):
                k = index[id(e.object)]
                slots = frozenset(x for x, m in (("s", i), ("o", k)) if m in renamed)
                if slots or (i, j) in change.edges:
                    yield ("rel", n.name, e.name, e.object.name), slots

    def weigh(self, path: PathNode, change: Change, scene: frozenset[str] = frozenset()) -> tuple[float, str | None]:
        """(weight, None) for an attested change of `path` (already altered), or (0.0, why not). A change
        that touches no fact weighs the corpus count of the names it put in. `scene`: see `support`."""
        weight, why, facts = self._product(self.touched(path, change), scene)
        if why is not None:
            return 0.0, why
        if facts == 0:
            nodes = path.nodes()
            for i in change.names:
                n = self.c.names[nodes[i].name]
                if n <= 0:
                    return 0.0, f"'{nodes[i].name}' is never seen in the corpus"
                weight *= n
        return weight, None

    # -- a replacement's frame: the touched facts with a hole where the word goes ---------------------

    def frame(self, path: PathNode, site: Site) -> tuple[tuple[Fact, frozenset[str]], ...]:
        """The facts a replacement at `site` touches, with `HOLE` where the new word goes: the weight of
        every candidate word is read off one frame (`fill`), and frames repeat across positives."""
        nodes = path.nodes()
        i = site.nodes[0]
        if site.part == "attribute":
            return ((("attr", HOLE, nodes[i].name), frozenset()),)
        if site.part == "relation":
            e = nodes[i].relations[site.edge]  # type: ignore[index]
            return ((("rel", nodes[i].name, HOLE, e.object.name), frozenset()),)
        target = nodes[i]
        out: list[tuple[Fact, frozenset[str]]] = [(("attr", a, HOLE), frozenset({"n"})) for a in target.attributes]
        out += [(("rel", HOLE, e.name, e.object.name), frozenset({"s"})) for e in target.relations]
        for n in nodes:
            out += [(("rel", n.name, e.name, HOLE), frozenset({"o"})) for e in n.relations if e.object is target]
        return tuple(out)

    def fill(self, frame: tuple[tuple[Fact, frozenset[str]], ...], word: str) -> tuple[float, str | None]:
        """(weight, None) of `word` in the frame's hole, or (0.0, why it is not attested there)."""
        if not frame:
            n = self.c.names[word]  # a bare name: how common it is
            return (float(n), None) if n > 0 else (0.0, f"'{word}' is never seen in the corpus")
        weight, why, _ = self._product(
            (tuple(word if x is HOLE else x for x in fact), slots)
            for fact, slots in frame  # type: ignore[misc]
        )
        return (0.0, why) if why is not None else (weight, None)

    def _product(
        self, facts: Iterable[tuple[Fact, frozenset[str]]], scene: frozenset[str] = frozenset()
    ) -> tuple[float, str | None, int]:
        """The product of the facts' supports, why the first unattested one is not, and how many there were."""
        weight, n = 1.0, 0
        for fact, slots in facts:
            n += 1
            s = self.support(fact, slots, scene)
            if s <= 0:
                return 0.0, f"{self.describe(fact)} is never seen in the corpus, nor anything of its kind there", n
            weight *= s
        return weight, None, n

    def attested(
        self, frame: tuple[tuple[Fact, frozenset[str]], ...], words: list[str]
    ) -> tuple[tuple[str, ...], tuple[float, ...], int]:
        """The `words` the frame attests, most plausible first, their weights, and how many it does not."""
        weighed = [(w, self.fill(frame, w)[0]) for w in words]
        kept = sorted(((w, x) for w, x in weighed if x > 0), key=lambda wx: (-wx[1], wx[0]))
        return tuple(w for w, _ in kept), tuple(x for _, x in kept), len(weighed) - len(kept)


def verb_of(relation: str) -> str | None:
    """The participle a relation of several words starts with ("parked" in "parked next to", "standing" in
    "standing behind"), or None ("next to", "in front of", "on top of")."""
    head, sep, _ = relation.partition(" ")
    return head if sep and len(head) > 4 and head.endswith(("ed", "ing")) else None
