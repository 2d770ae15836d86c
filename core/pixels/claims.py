"""A sample's claims checked against its photo: colour attributes, same-colour edges, and twins.

The graph says "the white plate"; the photo may show a plate with a wide green rim, or a second white
plate nobody annotated. For one positive (`judge_positive`) or one text negative (`judge_negative`), this
module asks the pixel primitives (`core/pixels/evidence.py`, `core/pixels/twins.py`) what the photo says
about what the path claims, and answers in findings a person can read, each under a rule name:

| rule | what | on |
|---|---|---|
| `colour_contradicted` | a colour attribute the photo contradicts on every object its node names | positive |
| `multicoloured` | a single-colour attribute, or a same-colour edge, on an object of several large colours | positive |
| `same_colour_contradicted` | a same-colour edge whose two objects the photo shows in different colours | positive |
| `colour_twin` | another object the graph does not rule out shows the target's claimed colour (a risk) | positive |
| `photo_twin`, `photo_lookalike` | another region looks like the target, strongly or somewhat (a risk) | positive |
| `colour_still_true` | a colour a text negative puts on an object, which the photo shows there | text negative |

What is judged: the colour words `is_colour_claim` knows, on every object a path node names in context
(`core.certify.context_objects`): the target for the root, the partners a relation or a same edge reaches
for the others. A related node's claim fails only when it fails for every object it names (the expression
holds when one of them fits). A colour on a person ("the white man") may name the skin, not the pixels
the box holds (clothes): it is not judged. Only verdicts from a mask that can be trusted count (the
primitives' rules: a mask with a problem says nothing, a centre-seeded one may support but not
contradict); a multi-coloured reading counts only on a box-initialised mask.

Where the graph leaves a doubt (`Certifier.doubtful_objects`: another object of the target's kind with no
colour annotated may well be white), the photo settles it for colour claims: an object whose pixels
contradict the claim is ruled out, one whose pixels show it is a twin (`colour_twin`). When the photo
rules every doubtful object out, the graph's `unannotated_twin` risk is resolved.

Cost: an object is masked only when a claim needs it (`Photo` keeps each mask and reading once per image),
and the twin search (`core/pixels/twins.py`) runs once per target.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hardneg.core.certify import Certifier, context_objects
from hardneg.core.colors import ColourReading, read_colours
from hardneg.core.executor import GraphIndex
from hardneg.core.pixels.evidence import ColourVerdict, is_colour_claim, judge_colour, multicoloured, same_colour
from hardneg.core.pixels.masks import ObjectMask, object_mask
from hardneg.core.pixels.twins import TwinSearch, find_twin
from hardneg.core.records import PathNode, SceneGraph
from hardneg.core.words.table import Words

POSITIVE_RULES = ("colour_contradicted", "multicoloured", "same_colour_contradicted")  # each drops a positive
RISK_RULES = ("colour_twin", "photo_twin", "photo_lookalike")  # each adds a risk reason
NEGATIVE_RULES = ("colour_still_true",)
RULES = (*POSITIVE_RULES, *RISK_RULES, "twin_resolved", *NEGATIVE_RULES)
COLOUR_CATEGORY = "color"  # the attribute category of a same edge that claims one colour
RULE_TEXT = {  # what each rule checks, as stats.md says it
    "colour_contradicted": "a colour attribute against the object's pixels (dropped when they contradict it)",
    "multicoloured": "a single-colour or same-colour claim on an object of several large colours (dropped)",
    "same_colour_contradicted": "a same-colour edge against both objects' pixels (dropped when they differ)",
    "colour_twin": "objects the graph leaves open for a colour claim: one that shows the colour is a twin (risk)",
    "twin_resolved": "... one whose pixels rule the colour out settles the graph's twin doubt (risk removed)",
    "photo_twin": "another region like the target, mirrored or not, outside every annotated one (strong: risk)",
    "photo_lookalike": "... a weaker match (a small risk: first in the review queue)",
    "colour_still_true": "a colour text negative's new colour against the object's pixels (dropped when shown)",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """What the photo says against a claim: the rule, a sentence, the objects it is about."""

    rule: str
    reason: str
    objects: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "reason": self.reason, "objects": list(self.objects)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(data["rule"], data["reason"], tuple(data.get("objects", ())))


@dataclass(slots=True)
class PositiveCheck:
    """One positive against its photo: what was checked, what fails, the risks it adds, and whether the
    graph's doubt of an unannotated twin is settled."""

    checked: set[str] = field(default_factory=set)  # the rules that had something to judge
    findings: list[Finding] = field(default_factory=list)  # POSITIVE_RULES and RISK_RULES
    resolved: str | None = None  # why the graph's unannotated-twin doubt no longer holds

    @property
    def failed(self) -> Finding | None:
        return next((f for f in self.findings if f.rule in POSITIVE_RULES), None)


class Photo:
    """One photo and its graph: each object's mask and colour reading made once, on demand."""

    def __init__(self, rgb: np.ndarray, graph: SceneGraph, seed: int = 0) -> None:
        self.rgb, self.graph, self.seed = rgb, graph, seed
        self._read: dict[str, tuple[ObjectMask, ColourReading] | None] = {}
        self._twins: dict[tuple[str, tuple[tuple[int, ...], ...]], TwinSearch] = {}

    @property
    def masks_made(self) -> int:
        return len(self._read)

    def reading(self, oid: str) -> tuple[ObjectMask, ColourReading] | None:
        """The object's mask and colour reading; None when its box lies outside the photo."""
        if oid not in self._read:
            o = self.graph.objects[oid]
            try:
                mask = object_mask(self.rgb, o.box, seed=self.seed)
            except ValueError:
                self._read[oid] = None
            else:
                x0, y0, x1, y1 = mask.box
                self._read[oid] = (mask, read_colours(self.rgb[y0:y1, x0:x1], mask.mask))
        return self._read[oid]

    def judge(self, oid: str, word: str) -> tuple[ColourVerdict, ObjectMask] | None:
        got = self.reading(oid)
        if got is None:
            return None
        mask, reading = got
        return judge_colour(reading, word, mask), mask

    def same(self, a: str, b: str) -> ColourVerdict | None:
        """`same_colour` of two objects, counted only on masks that can be trusted: unknown on a mask with a
        problem, and neither contradicted nor multi-coloured on a centre-seeded one."""
        ra, rb = self.reading(a), self.reading(b)
        if ra is None or rb is None or not (ra[0].usable and rb[0].usable):
            return None
        v = same_colour(ra[1], rb[1])
        if (v.verdict == "contradicted" or v.multicoloured) and not (boxed(ra[0]) and boxed(rb[0])):
            return None
        return v

    def twin(self, oid: str, explained: Iterable[tuple[int, int, int, int]]) -> TwinSearch:
        key = (oid, tuple(sorted(tuple(b) for b in explained)))
        if key not in self._twins:
            self._twins[key] = find_twin(self.rgb, self.graph.objects[oid].box, key[1])
        return self._twins[key]


def boxed(mask: ObjectMask) -> bool:
    """A trusted box-initialised mask: the only one a contradiction or a multi-coloured reading counts on."""
    return mask.usable and mask.method == "grabcut"


def _judged(words: Words, node: PathNode) -> list[str]:
    """The node's colour attributes the pixels can judge (none on a person: the word may name the skin)."""
    if words.is_person(node.name):
        return []
    return [a for a in node.attributes if is_colour_claim(a)]


def judge_positive(
    photo: Photo,
    path: PathNode,
    target: str,
    index: GraphIndex,
    certifier: Certifier,
    words: Words,
    *,
    twins: bool = True,
) -> PositiveCheck:
    """What the photo says about a positive's colour claims and its uniqueness (module docstring)."""
    out = PositiveCheck()
    bare = path.without_ids()
    nodes = bare.nodes()
    where = {id(n): k for k, n in enumerate(nodes)}
    context = context_objects(path, index, target)
    for k, node in enumerate(nodes):
        objects = sorted(context[k])
        for word in _judged(words, node):
            _attribute(photo, out, node, word, objects)
        for s in node.same:
            if s.category == COLOUR_CATEGORY:
                _same(photo, out, words, (node, s.object), (objects, sorted(context[where[id(s.object)]])))
    _doubts(photo, out, path, target, certifier, words, context)
    if twins:
        _twin(photo, out, path, target, certifier)
    return out


def _attribute(photo: Photo, out: PositiveCheck, node: PathNode, word: str, objects: list[str]) -> None:
    verdicts = [v for o in objects if (v := photo.judge(o, word)) is not None]
    if not verdicts:
        return
    out.checked.update(("colour_contradicted", "multicoloured"))
    if len(verdicts) == len(objects) and all(v.verdict == "contradicted" for v, _ in verdicts):
        why = f"the photo contradicts '{word} {node.name}' ({objects[0]}): {verdicts[0][0].reason}"
        out.findings.append(Finding("colour_contradicted", why, tuple(objects)))
        return
    single = " and " not in word and not word.startswith("multi")
    many = [v for v, m in verdicts if v.multicoloured and boxed(m)]
    if single and len(verdicts) == len(objects) and len(many) == len(objects):
        colours = ", ".join(many[0].multicoloured)
        why = f"'{word} {node.name}' ({objects[0]}) is several colours in the photo ({colours}): {many[0].reason}"
        out.findings.append(Finding("multicoloured", why, tuple(objects)))


def _same(photo: Photo, out: PositiveCheck, words: Words, sides: tuple[PathNode, PathNode],
          objects: tuple[list[str], list[str]]) -> None:  # fmt: skip
    """A same-colour edge between the objects two nodes name (`sides`, `objects`): each side's colours, then
    the pairs'."""
    out.checked.update(("same_colour_contradicted", "multicoloured"))
    people = [n.name for n in sides if words.is_person(n.name)]
    if people:
        why = f"'{people[0]}' is a person, several colours (skin, hair, clothes), with no one colour to share"
        out.findings.append(Finding("multicoloured", why, tuple(objects[0] + objects[1])))
        return
    for node, objs in zip(sides, objects, strict=True):
        readings = [photo.reading(o) for o in objs]
        many = [multicoloured(r[1]) for r in readings if r is not None and boxed(r[0])]
        if objs and len(many) == len(objs) and all(many):
            seen = readings[0][1].describe()  # type: ignore[index]
            why = f"'{node.name}' ({objs[0]}) is several colours in the photo ({seen}): no one colour to share"
            out.findings.append(Finding("multicoloured", why, tuple(objs)))
            return
    mine, partners = objects
    pairs = [(a, b, v) for a in mine for b in partners if a != b and (v := photo.same(a, b)) is not None]
    if pairs and len(pairs) == len(mine) * len(partners) and all(v.verdict == "contradicted" for _, _, v in pairs):
        a, b, v = pairs[0]
        why = f"'{sides[0].name}' ({a}) has 'the same colour' as {b}, but the photo shows {v.reason}"
        out.findings.append(Finding("same_colour_contradicted", why, (a, b)))


def _shows(photo: Photo, oid: str, node: PathNode, words: Words, context: list[frozenset[str]],
           where: dict[int, int]) -> bool | None:  # fmt: skip
    """Whether the photo shows `oid` carrying the root node's colour claims (True), rules it out (False), or
    cannot tell (None)."""
    verdicts: list[bool | None] = []
    for word in _judged(words, node):
        got = photo.judge(oid, word)
        if got is None or not got[1].usable:
            verdicts.append(None)
            continue
        v, mask = got
        if v.verdict == "contradicted" and boxed(mask):
            return False
        verdicts.append(True if v.verdict == "supported" or v.shows else None)
    for s in node.same:
        if s.category != COLOUR_CATEGORY:
            continue
        pairs = [photo.same(oid, b) for b in sorted(context[where[id(s.object)]]) if b != oid]
        if pairs and all(p is not None and p.verdict == "contradicted" for p in pairs):
            return False
        verdicts.append(True if any(p is not None and p.verdict == "supported" for p in pairs) else None)
    if verdicts and all(verdicts):
        return True
    return None


def _doubts(photo: Photo, out: PositiveCheck, path: PathNode, target: str, certifier: Certifier, words: Words,
            context: list[frozenset[str]]) -> None:  # fmt: skip
    """The graph's doubt of an unannotated twin, settled by the photo where the root claims a colour."""
    bare = path.without_ids()
    if not _judged(words, bare) and not any(s.category == COLOUR_CATEGORY for s in bare.same):
        return
    doubtful = certifier.doubtful_objects(path, photo.graph, target)
    if not doubtful:
        return
    out.checked.update(("colour_twin", "twin_resolved"))
    where = {id(n): k for k, n in enumerate(bare.nodes())}
    ruled_out = 0
    for o in doubtful:
        shown = _shows(photo, o.id, bare, words, context, where)
        if shown is True:
            why = f"{o.name} {o.id}, which nothing annotated rules out, shows the claimed colour in the photo as well"
            out.findings.append(Finding("colour_twin", why, (o.id,)))
            return
        ruled_out += shown is False
    if ruled_out == len(doubtful):
        names = ", ".join(f"{o.name} {o.id}" for o in doubtful)
        out.resolved = f"the photo rules out every other object the graph left open ({names})"


def _twin(photo: Photo, out: PositiveCheck, path: PathNode, target: str, certifier: Certifier) -> None:
    obj = photo.graph.objects[target]
    explained = [o.box for o in certifier.candidates(path.name, photo.graph) if o.id != target]
    search = photo.twin(target, explained)
    if search.best is None:
        return
    out.checked.update(("photo_twin", "photo_lookalike"))
    if search.best.possible:
        rule = "photo_twin" if search.best.strong else "photo_lookalike"
        why = f"{search.best.describe()}, outside every annotated '{obj.name}'"
        out.findings.append(Finding(rule, why, (target,)))


def judge_negative(
    photo: Photo, positive: PathNode, negative: PathNode, target: str, index: GraphIndex, words: Words
) -> tuple[bool, Finding | None]:
    """Whether a text negative puts a colour on an object (checked), and the finding when the photo shows
    that colour there (`colour_still_true`: the negative is still true). Nodes are compared in order; a
    negative of another shape than its positive (a replaced object) claims no new colour."""
    old, new = positive.without_ids().nodes(), negative.without_ids().nodes()
    if len(old) != len(new):
        return False, None
    context = context_objects(positive, index, target)
    checked = False
    for k, (a, b) in enumerate(zip(old, new, strict=True)):
        if a.name != b.name:
            continue
        for word in (w for w in _judged(words, b) if w not in a.attributes):
            for oid in sorted(context[k]):
                got = photo.judge(oid, word)
                if got is None:
                    continue
                checked = True
                v, mask = got
                if v.verdict == "supported" or (v.shows and mask.usable):
                    why = f"the photo shows {word} on the {b.name} {oid}: {v.reason}"
                    return True, Finding("colour_still_true", why, (oid,))
    return checked, None
