"""Clothing and the people who wear it: a shirt, shorts or a helmet is worn one to a person, and graphs box
clothes for some of the people they hold only (`generators/paths/annotation_rules.py` reads these rules).

- `other_wholes` (a risk): the graph annotates more people than objects of a piece of clothing's name, or no
  one while other clothes are: how many wear one it does not say;
- `OtherWearers` (rule `other_wearers`): each other annotated person with none of the name put on them gets
  a twin of the target, and a path that picks a twin as well is not unique; where no one is annotated and the
  clothes lie apart (`apart`), several people wear them and no path can say whose the target is.
"""

from __future__ import annotations

from dataclasses import replace

from hardneg.core.certify import NAMED
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.geometry import direction, iou
from hardneg.core.gqa.annotations import SAME_OBJECT_IOU, inside
from hardneg.core.records import PathNode, SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words

CLOTHING = "clothing"  # the kind of name these rules judge: worn one to a person
SLOTS = ("headwear", "eyewear", "footwear")  # kinds of clothing worn one at a time


class Wardrobe:
    """One graph's people and clothes, worked out once for all its targets: the rule asks per target and the
    risk per positive, and a graph of hundreds of people would otherwise cost their square each time."""

    def __init__(self, graph: SceneGraph, words: Words) -> None:
        self.graph, self.words = graph, words
        self.clothes = [o for o in graph.objects.values() if words.is_a(o.name, CLOTHING)]
        self._people: dict[str, list[SceneObject]] = {}
        self._worn: dict[str, frozenset[str]] = {}
        self._groups: dict[str, int] | None = None
        self._one: dict[tuple[str, str], bool] = {}

    def people(self, name: str) -> list[SceneObject]:
        """The annotated people who wear a `name`, each once (two boxes of one person under two names, "man"
        and "person", count once)."""
        got = self._people.get(name)
        if got is None:
            got = self._people[name] = []
            for o in self.graph.objects.values():
                if not self.words.is_person(o.name) or self.words.direct_part_of(name, o.name) != "worn":
                    continue
                if not any(iou(o.box, p.box) >= SAME_OBJECT_IOU for p in got):
                    got.append(o)
        return got

    def is_one(self, name: str, target: str) -> bool:
        """Whether a piece called `name` is certainly one called `target` (a polo shirt is a shirt): the rule
        `same_kind` judges such a piece, and this rule leaves its wearer out. A shirt may or may not be a
        t-shirt, a coat a jacket: their wearers still get the target's twin."""
        if (key := (name, target)) not in self._one:
            self._one[key] = name == target or self.words.name_relation(name, target) in NAMED
        return self._one[key]

    def worn(self, person: SceneObject) -> frozenset[str]:
        """The clothes the graph puts on `person` (`_wears`)."""
        got = self._worn.get(person.id)
        if got is None:
            got = self._worn[person.id] = frozenset(o.id for o in self.clothes if _wears(person, o))
        return got

    def group(self, oid: str) -> int:
        """Which group of clothes lying on one person `oid` is in (`apart`)."""
        if self._groups is None:
            self._groups = {}
            for seed in self.clothes:
                if seed.id in self._groups:
                    continue
                k, todo = len(self._groups), [seed]
                self._groups[seed.id] = k
                while todo:
                    a = todo.pop()
                    for b in self.clothes:
                        if b.id not in self._groups and _near(a, b):
                            self._groups[b.id] = k
                            todo.append(b)
        return self._groups[oid]


_LAST: list[Wardrobe] = []


def wardrobe(graph: SceneGraph, words: Words) -> Wardrobe:
    """The wardrobe of `graph`, kept for the graph last asked about (an image's targets and positives are
    judged one after another)."""
    if not _LAST or _LAST[0].graph is not graph or _LAST[0].words is not words:
        _LAST[:] = [Wardrobe(graph, words)]
    return _LAST[0]


def _headcount(people: list[SceneObject], words: Words) -> int:
    """How many people `people` are at least: a plural ("people", "men") counts as two."""
    return sum(2 if words.is_plural(o.name) else 1 for o in people)


def _wears(person: SceneObject, item: SceneObject) -> bool:
    """Whether the graph puts `item` on `person`: its box inside theirs, or an edge between them that is not a
    side the boxes decide ("wearing", "in", "on"; not "to the left of")."""
    edges = [r for r in person.relations if r.object == item.id] + [r for r in item.relations if r.object == person.id]
    return inside(item, person) or any(direction(r.name) is None for r in edges)


def bare_wearers(target: SceneObject, graph: SceneGraph, words: Words) -> list[SceneObject]:
    """The annotated people who may wear a `target.name` the graph leaves out, where it annotates more people
    than objects of the name (a plural, "people", counts as two): each but the target's wearer on whom no
    other object of the name, of a name certainly of its kind (a polo shirt for a shirt: `Wardrobe.is_one`), nor
    of a kind worn one at a time with it (a hat for a helmet), is put (`_wears`)."""
    w = wardrobe(graph, words)
    people = w.people(target.name)
    same = [o for o in w.clothes if o.name == target.name]
    if (n := _headcount(people, words)) < 2 or n <= len(same):
        return []
    slots = [k for k in SLOTS if words.is_a(target.name, k)]  # a person in a hat wears no helmet
    worn = {o.id for o in w.clothes if w.is_one(o.name, target.name) or any(words.is_a(o.name, k) for k in slots)}
    return [p for p in people if not w.worn(p) & worn]


def other_wholes(
    target: SceneObject, graph: SceneGraph, words: Words, checked: PathNode | None = None, min_area: float = 0.0
) -> str | None:
    """Why a piece of clothing may be one of several (risk `other_wholes`), or None. People wear shirts,
    shorts and helmets one each: where the graph annotates more people than objects of the name, the
    others' go unannotated, and "the shorts" may be anyone's. Carried
    things (a bag, an umbrella) and parts of things (a bike's seat) are left out: not every person carries
    one, and the crowd rules judge parts that come several to a whole. `checked`: the path, where rule
    `other_wearers` has already put a twin of the target on each annotated person (none smaller than
    `min_area` of the image) and found none would fit it; then only a relation the boxes cannot decide (near,
    holding) leaves the doubt."""
    if not words.is_a(target.name, CLOTHING):
        return None
    people = wardrobe(graph, words).people(target.name)
    n = _headcount(people, words)
    named = sum(1 for o in graph.objects.values() if o.name == target.name)
    if n == 0:  # no one annotated, yet other clothes are: their wearers went unannotated, and how many?
        worn = sorted({o.name for o in wardrobe(graph, words).clothes if o.name != target.name})
        if worn:
            return (
                f"'{target.name}' is worn, and so are {', '.join(worn)}, yet the graph annotates no one: how many "
                f"wear a '{target.name}' it does not say"
            )
    if n < 2 or n <= named:
        return None
    if checked is not None and (
        not twins(target, graph, words, min_area) or all(direction(e.name) is not None for e in checked.relations)
    ):
        return None
    kinds = ", ".join(sorted({o.name for o in people}))
    return (
        f"'{target.name}' is worn one to a person: the graph annotates {n} people ({kinds}) and {named} "
        f"'{target.name}', so the others' may be there unannotated"
    )


class OtherWearers:
    """Rule `other_wearers` for one target worn one to a person (a shirt, shorts, a helmet): each annotated
    person who wears none of its name in the graph (`bare_wearers`) may wear one unannotated. A second index
    of the graph gives each of them a twin of the target (its name and attributes), placed on them as the
    target sits on its wearer (on the whole box where its wearer is not annotated), so the executor tells
    whether the path picks theirs as well. What the boxes decide (left, right, above, below) is judged on the
    twin's box; a relation they cannot decide (near, holding) is not assumed of it, and leaves the
    positive its `other_wholes` risk instead.

    Where the graph annotates no one, its clothes show how many wear them: those that lie apart (`apart`)
    are on two people at least, and no path can say which of their unannotated wearers wear the target's
    name (a ball game's helmet and uniform, and a catcher's glove far from them)."""

    def __init__(
        self, target: SceneObject, graph: SceneGraph, words: Words, table: AttributeTable, min_area: float = 0.0
    ) -> None:
        """`min_area`: the share of the image under which a twin is too small to read (a cap on a child far
        off, a few pixels), as a target would be (`targets.min_area_frac`): no one counts it."""
        self.target = target
        self.wearers: dict[str, SceneObject] = {}  # twin id -> the person who may wear it
        self.index: GraphIndex | None = None
        self.unknown: str | None = None  # why no path can tell the target's wearer from the others
        if not words.is_a(target.name, CLOTHING):
            return
        people = wardrobe(graph, words).people(target.name)
        if not people and (other := apart(target, graph, words)) is not None:
            self.unknown = (
                f"'{target.name}' is worn, the graph annotates no one, and its clothes lie apart ({other.name} "
                f"{other.id} far from the {target.name}): several wear them, and which wear a '{target.name}' it "
                "does not say"
            )
        made = twins(target, graph, words, min_area)
        self.wearers = {t.id: p for t, p in made}
        if made:
            self.index = GraphIndex(replace(graph, objects={**graph.objects, **{t.id: t for t, _ in made}}), table)

    def refusal(self, path: PathNode) -> str | None:
        """Why another person's twin of the target fits `path` as well, or None."""
        if self.index is None:
            return self.unknown
        fits = sorted(set(execute(path.without_ids(), self.index)) & self.wearers.keys())
        if not fits:
            return None
        p = self.wearers[fits[0]]
        return (
            f"'{self.target.name}' is worn one to a person: {p.name} {p.id} has none annotated, and theirs would "
            "fit the path as well"
        )


def twins(
    target: SceneObject, graph: SceneGraph, words: Words, min_area: float = 0.0
) -> list[tuple[SceneObject, SceneObject]]:
    """(twin, the person who may wear it) for each of the `bare_wearers`: the target's name and attributes,
    placed on them as the target sits on its wearer; none smaller than `min_area` of the image."""
    people = wardrobe(graph, words).people(target.name)
    wearer = next((p for p in people if _wears(p, target)), None)
    out = []
    for p in bare_wearers(target, graph, words):
        twin = SceneObject(f"{target.id}~{p.id}", target.name, *_placed(target, wearer, p), target.attributes)
        if twin.area >= min_area * graph.width * graph.height:
            out.append((twin, p))
    return out


def apart(target: SceneObject, graph: SceneGraph, words: Words) -> SceneObject | None:
    """A piece of clothing that cannot be on the one who wears the target, or None. Two pieces lie on one
    person when the gap between their boxes is at most half the longer side of the larger box (a uniform and
    its helmet, a shirt and its tie); the graph's clothes are grouped so, and a piece outside the target's
    group is another's, unless both groups hold only things worn in pairs (two gloves, a skier's hands
    spread, may be one person's)."""
    w = wardrobe(graph, words)
    mine = w.group(target.id)
    paired = {o.id for o in w.clothes if words.crowd_group(o.name) == "paired_parts"}
    group = {o.id for o in w.clothes if w.group(o.id) == mine}
    outside = [o for o in w.clothes if o.id not in group]
    if not outside or (group <= paired and all(o.id in paired for o in outside)):
        return None
    return outside[0]


def _near(a: SceneObject, b: SceneObject) -> bool:
    """Whether the gap between two boxes is at most half the longer side of the larger one."""
    big = a if a.area >= b.area else b
    gap = max(a.x - (b.x + b.w), b.x - (a.x + a.w), a.y - (b.y + b.h), b.y - (a.y + a.h), 0)
    return gap <= max(big.w, big.h) / 2


def _placed(target: SceneObject, wearer: SceneObject | None, person: SceneObject) -> tuple[int, int, int, int]:
    """The target's box moved from its wearer onto `person` (scaled with the person's box); `person`'s box
    where the wearer is not annotated, or holds no part of the box."""
    if wearer is None or not inside(target, wearer):
        return person.box
    fx, fy = (target.x - wearer.x) / wearer.w, (target.y - wearer.y) / wearer.h
    fw, fh = target.w / wearer.w, target.h / wearer.h
    return (
        round(person.x + fx * person.w),
        round(person.y + fy * person.h),
        max(1, round(fw * person.w)),
        max(1, round(fh * person.h)),
    )
