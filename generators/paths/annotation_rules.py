"""Positives a person can use: what the graph cannot see, guessed from the corpus (`core/gqa/annotations.py`).

Rules (each a `paths.rules` entry, switchable to measure what it removes):

- `printed_targets`: a target whose box lies inside a text surface of another name (a sign, a banner, a
  label) is printed there ("the hotel" that is the word HOTEL on a sign), and so is a name the corpus
  mostly boxes inside one;
- `many_targets`: a name the corpus usually sees several times per image (meat on a plate, fries, people
  in a crowd) cannot pick out one object by itself, nor with an attribute most of its instances carry
  ("the brown meat"): its path needs a relation, or an attribute that is rare for the name;
- `many_held`: a name the corpus sees several at a time in at least `paths.many_held_share` of its images
  is not told apart by what it lies on or in when that has room for several ("the paper on the cork-board",
  "the plate on the table": the others lie there too, mostly unannotated);
- `several_wholes`: a part of a name that comes several at a time ("the tree trunk" of one of the trees,
  "the seat" of one of the "chairs") is not unique, unless the path names its whole;
- `same_kind`: a name covers more than itself. "The food" is not unique where a cake is annotated, nor
  "the man" beside "men": another object whose name is a kind of the target's, a plural or a synonym of
  it, and that fits the path as well, makes the path not unique (`SameKind`). An object that is the
  target itself or a part of it (its box inside the target's, or the target's inside its) is no twin;
- `self_related`: a path that relates an object to itself, annotated twice under two names that can name
  one object and never related to itself in the graph ("the pants with the same color as the jeans", one
  pair boxed as both);
- `other_wearers`: a piece of clothing is worn one to a person, and graphs box it for some of the people
  they hold. Each annotated person with none of its name boxed on them gets a twin of the target, placed on
  them as the target sits on its wearer; a path that picks a twin as well ("the shorts to the left of the
  racket" where another player, shorts unboxed, stands left of it too) is not unique; so is any path of it
  where no one is annotated and the clothes lie apart, on several people (`generators/paths/wearers.py`).

Then every positive gets a `risk` (`risk_reasons`), what the graph cannot rule out, for the review app to
show first and `hardneg split` to drop above `risk.max`: a name that often comes in many, a box inside a
picture (a painting, a screen) that may show the object rather than hold it, a box far larger than its
name's, a box that tiles one rectangle with another of its name (one object in two halves, or two alike
side by side: the boxes cannot tell), a box unlike its name's boxes in size, shape or place
(`core/gqa/boxes.py`: a sliver of a counter called "cabinet"), and a uniqueness that rests on a missing
annotation (another object of the name is not annotated otherwise: a plate with no colour may well be
white), and a piece of clothing of which the graph annotates fewer than the people who wear it ("the
shorts" where three people are annotated and one pair of shorts: `other_wholes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from hardneg.core.executor import GraphIndex, execute
from hardneg.core.geometry import iou
from hardneg.core.gqa.annotations import MANY, OVERSIZED, PRINTED, SAME_OBJECT_IOU, AnnotationStats, inside, split_pair
from hardneg.core.gqa.boxes import BoxShapes
from hardneg.core.gqa.plausibility import Counts
from hardneg.core.records import PathNode, RiskReason, SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.generators.paths.wearers import other_wholes

RARE = 0.25  # an attribute held by at most this share of a name's boxes tells one of them apart
SOMETIMES_MANY = 0.3  # a name seen twice or more in this share of its images is a risk
HOLDS = 4.0  # a box this many times the target's has room for several of it (a table for plates)
SEVERAL = frozenset({"plural", "many_instances"})  # crowd groups (`Words.crowd_group`) that name several things

# risk weights: how likely a person rejects a positive for each reason (combined as independent)
RISK_WEIGHTS = {
    "many": 0.2,
    "in_picture": 0.4,
    "oversized": 0.2,
    "split": 0.3,
    "box_misfit": 0.5,
    "unannotated_twin": 0.4,
    "other_wholes": 0.4,
    "own_kind": 0.3,
    "no_detector": 0.1,
    # read in the photo (`core/pixels/`, the pixels stage): another region that looks like the target, strongly
    # or somewhat; another object the path's colour claim does not rule out and whose pixels show that colour
    "photo_twin": 0.5,
    "photo_lookalike": 0.2,
    "colour_twin": 0.6,
}
# the reasons that say another object may fit, and those that say the box may not be what its name says:
# a positive of a level in `risk.drop.levels` whose twin or box risk reaches `risk.drop` is dropped
TWIN_KINDS = frozenset(
    {"many", "split", "unannotated_twin", "other_wholes", "own_kind", "photo_twin", "photo_lookalike", "colour_twin"}
)
BOX_KINDS = frozenset({"in_picture", "oversized", "box_misfit"})
SAME_KIND = frozenset({"plural", "synonym", "hyponym"})  # Words.name_relation(other, target): a kind of the target


@dataclass(slots=True, frozen=True)
class Evidence:
    """What the corpus says about annotations, for one run: the annotation statistics and the attribute
    counts (how common an attribute is for a name)."""

    notes: AnnotationStats
    counts: Counts
    boxes: BoxShapes | None = None  # the shipped box shapes combined with the run's own (`core/gqa/boxes.py`)

    def discriminating(self, attribute: str, name: str) -> bool:
        n = self.counts.boxes(name)
        return n > 0 and self.counts.attribute_name[(attribute, name)] / n <= RARE


def printed_refusal(obj: SceneObject, graph: SceneGraph, words: Words, ev: Evidence | None) -> str | None:
    """Why `obj` is print on a surface rather than an object (rule `printed_targets`), or None."""
    if words.surface_kind(obj.name) is not None:
        return None  # a sign on a sign is a sign
    for other in graph.objects.values():
        if other.name != obj.name and words.surface_kind(other.name) == "text" and inside(obj, other):
            return f"its box lies inside the {other.name} {other.id}: printed there, not an object"
    if ev is not None and (share := ev.notes.printed_share(obj.name)) is not None and share >= PRINTED:
        return f"the corpus boxes {share:.0%} of '{obj.name}' inside signs and labels: usually printed"
    return None


def many_refusal(path: PathNode, ev: Evidence | None) -> str | None:
    """Why `path` cannot pick out one object of a name that comes in many (rule `many_targets`), or None."""
    if ev is None or path.relations or (share := ev.notes.many(path.name)) is None or share < MANY:
        return None
    if any(ev.discriminating(a, path.name) for a in path.attributes):
        return None
    return (
        f"'{path.name}' comes in many ({share:.0%} of the images holding it hold several): it needs a relation "
        "or a rare attribute to pick out one"
    )


def held_many_refusal(
    path: PathNode, target: SceneObject, graph: SceneGraph, words: Words, ev: Evidence | None, share: float
) -> str | None:
    """Why `path` cannot pick out one object of a name seen several at a time in at least `share` of the
    corpus's images holding it (rule `many_held`), or None: its relations only put it on or in something
    with room for several (a box `HOLDS` times its own: "the paper on the cork-board", "the plate on the
    table"), where its unannotated kin lie too; an attribute rare for the name still tells it apart."""
    if ev is None or not path.relations or path.same or (seen := ev.notes.many(path.name)) is None or seen < share:
        return None
    if any(ev.discriminating(a, path.name) for a in path.attributes):
        return None
    holders = []
    for e in path.relations:
        holder = graph.objects.get(e.object.id or "")
        if holder is None or not words.is_support(e.name) or holder.area < HOLDS * max(target.area, 1):
            return None
        holders.append(f"{e.name} the {e.object.name}")
    return (
        f"'{path.name}' is several at a time in {seen:.0%} of the images holding it, and what tells it apart ("
        f"{' and '.join(holders)}) has room for several: others may lie there unannotated"
    )


def several_wholes_refusal(path: PathNode, target: SceneObject, graph: SceneGraph, words: Words) -> str | None:
    """Why a part ("the tree trunk", "the handle") cannot be unique (rule `several_wholes`), or None: the
    image holds several things it may be a part of (two trees, or "trees"), each with its own part, mostly
    unannotated; unless the path names the one it belongs to."""
    if not words.is_part_name(path.name):
        return None
    # the wholes it may be part of are those whose box holds it (a car's trunk is no tree's); a name of many
    # (trees, bushes, "chairs"; not stuff: a road has one crosswalk) has a part of this name on each member
    holding = [o for o in graph.objects.values() if o.id != target.id and words.is_part_of(path.name, o.name)
               and inside(target, o)]  # fmt: skip
    named = {e.object.id for n in path.nodes() for e in n.relations}
    many = sorted({o.name for o in holding if words.crowd_group(o.name) in SEVERAL})
    if not many or any(o.id in named for o in holding):
        return None
    return f"'{path.name}' is a part of {', '.join(many)}, which come several at a time: their others go unannotated"


def self_related_refusal(path: PathNode, graph: SceneGraph, words: Words) -> str | None:
    """Why `path` relates an object to itself under another name (rule `self_related`), or None: a node and
    one it relates to whose boxes overlap by `SAME_OBJECT_IOU` or more, under two names of one category that
    can name one object (`Words.names_contradict`: a kind, a synonym, an overlap such as table and desk),
    neither a part of the other and with no relation between them in the graph (the icing on top of a cake
    is a second thing: its annotator related them). One pair of jeans boxed again as "pants" makes "the pants with the
    same color as the jeans": true, and a riddle no one asks. Names that exclude each other (a fork on a
    plate, a man hugging a woman) are two things however close; one name twice is hygiene's to merge."""
    for n in path.nodes():
        if (a := graph.objects.get(n.id or "")) is None:
            continue
        for other in (*(e.object for e in n.relations), *(s.object for s in n.same)):
            b = graph.objects.get(other.id or "")
            if b is None or b.name == a.name or (overlap := iou(a.box, b.box)) < SAME_OBJECT_IOU:
                continue
            if (
                (kind := words.name_category(a.name)) is not None
                and words.name_category(b.name) == kind
                and not words.names_contradict(a.name, b.name)[0]
                and not (words.is_part_of(a.name, b.name) or words.is_part_of(b.name, a.name))
                and not any(r.object == b.id for r in a.relations)
                and not any(r.object == a.id for r in b.relations)
            ):
                return f"'{a.name}' {a.id} and '{b.name}' {b.id} overlap by {overlap:.0%}: one object under two names"
    return None


def risk_reasons(
    path: PathNode,
    target: SceneObject,
    graph: SceneGraph,
    words: Words,
    ev: Evidence | None,
    twin: str | None,
    wearers: float | None = None,
) -> list[RiskReason]:
    """What the graph cannot rule out about a positive, each with its weight (see the module docstring).
    `twin`: why another object of the name may fit (`Certifier.doubtful`), or None; `wearers`: rule
    `other_wearers` judged the path against the other people's twins of the target (`OtherWearers`), none
    smaller than this share of the image; None: the rule is off."""
    out: list[tuple[str, str]] = []  # (kind, why)
    if ev is not None and (share := ev.notes.many(target.name)) is not None and share >= SOMETIMES_MANY:
        out.append(("many", f"'{target.name}' is several in {share:.0%} of the images holding it"))
    for other in graph.objects.values():
        if other.id != target.id and words.surface_kind(other.name) == "pictures" and inside(target, other):
            out.append(("in_picture", f"its box lies inside the {other.name} {other.id}: it may be shown there"))
            break
    if ev is not None and (usual := ev.notes.usual_area(target.name)) is not None:
        area = target.area / (graph.width * graph.height)
        if area > OVERSIZED * usual:
            out.append(("oversized", f"its box is {area / usual:.0f}x the usual size of a '{target.name}'"))
    if ev is not None and ev.boxes is not None:
        misfit = ev.boxes.misfit(target.name, target.box, graph.width, graph.height, counted=True)
        if misfit is not None:
            out.append(("box_misfit", misfit.reason))
    for other in graph.objects.values():
        if other.id != target.id and other.name == target.name and split_pair(target, other):
            why = f"its box and {other.name} {other.id} tile one rectangle: it may be half of one object"
            out.append(("split", why))
            break
    if twin is not None:
        out.append(("unannotated_twin", twin))
    checked = None if wearers is None else path
    if (others := other_wholes(target, graph, words, checked, wearers or 0.0)) is not None:
        out.append(("other_wholes", others))
    own = [e.object.name for e in path.relations if words.same_kind(e.object.name, target.name)]
    if own:  # "the door to the left of a door" picks one of two: a third nobody boxed and it picks none
        why = f"it is told apart by another '{own[0]}': it holds only if the graph boxed every one there is"
        out.append(("own_kind", why))
    return [RiskReason(kind, why, RISK_WEIGHTS[kind]) for kind, why in out]


class SameKind:
    """Rule `same_kind` for one target: the other objects of its kind under another name (a kind of the
    target's name, a plural or a synonym of it, not the target itself or a part of it), and a second index of
    the graph in which they carry the target's name, so the executor tells whether a path fits them too."""

    def __init__(self, target: SceneObject, graph: SceneGraph, words: Words, table: AttributeTable) -> None:
        self.target = target
        self.kin: dict[str, str] = {}  # object id -> how its name relates to the target's
        for o in graph.objects.values():
            if o.id == target.id or o.name == target.name:
                continue
            rel = words.name_relation(o.name, target.name)
            if rel in SAME_KIND and not _one_object(o, target, rel):
                self.kin[o.id] = rel
        self.index: GraphIndex | None = None
        if self.kin:
            renamed = {oid: replace(o, name=target.name) if oid in self.kin else o for oid, o in graph.objects.items()}
            self.index = GraphIndex(replace(graph, objects=renamed), table)

    def refusal(self, path: PathNode, graph: SceneGraph) -> str | None:
        """Why `path` does not pick out the target alone once its kin carry its name, or None."""
        if self.index is None:
            return None
        fits = sorted(set(execute(path.without_ids(), self.index)) & self.kin.keys())
        if not fits:
            return None
        o = graph.objects[fits[0]]
        how = {"plural": "a plural of", "synonym": "another name for", "hyponym": "a kind of"}[self.kin[o.id]]
        return f"'{o.name}' {o.id} is {how} '{self.target.name}' and fits the path as well"


def _one_object(o: SceneObject, target: SceneObject, rel: str) -> bool:
    """Whether `o` is the target itself, or a part or a whole of it (its box in the target's or the
    target's in its); a group under a plural name is one object only when its box is the target's."""
    if rel == "plural":
        return iou(o.box, target.box) >= 0.7
    return iou(o.box, target.box) >= SAME_OBJECT_IOU or inside(o, target) or inside(target, o)


def combine(weights: Iterable[float]) -> float:
    """The risk of independent reasons: 1 - prod(1 - w)."""
    keep = 1.0
    for w in weights:
        keep *= 1.0 - w
    return round(1.0 - keep, 4)


def risk_band(risk: float) -> str:
    """A positive's risk, in the bands stats.md counts."""
    return "none" if risk <= 0 else "low" if risk < 0.3 else "medium" if risk < 0.5 else "high"
