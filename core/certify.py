"""Certificates for the export shapes: "this expression is false in that image", and "these objects are
what a phrase names in context".

The executor (`core/executor.py`) is the single source of truth for "matches nothing", and every
certificate starts with it. A graph from another image was not annotated to answer our question, so an
export asks more than the executor: an object stays a possible match unless the graph *contradicts*
the path there. `Certifier.nothing` certifies that a path matches nothing in a graph only when, for every
object that could carry the node's name (the same name, a plural, a synonym, a hyponym, a broader name
that may well be it: a "person" may be the man, an "animal" the dog; or a name one object can carry at
once: `Words.name_relation`), the graph says no:

- an attribute of the node is contradicted by one the object has (`Words.attributes_contradict`): an
  object without a colour annotated is *not* "not white", nor is one annotated "colorful" as well as
  "gold" not blue, nor white striped pants not black (`Words.several`: the colours named of a
  many-coloured or patterned object are some of its colours);
- a relation's partners are all excluded: none could match the child, or for each the boxes put it in
  the opposite direction (`core.geometry.contradicted`) or a stored relation contradicts it
  (`Words.relations_contradict`); a missing edge proves nothing;
- a `same` edge's partners all carry attributes of the category that exclude the object's;
- a node with no possible object at all is certified absent only when its name can carry a claim of
  absence: never a crowd or background name (`Words.is_crowd`: trees, grass), a mass noun, a word that
  names no object, or a part whose whole is in the graph (a wheel is there whenever a car is), or a part
  of a whole another part of which is in the graph (a head is there whenever a thumb is; a faucet in a
  bathroom whose mirror is annotated).

Given the corpus's notes on annotation (`core/gqa/annotations.py`, the run's counts plus the prior of real
graphs), a certifier is stricter: a name the corpus says comes in many is a crowd name, and a name the
corpus usually annotates beside one of the graph's names is likely there unannotated ("the plate" in an
image with a fork), so neither carries a claim of absence.

An absent name is absent even where objects that may be it are there: "a watch" with only a street clock
annotated (a clock may be called a watch) still needs the watch's absence to prove something, whatever the
clock's colour says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hardneg.core.executor import GraphIndex, execute
from hardneg.core.geometry import contradicted
from hardneg.core.gqa.annotations import SMALL, AnnotationStats
from hardneg.core.records import PathEdge, PathNode, SceneGraph, SceneObject
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words

# v2: a broader name (person, animal) may be the node's object; v3: parts of one whole; v4: names the corpus
# says come in many or usually beside the image's names (with notes); v5: small things often beside the image's names;
# v6: small is under 3% of the image (a fork), not 1%; v7: an absent name's absence is judged even where objects
# that may be it are there (a clock for "watch"); an attribute is read on the object's name (a glass door's frame);
# v8: a many-coloured ("colorful") or patterned ("striped") object is not ruled out by its other colours
VERSION = "certify@v8"
COULD_BE = frozenset({"same", "plural", "synonym", "hyponym", "hypernym", "overlap"})  # name_relation(object, node)
NAMED = frozenset({"same", "plural", "synonym", "hyponym"})  # ... certainly of the node's kind


class Certifier:
    """Decides "certainly matches nothing" for paths on graphs; the word answers are cached."""

    def __init__(
        self, words: Words, table: AttributeTable, notes: AnnotationStats | None = None, small: float = SMALL
    ) -> None:
        self.words, self.table, self.notes, self.small = words, table, notes, small
        self._could: dict[tuple[str, str], bool] = {}
        self._named: dict[tuple[str, str], bool] = {}  # (object name, node name) -> certainly of the node's kind
        self._accepted: dict[str, tuple[set[str], set[str]]] = {}  # node name -> (names it accepts, names asked)
        self._absent: dict[str, str | None] = {}
        self._parts: dict[str, tuple[set[str], set[str]]] = {}  # part name -> (wholes of it, names asked)
        self._kins: dict[str, tuple[set[str], set[str]]] = {}  # part name -> (names sharing a whole, names asked)
        self._beside: dict[str, tuple[set[str], set[str]]] = {}  # name -> (names it is likely beside, names asked)

    def could_be(self, name: str, node_name: str) -> bool:
        """Whether an object annotated `name` could be what a node called `node_name` names."""
        if name == node_name:
            return True
        key = (name, node_name)
        if key not in self._could:
            self._could[key] = self.words.name_relation(name, node_name) in COULD_BE
        return self._could[key]

    def _accepts(self, node_name: str, name: str) -> bool:
        return self.could_be(name, node_name)

    def absence_refusal(self, name: str, graph: SceneGraph | None = None) -> str | None:
        """Why the absence of `name` from `graph` proves nothing, or None when it does (without a graph: the
        reasons that hold in any graph)."""
        if graph is None:
            return self._refusal(name)
        return self._refusal_among(name, dict.fromkeys(o.name for o in graph.objects.values()))

    def _refusal(self, name: str) -> str | None:
        if name not in self._absent:
            w = self.words
            why = w.crowd_reason(name)
            if why is None and w.is_mass(name):
                why = "a mass noun: unannotated stuff"
            if why is None and w.not_object_reason(name) is not None:
                why = f"not an object name ({w.not_object_reason(name)})"
            if why is None and self.notes is not None:
                why = self.notes.comes_in_many(name)
            self._absent[name] = why
        return self._absent[name]

    def _refusal_among(self, name: str, names: Mapping[str, Any]) -> str | None:
        """`absence_refusal` in a graph whose object names are the keys of `names`, in the graph's order."""
        why = self._refusal(name)
        if why is None and (notes := self.notes) is not None:  # `beside` asks the names one by one: each pair once
            other = self._first(self._beside, name, names, lambda a, b: notes.beside(a, (b,), self.small) is not None)
            if other is not None:
                return f"likely there unannotated: {notes.beside(name, (other,), self.small)}"
        if why is not None or not self.words.is_part_name(name):
            return why
        whole = self._first(self._parts, name, names, lambda a, b: self.words.name_relation(a, b) == "part")
        if whole is not None:
            return f"a part of '{whole}', which is there: parts go unannotated"
        kin = self._first(self._kins, name, names, self.words.shares_whole)
        return None if kin is None else f"a part of what '{kin}' is part of, which is there: parts go unannotated"

    @staticmethod
    def _first(memo: dict[str, tuple[set[str], set[str]]], name: str, names: Mapping[str, Any],
               holds: Callable[[str, str], bool]) -> str | None:  # fmt: skip
        """The first of `names` for which `holds(name, it)` (`_holding`)."""
        yes = Certifier._holding(memo, name, names, holds)
        return None if yes.isdisjoint(names) else next(n for n in names if n in yes)

    @staticmethod
    def _holding(memo: dict[str, tuple[set[str], set[str]]], name: str, names: Mapping[str, Any],
                 holds: Callable[[str, str], bool]) -> set[str]:  # fmt: skip
        """The names `n` asked so far, `names` among them, for which `holds(name, n)`: each pair is asked once
        in the certifier's life (`memo`: per `name`, the names that hold and the names asked), so a graph
        costs a set intersection, not an ask per name (an export asks thousands of graphs the same names)."""
        got = memo.get(name)
        if got is None:
            got = memo[name] = (set(), set())
        yes, asked = got
        if not names.keys() <= asked:  # a walk over the few names in C; nothing is built unless one is new
            new = names.keys() - asked
            yes.update(n for n in new if holds(name, n))
            asked |= new
        return yes

    def _absence(self, name: str, graph: SceneGraph, memo: _Memo) -> str | None:
        """`absence_refusal` on a graph, once per graph and name when the question carries its index."""
        index = memo.index
        if index is None or index.graph is not graph:
            return self.absence_refusal(name, graph)
        key = ("absence", name)
        if key not in index.memo:
            index.memo[key] = self._refusal_among(name, index.by_name)
        return index.memo[key]

    def candidates(self, name: str, graph: SceneGraph, index: GraphIndex | None = None) -> list[SceneObject]:
        """The objects of `graph` that could be what a node called `name` names, in the graph's order. With
        the graph's `index`, found once per graph and name (an export asks one graph about the same names
        for every candidate it certifies there); the list is shared: do not change it."""
        if index is None or index.graph is not graph:
            objects = graph.objects.values()
            could = self._holding(self._accepted, name, dict.fromkeys(o.name for o in objects), self._accepts)
            return [o for o in objects if o.name in could]
        key = ("candidates", name)
        found = index.memo.get(key)
        if found is None:
            could = self._holding(self._accepted, name, index.by_name, self._accepts).intersection(index.by_name)
            found = index.memo[key] = [o for o in graph.objects.values() if o.name in could] if could else []
        return found

    def nothing(self, path: PathNode, graph: SceneGraph, index: GraphIndex | None = None) -> str | None:
        """None when `path` certainly matches nothing in `graph`; else why it might match something."""
        index = index or GraphIndex(graph, self.table)
        hit = execute(path.without_ids(), index)
        if hit:
            return f"the executor matches {', '.join(sorted(hit))}"
        return self.uncontradicted(path, graph, index)

    def uncontradicted(self, path: PathNode, graph: SceneGraph, index: GraphIndex | None = None) -> str | None:
        """`nothing` for a path the executor already matched to nothing: why the graph still does not make
        it false for some object that could carry it, or None."""
        memo = _Memo(index)
        cands = self.candidates(path.name, graph, index)
        if not self._any_named(path.name, cands) and (why := self._absence(path.name, graph, memo)) is not None:
            return f"'{path.name}' is absent, but its absence proves nothing: {why}"
        for o in cands:
            if not self._excluded(path, o, graph, memo):
                return f"object {o.id} ('{o.name}') may match: the graph does not contradict the path there"
        return None

    def doubtful(self, path: PathNode, graph: SceneGraph, target: str, index: GraphIndex | None = None) -> str | None:
        """For a positive: why an object other than `target` may carry `path` as well, its description not
        contradicted by the graph (a plate with no colour annotated may well be the white plate), or None.
        With the graph's `index`, what it asks of the graph is worked out once per graph and name."""
        memo = _Memo(index)
        bare = path.without_ids()
        for o in self.candidates(bare.name, graph, index):
            if o.id != target and not self._excluded(bare, o, graph, memo):
                return f"{o.name} {o.id} may fit as well: nothing annotated on it rules the expression out"
        return None

    def doubtful_objects(self, path: PathNode, graph: SceneGraph, target: str) -> list[SceneObject]:
        """Every object `doubtful` could name: each other object that may carry `path` as well."""
        memo = _Memo()
        bare = path.without_ids()
        return [
            o for o in self.candidates(bare.name, graph) if o.id != target and not self._excluded(bare, o, graph, memo)
        ]

    def present(self, path: PathNode, graph: SceneGraph, index: GraphIndex | None = None) -> bool:
        """The executor's "some object matches" (the positive half of a probe)."""
        return bool(execute(path.without_ids(), index or GraphIndex(graph, self.table)))

    # -- exclusion of one object --------------------------------------------------------------------

    def _excluded(self, node: PathNode, o: SceneObject, graph: SceneGraph, memo: _Memo) -> bool:
        key = (id(node), o.id)
        done = memo.excluded
        if key not in done:
            done[key] = False  # a cycle proves nothing
            done[key] = self._excluded_now(node, o, graph, memo)
        return done[key]

    def _excluded_now(self, node: PathNode, o: SceneObject, graph: SceneGraph, memo: _Memo) -> bool:
        w = self.words
        for a in node.attributes:  # a many-coloured object's colours named are some of its colours
            if any(w.attributes_contradict(a, b, o.name)[0] for b in o.attributes) and not w.several(a, o.attributes):
                return True
        for e in node.relations:
            partners = self._partners(e.object, o, graph, memo)
            if partners is None:
                return True
            if partners and all(self._not_related(o, e.name, p) for p in partners):
                return True
        for s in node.same:
            partners = self._partners(s.object, o, graph, memo)
            if partners is None:
                return True
            if partners and all(self._not_same(o, p, s.category) for p in partners):
                return True
        return False

    def _partners(self, child: PathNode, o: SceneObject, graph: SceneGraph, memo: _Memo) -> list[SceneObject] | None:
        """Objects that might match `child` (never `o`); None when certainly none (an absence that counts)."""
        possible = [
            p
            for p in self.candidates(child.name, graph, memo.index)
            if p.id != o.id and not self._excluded(child, p, graph, memo)
        ]
        if possible and self._any_named(child.name, possible):
            return possible
        if self._absence(child.name, graph, memo) is not None:
            return []  # one may be there unannotated: nothing is excluded for want of a partner
        return possible or None

    def _any_named(self, name: str, objects: list[SceneObject]) -> bool:
        """Whether one of `objects` is certainly of the kind `name` says (its name, a plural, a synonym or a
        kind of it), not only a name that may be it (a clock for "watch", an animal for "dog"): where none
        is, an object of that kind is absent, and the absence must be one that proves something."""
        for o in objects:
            key = (o.name, name)
            if key not in self._named:
                self._named[key] = o.name == name or self.words.name_relation(o.name, name) in NAMED
            if self._named[key]:
                return True
        return False

    def _not_related(self, o: SceneObject, relation: str, p: SceneObject) -> bool:
        if contradicted(relation, o.box, p.box):
            return True
        stored = [r.name for r in o.relations if r.object == p.id]
        if relation in stored:
            return False
        return any(self.words.relations_contradict(r, relation, p.name)[0] for r in stored)

    def _not_same(self, o: SceneObject, p: SceneObject, category: str) -> bool:
        mine = [a for a in o.attributes if self.table.category(a) == category]
        theirs = [a for a in p.attributes if self.table.category(a) == category]
        if not (mine and theirs):
            return False
        several = self.words.several  # a many-coloured object shares a colour with almost anything
        if any(several(x, p.attributes) for x in mine) or any(several(y, o.attributes) for y in theirs):
            return False
        return all(
            self.words.attributes_contradict(x, y, o.name)[0] and self.words.attributes_contradict(x, y, p.name)[0]
            for x in mine
            for y in theirs
        )


class _Memo:
    """One question's answers: which (node, object) pairs are excluded, and the graph's index, if any."""

    __slots__ = ("excluded", "index")

    def __init__(self, index: GraphIndex | None = None) -> None:
        self.excluded: dict[tuple[int, str], bool] = {}
        self.index = index


def context_objects(path: PathNode, index: GraphIndex, target: str) -> list[frozenset[str]]:
    """For each node of the path (`PathNode.nodes()` order), the objects it names *in context*: the root
    is the target; a related node names every object matching its own sub-path that its parent's objects
    stand in the relation to (the two balls the cup is between, not every ball)."""
    out: dict[int, frozenset[str]] = {}
    bare = path.without_ids()
    _in_context(bare, frozenset({target}), index, out)
    return [out[id(n)] for n in bare.nodes()]


def _in_context(node: PathNode, ctx: frozenset[str], index: GraphIndex, out: dict[int, frozenset[str]]) -> None:
    """`context_objects` from `node` down, its objects `ctx` (a module function: a nested one that calls
    itself makes a cycle)."""
    out[id(node)] = ctx
    for e in node.relations:
        child = execute(e.object, index)
        related = frozenset(y for y in child if any(index.related(x, e.name, {y}) for x in ctx))
        _in_context(e.object, related, index, out)
    for s in node.same:
        child = execute(s.object, index)
        kept = set()
        for y in child:
            theirs = index.cat_attrs[y].get(s.category)
            for x in ctx:
                mine = index.cat_attrs[x].get(s.category)
                if x != y and mine and theirs and not mine.isdisjoint(theirs):
                    kept.add(y)
                    break
        _in_context(s.object, frozenset(kept), index, out)


def path_of(
    name: str, attributes: tuple[str, ...] = (), relation: str | None = None, obj: str | None = None
) -> PathNode:
    """A one- or two-node path ("a small dog", "a cup on a table") for the probes' prompts."""
    rels = (PathEdge(relation, PathNode(obj)),) if relation is not None and obj is not None else ()
    return PathNode(name, tuple(attributes), rels)
