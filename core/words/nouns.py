"""Noun semantics: synonyms, is-a (transitive), part-of and worn-by, overlapping names, crowd and not-object
names, replacement categories, and from them whether two names contradict. A multiword name the tables do
not list is a kind of its head noun ("glass window" is a window). Read from `nouns.v1.yaml` (readers.py);
names are compared through their lemmas (`NounForms`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hardneg.core.words.common import Category, norm
from hardneg.core.words.forms import NounForms

# name_relation's answers: each is a reason a replacement of one name by the other contradicts nothing.
NAME_RELATIONS = ("same", "plural", "synonym", "hypernym", "hyponym", "part", "whole", "overlap")
ONE_CLASS = "nothing separates"  # `names_contradict`'s reason where every category classing both puts them in one class


@dataclass(slots=True, frozen=True, repr=False, eq=False)  # identity equality: loaded once, with Words
class Nouns:
    """What object names mean relative to each other. Names are compared by their canonical form (lemma,
    then synonym); answers the path search and hygiene ask for every pair of an image's names are memoised."""

    forms: NounForms
    canon: dict[str, str]  # name -> canonical synonym
    synsets: dict[str, tuple[str, ...]]  # canonical -> the names of its synonym set
    parents: dict[str, frozenset[str]]  # canonical -> direct hypernyms (canonical)
    wholes: dict[str, dict[str, str]]  # canonical part -> {canonical whole: "part" | "worn"}
    overlaps: dict[frozenset[str], str]  # two names one object can carry -> why
    homonyms: dict[str, str]  # names with two senses (they may sit in two categories) -> the senses
    crowd: dict[str, tuple[str, str]]  # name -> (group, reason)
    not_object: dict[str, tuple[str, str]]  # name -> (group, reason)
    surfaces: dict[str, str]  # canonical name -> "text" | "pictures": its box holds print or pictures
    categories: tuple[Category, ...]
    known: frozenset[str]  # every name the noun table lists (the forms' `known`)
    _cache: dict[tuple[str, ...], Any] = field(default_factory=dict, init=False)

    def _c(self, name: str) -> str:
        """The canonical name (lemma, then synonym), memoised by the name as given: hygiene compares every
        pair of an image's names and the language stage asks each negative's options."""
        if (got := self._cache.get(key := ("canon", name))) is None:
            got = self._cache[key] = self.canon.get(lem := self.forms.lemma(name), lem)
        return got

    def _parents_of(self, c: str) -> frozenset[str]:
        """Direct hypernyms. A multiword name the tables do not know is a hyponym of its head noun
        ("glass window" is a window, "front wheel" a wheel): English compounds name a kind of their head,
        and the exceptions ("hot dog", "teddy bear", "home plate") are listed in the tables."""
        parents = self.parents.get(c)
        if parents is not None or c in self.known:
            return parents or frozenset()
        words = c.split()
        if len(words) > 1:
            head = self._c(words[-1])
            return frozenset({head}) if head != c else frozenset()
        return frozenset()

    def _ancestors(self, c: str) -> frozenset[str]:
        key = ("anc", c)
        if key not in self._cache:
            seen: set[str] = set()
            stack = list(self._parents_of(c))
            while stack:
                p = stack.pop()
                if p not in seen:
                    seen.add(p)
                    stack.extend(self._parents_of(p))
            self._cache[key] = frozenset(seen)
        return self._cache[key]

    def _self_and_ancestors(self, c: str) -> frozenset[str]:
        if (got := self._cache.get(key := ("selfanc", c))) is None:
            got = self._cache[key] = self._ancestors(c) | {c}
        return got

    def _descendants(self, c: str) -> frozenset[str]:
        key = ("desc", c)
        if key not in self._cache:
            self._cache[key] = frozenset(x for x in self.parents if c in self._ancestors(x))
        return self._cache[key]

    def _whole_closure(self, c: str) -> dict[str, str]:
        """The wholes `c` (or a hypernym of it) is part of or worn by, transitively: whole -> "part" | "worn".
        Never their hypernyms: a desktop computer's mouse is not a part of every computer (a laptop)."""
        key = ("wholes", c)
        if key not in self._cache:
            out: dict[str, str] = {}
            stack = [(x, "part") for x in self._self_and_ancestors(c)]
            seen: set[str] = set()
            while stack:
                x, how = stack.pop()
                if x in seen:
                    continue
                seen.add(x)
                for w, h in self.wholes.get(x, {}).items():
                    kind = "worn" if "worn" in (h, how) else "part"
                    out.setdefault(w, kind)
                    stack.append((w, kind))
            self._cache[key] = out
        return self._cache[key]

    def _part_of(self, part: str, whole: str) -> str | None:
        """ "part" or "worn" when `part` is (or can be) a part of `whole`: of it, or of a hypernym of it (parts
        are inherited down: a vehicle's wheel is a car's wheel, a wall's window a brick wall's)."""
        wholes = self._whole_closure(part)
        for w in self._self_and_ancestors(whole):
            if w in wholes:
                return wholes[w]
        return None

    def direct_part_of(self, part: str, whole: str) -> str | None:
        """ "part"/"worn" when `part` itself is a part of `whole` or worn by it (a handle: a bag's, not a person's)."""
        own = [self.wholes.get(x, {}) for x in self._self_and_ancestors(self._c(part))]
        return next((w[x] for x in self._self_and_ancestors(self._c(whole)) for w in own if x in w), None)

    def is_part_of(self, part: str, whole: str) -> bool:
        """Whether `part` names a part of `whole` (a trunk of a tree), not a thing it wears (a shirt); memoised
        by the names as given (the paths stage asks a part's name about every object of its image)."""
        if (got := self._cache.get(key := ("is_part_of", part, whole))) is None:
            got = self._cache[key] = self._part_of(self._c(part), self._c(whole)) == "part"
        return got

    def is_known(self, name: str) -> bool:
        return self._c(name) in self.known or self.forms.lemma(name) in self.known

    def is_a(self, name: str, ancestor: str) -> bool:
        """True when every `name` is an `ancestor` (reflexive, transitive, through synonyms and plurals)."""
        c, a = self._c(name), self._c(ancestor)
        return c == a or a in self._ancestors(c)

    def is_person(self, name: str) -> bool:
        return self.is_a(name, "person")

    def is_crowd(self, name: str) -> bool:
        return self.crowd_reason(name) is not None

    def crowd_reason(self, name: str) -> str | None:
        """Why a name cannot carry a uniqueness claim ("<group>: <reason>"), or None; memoised: the path
        search asks it of every name on every candidate path."""
        key = ("crowd", name)
        if key not in self._cache:
            self._cache[key] = self._crowd_reason(name)
        return self._cache[key]

    def _crowd_reason(self, name: str) -> str | None:
        lem, c = self.forms.lemma(name), self._c(name)
        for x in (lem, c):
            if x in self.crowd:
                group, reason = self.crowd[x]
                return f"{group}: {reason}"
        if self.forms.is_plural(name) and norm(name).split()[-1] not in self.forms.pluralia:
            return "plural: a plural name refers to several objects"
        return None

    def crowd_group(self, name: str) -> str | None:
        reason = self.crowd_reason(name)
        return None if reason is None else reason.split(":", 1)[0]

    def _not_object_hit(self, name: str) -> tuple[str, str] | None:
        n, lem = norm(name), self.forms.lemma(name)
        hit = self.not_object.get(n) or self.not_object.get(lem)
        if hit is None and " " in lem and lem not in self.known:
            hit = self.not_object.get(lem.split()[-1])  # "nike logo" is a logo
        return hit

    def not_object_reason(self, name: str) -> str | None:
        """VG vocabulary entries that are not object names (colours, pronouns, markings, regions)."""
        hit = self._not_object_hit(name)
        return None if hit is None else f"{hit[0]}: {hit[1]}"

    def is_part_name(self, name: str) -> bool:
        return bool(self._whole_closure(self._c(name)))

    def surface_kind(self, name: str) -> str | None:
        """ "text" for a name whose box holds print (a sign, a banner, a label, a marking), "pictures" for one
        that shows pictures (a painting, a screen, a flag), else None."""
        key = ("surface", name)
        if key not in self._cache:
            c = self._c(name)
            kind = self.surfaces.get(c) or next(
                (self.surfaces[a] for a in self._ancestors(c) if a in self.surfaces), None
            )
            hit = self._not_object_hit(name)
            self._cache[key] = kind or ("text" if hit is not None and hit[0] == "marking" else None)
        return self._cache[key]

    def is_part_of_things(self, name: str) -> bool:
        """A part name every whole of which is a thing, not a place (a crust, a handle, a head; not a sink or
        a window, which rooms have): without something it is part of in view, the name is out of place."""
        key = ("part_of_things", name)
        if key not in self._cache:
            wholes = self._whole_closure(self._c(name))
            self._cache[key] = bool(wholes) and not any(self.crowd_group(w) == "background" for w in wholes)
        return self._cache[key]

    def shares_whole(self, part: str, other: str) -> bool:
        """Whether `other` is a whole of `part`, or a part of one of its wholes (a thumb and a head are parts
        of a person; a faucet and a mirror of a bathroom): where `other` is seen, so may `part` be."""
        wholes = self._whole_closure(self._c(part))
        if not wholes:
            return False
        key = ("shares_whole", part, other)
        if key not in self._cache:
            c = self._c(other)
            self._cache[key] = bool(self._self_and_ancestors(c) & wholes.keys()) or bool(
                self._whole_closure(c).keys() & wholes.keys()
            )
        return self._cache[key]

    def _classes(self, cat: Category, c: str) -> frozenset[str]:
        key = ("cls", cat.name, c)  # a tuple hashes its cached parts; a joined string was hashed anew each ask
        got = self._cache.get(key)
        if got is not None:
            return got
        self._cache[key] = frozenset()  # cycle guard
        if c in cat.classes:
            out = cat.classes[c]
        else:
            out = frozenset().union(*(self._classes(cat, p) for p in self._parents_of(c)))
        self._cache[key] = out
        return out

    def name_category(self, name: str) -> str | None:
        """The replacement category: where the name is listed, else its nearest hypernym's, else a root's."""
        key = ("name_category", name)
        if key not in self._cache:
            self._cache[key] = self._name_category(self._c(name))
        return self._cache[key]

    def _name_category(self, c: str) -> str | None:
        level = {c}
        seen: set[str] = set()
        while level:
            for cat in self.categories:
                if level & cat.classes.keys():
                    return cat.name
            seen |= level
            level = {p for x in level for p in self._parents_of(x) if p not in seen}
        anc = self._self_and_ancestors(c)
        for cat in self.categories:
            if anc & cat.roots:
                return cat.name
        return None

    def noun_status(self, name: str) -> str | None:
        """How a name is classified: "category:<c>", "crowd:<group>", "mass", "part", "not_object:<group>"
        (several joined by "|"), or None when the tables know nothing of it."""
        out: list[str] = []
        cat = self.name_category(name)
        if cat is not None:
            out.append(f"category:{cat}")
        group = self.crowd_group(name)
        if group is not None:
            out.append(f"crowd:{group}")
        if self.forms.is_mass(name):
            out.append("mass")
        if self.is_part_name(name):
            out.append("part")
        hit = self._not_object_hit(name)
        if hit is not None:
            out.append(f"not_object:{hit[0]}")
        return "|".join(out) or None

    def category_members(self, category: str) -> tuple[str, ...]:
        for cat in self.categories:
            if cat.name == category:
                return tuple(sorted(cat.classes))
        raise ValueError(f"unknown noun category {category!r}")

    def same_kind(self, a: str, b: str) -> bool:
        """Two annotations of one object kind: the same name, a plural form, or a synonym."""
        return self._c(a) == self._c(b)

    def _forms_of(self, name: str) -> tuple[str, str, str]:
        """(normal form, lemma, canonical name) of a name as given, memoised: `_relate` needs them for both
        names of every pair it is asked, and a name takes part in many pairs."""
        key = ("forms", name)
        got = self._cache.get(key)
        if got is None:
            n = norm(name)
            lem = self.forms.lemma(n)
            got = self._cache[key] = (n, lem, self.canon.get(lem, lem))
        return got

    def _relate(self, a: str, b: str) -> tuple[str | None, str]:
        """`name_relation` with its reason, memoised: the path search's certificates ask it for the names of
        an image against each name on a path, image after image."""
        key = ("relate", a, b)
        got = self._cache.get(key)
        if got is None:
            got = self._cache[key] = self._relate_now(a, b)
        return got

    def _relate_now(self, a: str, b: str) -> tuple[str | None, str]:
        (na, la, ca), (nb, lb, cb) = self._forms_of(a), self._forms_of(b)
        if na == nb:
            return "same", f"'{a}' and '{b}' are the same name"
        if la == lb:
            if self.forms.is_plural(na) == self.forms.is_plural(nb):
                return "synonym", f"'{a}' and '{b}' are spellings of one name"
            sing, other = (a, b) if self.forms.is_plural(nb) else (b, a)
            return "plural", f"'{other}' is a plural form of '{sing}'"
        if ca == cb:
            return "synonym", f"'{b}' is a synonym of '{a}'"
        if cb in self._ancestors(ca):
            return "hyponym", f"'{a}' is a hyponym of '{b}'"
        if ca in self._ancestors(cb):
            return "hypernym", f"'{b}' is a hyponym of '{a}'"
        how = self._part_of(ca, cb)
        if how is not None:
            return "part", f"'{a}' is {'worn by' if how == 'worn' else 'part of'} '{b}'"
        how = self._part_of(cb, ca)
        if how is not None:
            return "whole", f"'{b}' is {'worn by' if how == 'worn' else 'part of'} '{a}'"
        # overlaps are declared between names, not inherited: a pot and a pan overlap, a flower pot and a pan
        # do not; but two names that share a hyponym always overlap (a minivan is a car and a van)
        for x in (la, ca):
            for y in (lb, cb):
                why = self.overlaps.get(frozenset((x, y)))
                if why is not None:
                    return "overlap", f"'{a}' and '{b}' can name one object: {why}"
        shared = self._descendants(ca) & self._descendants(cb)
        if shared:
            return "overlap", f"'{a}' and '{b}' can name one object: both hold '{min(shared)}'"
        return None, ""

    def name_relation(self, a: str, b: str) -> str | None:
        """How `a` relates to `b`: same, plural, synonym, hypernym (a is above b), hyponym, part (a is a
        part of b or worn by it), whole, overlap (one object can carry both names), or None."""
        return self._relate(a, b)[0]

    def names_contradict(self, a: str, b: str) -> tuple[bool, str]:
        """True only when an object truly called `a` cannot be called `b`; else False and the reason."""
        key = ("ncon", a, b)  # the words as asked, like `_relate`: millions of asks, a few thousand names
        got = self._cache.get(key)
        if got is None:
            rel, why = self._relate(a, b)
            got = self._cache[key] = (False, why) if rel is not None else self._category_verdict(a, b)
        return got

    def _category_verdict(self, a: str, b: str) -> tuple[bool, str]:
        (xa, in_a), (xb, in_b) = self._membership(self._c(a)), self._membership(self._c(b))
        same_class: str | None = None
        for i in sorted(xa.keys() & xb.keys()):  # in the categories' order
            shared, label = xa[i] & xb[i], self.categories[i].label
            if shared:
                same_class = same_class or f"{ONE_CLASS} '{a}' and '{b}': both are '{min(shared)}' ({label})"
                continue
            return True, f"'{a}' and '{b}' are different kinds of {label}"
        if same_class:
            return False, same_class
        if in_a & in_b:
            i = min(in_a & in_b)
            loose, label = (b if i in xa else a), self.categories[i].label
            return False, f"'{loose}' has no class of its own in {label}, so it contradicts nothing there"
        for x, orig in ((self._c(a), a), (self._c(b), b)):
            if x not in self.known:
                return False, f"'{orig}' is not in the noun table"
        return False, f"no category holds both '{a}' and '{b}'"

    def _membership(self, c: str) -> tuple[dict[int, frozenset[str]], frozenset[int]]:
        """The categories (by position) a canonical name has classes in, with those classes, and those it
        belongs to by a class or a root: `_category_verdict` asks them for every new pair of names, and a
        few thousand names make millions of pairs."""
        key = ("member", c)
        got = self._cache.get(key)
        if got is None:
            anc, cats = self._self_and_ancestors(c), self.categories
            classes = {i: x for i, cat in enumerate(cats) if (x := self._classes(cat, c))}
            rooted = frozenset(i for i, cat in enumerate(cats) if i in classes or anc & cat.roots)
            got = self._cache[key] = (classes, rooted)
        return got

    def contradicting(self, name: str, candidates: Iterable[str]) -> list[str]:
        """The candidates that contradict `name`, in their order (for replacement pools)."""
        return [c for c in candidates if self.names_contradict(name, c)[0]]

    def size_comparable(self, name_a: str, name_b: str) -> bool:
        """Size words are relative to the kind ("a large dog" is smaller than "a small elephant"), so a
        same-size claim is fair only within one kind, or between members of a category of one scale
        (`similar_size`: people, say, but not "a house" and "a flower"). Memoised: the path search asks it
        for every pair of names in an image."""
        key = ("size", f"{name_a}\0{name_b}")
        if key not in self._cache:
            self._cache[key] = self._size_comparable(name_a, name_b)
        return self._cache[key]

    def _size_comparable(self, name_a: str, name_b: str) -> bool:
        rel = self.name_relation(name_a, name_b)
        if rel in ("same", "plural", "synonym", "hypernym", "hyponym"):
            return True
        both = self._membership(self._c(name_a))[1] & self._membership(self._c(name_b))[1]
        return any(self.categories[i].similar_size for i in both)

    def _nested(self, a: Category, b: Category) -> bool:
        """Two facets of one kind: a root of one is (a hyponym of) a root of the other."""
        return any(x == y or y in self._ancestors(x) or x in self._ancestors(y) for x in a.roots for y in b.roots)

    def check(self) -> list[str]:
        """Structural problems in the noun table (the tests require none)."""
        problems: list[str] = []
        # a name listed in two categories must be a declared homonym or sit in facets of one root
        seen: dict[str, Category] = {}
        for cat in self.categories:
            for name in cat.classes:
                if (prev := seen.get(name)) is None:
                    seen[name] = cat
                elif name not in self.homonyms and not self._nested(prev, cat):
                    problems.append(f"'{name}' is in categories {prev.name!r} and {cat.name!r}")
        for c in self.parents:
            if c in self._ancestors(c):
                problems.append(f"is-a cycle through '{c}'")
        for name in self.known:
            if self.noun_status(name) is None:
                problems.append(f"'{name}' is named in the noun tables but classified nowhere")
            if (lem := self.forms.lemma(name)) != name and name not in self.forms.spellings:
                problems.append(f"'{name}' in the noun tables is not a lemma (lemma: '{lem}')")
        return problems
