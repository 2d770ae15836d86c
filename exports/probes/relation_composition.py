"""Probe-R and Probe-C from the decided positives (the probing paper, Schiappa et al.).

**Probe-R**, per (subject, relation, object) triple of a positive's path whose subject is an object (not a
crowd or background name: "ground under a chair" asks nothing), on the positive's image I0:
- `probe_r/predicate`: the prompt "a cup on a table" against the predicate swapped for one *never seen
  with that subject and object in the corpus* (the paper's rule; the plausibility stage's triple counts),
  the most implausible first (the paper's "highly unlikely" predicate): one never seen with the subject at
  all, then one that only says where things are seen from (left/right, front/behind, near), then the lowest
  smoothed triple probability; the first that I0 certainly refutes (by the boxes, or contradicting the
  stored relation: `_refutable`) is kept ("a cup under a table");
- `probe_r/subject`: against the subject swapped for a corpus name never seen in that triple (the paper's
  rule) that I0 certainly does not show at all ("a dog on a table": no dog anywhere in I0, which no name
  that could be the subject passes);
- `probe_r/subject_only`: on images of I0's split that show the subject and certainly no object of the
  object's kind, the subject-only prompt "a cup" against the triple's prompt (the paper's X_O1 vs P_O1);
- `probe_r/swapped_subject`: on images of the split that show the swapped subject and certainly no object
  of the subject's kind, "a dog" against "a cup" (the paper's X_O3 vs P_O1). The subject swap kept is the
  first certified one whose name has such images; both image sets hold up to `subject_only_images` (the
  paper: 10) distinct images, those that show none of I0's other objects first (the paper's images with
  "no other objects found in the anchor image"), then, where the split has too few of those, the others;
  `relation_sets` gives them per triple for the paper's own record.
**Probe-C**, per attribute of a grounded object of a positive ("a small dog" on I0), 2 images x 2 prompts:
- `probe_c/composition`: the attribute swapped for its antonym (`Words.antonym`, which must contradict it),
  else for another attribute of its category that contradicts it ("a red car" / "a blue car"), with a
  second image of the split that shows it; so that colours, materials and patterns are probed, not only
  sizes (most antonyms are sizes), and the stage caps any one category's share (`balance_categories`);
- `probe_c/object`: the object swapped for a name that contradicts it and carries the same attribute in a
  second image ("a small cat").

Every swapped prompt is certified false where it is scored (`Certifier.nothing`), every correct prompt
true (the executor matches it); candidates are keyed random and certified in order on the graphs they
need (`GraphChecks`) until enough pass, so a rerun is identical and a probe costs the candidates it tries.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from hardneg.core.certify import Certifier, path_of
from hardneg.core.executor import GraphIndex
from hardneg.core.geometry import direction
from hardneg.core.gqa.plausibility import Counts, Plausibility
from hardneg.core.records import PathNode, SceneGraph, keyed_seed
from hardneg.core.words.table import Words
from hardneg.exports.common import KeptPositive, noun_phrase, relation_prompt
from hardneg.exports.corpus import NO_IDS, Candidates, Corpus, GraphChecks, Option, SortedIds, Test, drawn, sample
from hardneg.exports.probes.options import GroupOption, ImageOption, SwapOption
from hardneg.exports.rows import ProbeCRow, ProbeRRow, ProbeRSetRow

Pair = tuple[tuple[str, str], str]  # (the swapped (name, attribute), the image that shows it)
SUBJECT_TRIES = 12  # swapped subjects certified per triple (the first that passes is kept)
OBJECT_TRIES = 5  # swapped objects tried per Probe-C attribute
ATTRIBUTE_TRIES = 4  # swapped attributes tried per Probe-C attribute when there is no antonym
POOL = 10  # images certified at most per image wanted (subject-only, swapped-subject): some fail their certificate
SCAN = 150  # images of a name looked at for an image set (the index's names only, no graph read)


@dataclass(slots=True)
class RelationProbes:
    """The Probe-R probes of one triple on one image: what the paper's record brings together."""

    fields: dict[str, Any]
    predicate: Candidates[SwapOption]
    subject: Candidates[SwapOption]
    subject_only: Candidates[ImageOption] | None = None
    swapped: dict[str, Candidates[ImageOption]] = field(default_factory=dict)  # swapped subject -> images of it


class ProbeSearch:
    """Registers the certificate checks of Probe-R and Probe-C options, then picks the winners. What the
    positive's own image decides is decided first: only the swaps that pass there ask other images."""

    def __init__(self, words: Words, cert: Certifier, counts: Counts, index: Corpus, checks: GraphChecks,
                 seed: int, candidates: int, subject_only: int, memo: dict[str, Any] | None = None,
                 ) -> None:  # fmt: skip
        """`memo`: what it works out from the words, counts and index alone, kept for the next search on them."""
        self.words, self.cert, self.counts, self.index, self.checks = words, cert, counts, index, checks
        self.seed, self.candidates, self.subject_only = seed, candidates, subject_only
        m = {} if memo is None else memo
        self._categories: dict[str, str | None] = m.setdefault("categories", {})
        self._swap_ok: dict[str, bool] = m.setdefault("swap_ok", {})
        self._carrying: dict[tuple[str, str, str | None], Any] = m.setdefault("carrying", {})
        self._attribute_categories: dict[str, str | None] = m.setdefault("attribute_categories", {})
        self._could: dict[str, frozenset[str]] = m.setdefault("could", {})
        self._refute: dict[tuple[str, str, str], bool] = m.setdefault("refute", {})
        self.probes: list[Candidates[GroupOption]] = []
        self.relation_probes: list[RelationProbes] = []
        self.plausibility = Plausibility(counts)
        self.relations = sorted(counts.relations)
        self.names = sorted(n for n in counts.names if self._swappable(n))
        self.attributes_of: dict[str, set[str]] = defaultdict(set)  # name -> attributes the corpus shows on it
        for a, n in counts.attribute_name:
            self.attributes_of[n].add(a)
        self._corpus_names = sorted({n for _, n in index.by_name})

    def _swappable(self, name: str) -> bool:
        ok = self._swap_ok.get(name)
        if ok is None:
            ok = self._swap_ok[name] = self.cert.absence_refusal(name) is None and self._category(name) is not None
        return ok

    def _order(self, items: list[Any], *key: object) -> list[Any]:
        items = list(items)
        random.Random(keyed_seed(self.seed, *key)).shuffle(items)
        return items

    def _could_be(self, name: str) -> frozenset[str]:
        """The corpus names an object that could be a `name` may carry."""
        if name not in self._could:
            self._could[name] = frozenset(n for n in self._corpus_names if self.cert.could_be(n, name))
        return self._could[name]

    def _holds(self, true: PathNode, false: PathNode) -> Test:
        return lambda g, ix: self.cert.present(true, g, ix) and self.cert.nothing(false, g, ix) is None

    # -- Probe-R ------------------------------------------------------------------------------------

    def implausibility(self, s: str, r2: str, o: str) -> tuple[bool, bool, float]:
        """Sort key of a swapped predicate, most implausible first: never seen with the subject, not a mere
        viewpoint relation (any two things can be left of each other), the lowest smoothed probability."""
        seen = self.counts.subject_relation[(s, r2)] > 0
        return seen, self.words.is_positional(r2), self.plausibility.triple_logp(s, r2, o)

    def relation(self, p: KeptPositive, s: str, r: str, o: str) -> None:
        if self.words.is_crowd(s):  # "ground under a chair": the subject must be an object
            return
        i0, split = p.image_id, p.split
        base = {"split": split, "positive_id": p.id, "triple": [s, r, o]}
        correct = relation_prompt(self.words, s, r, o)
        pred = Candidates[SwapOption]({**base, "kind": "probe_r/predicate", "image_id": i0, "correct": correct})
        subj = Candidates[SwapOption]({**base, "kind": "probe_r/subject", "image_id": i0, "correct": correct},
                                      SUBJECT_TRIES)  # fmt: skip
        rp = RelationProbes({**base, "image_id": i0, "correct": correct}, pred, subj)
        if self.subject_only and self.cert.absence_refusal(o) is None:
            only = self._images(base, "probe_r/subject_only", p.id, i0, s, path_of(s, relation=r, obj=o), o)
            only.fields.update(correct=noun_phrase(self.words, s), swapped=correct)
            rp.subject_only = only
        self.relation_probes.append(rp)
        self.checks.add(i0, partial(self._relation_on_image, rp, p.id, base, s, r, o))

    def _relation_on_image(
        self, rp: RelationProbes, pid: int, base: dict[str, Any], s: str, r: str, o: str, g: SceneGraph, ix: GraphIndex
    ) -> None:
        """On the positive's image: the first certified predicate swap, the certified subject swaps among
        the first `SUBJECT_TRIES` that contradict the subject, and their swapped-subject image sets."""
        c, true_path = self.counts, path_of(s, relation=r, obj=o)
        if self.cert.present(true_path, g, ix):
            order = self._order(self.relations, "probe_r/predicate", pid, s, r, o)
            # the paper's: never seen with the pair; and one the certificate can refute here, by the boxes or by
            # contradicting the stored relation (no other relation is ever certified false)
            swaps = [r2 for r2 in order if c.triples[(s, r2, o)] == 0 and self._refutable(r, r2, o)]
            for r2 in sorted(swaps, key=lambda x: self.implausibility(s, x, o)):  # stable: keyed order breaks ties
                false = path_of(s, relation=r2, obj=o)
                if self.cert.nothing(false, g, ix) is None:
                    rp.predicate.add(partial(self._predicate_option, s, r, o, r2))
                    break
            swapped = []
            for s2 in self._subject_tries(pid, s, r, o):
                if self.cert.nothing(path_of(s2), g, ix) is None:  # not in the anchor image at all
                    rp.subject.add(partial(self._subject_option, s, r, o, s2))
                    swapped.append(s2)
            if self.subject_only and self.cert.absence_refusal(s) is None:  # else "no cup here" proves nothing
                self._swapped_sets(rp, base, pid, g.image_id, s, swapped)
        rp.predicate.start(self.checks)
        rp.subject.start(self.checks)

    def _swapped_sets(
        self, rp: RelationProbes, base: dict[str, Any], pid: int, i0: str, s: str, names: list[str]
    ) -> None:
        """The swapped-subject images of the certified subject swaps, one swap after the other until one has
        an image: `_chosen` takes the first swap with images, so the sets after it are never asked for."""

        def then(probe: Candidates[ImageOption]) -> None:
            if not probe.passed:
                self._swapped_sets(rp, base, pid, i0, s, names[1:])

        if names:
            rp.swapped[names[0]] = self._images(
                base, "probe_r/swapped_subject", pid, i0, names[0], path_of(s), then=then
            )

    def _refutable(self, r: str, r2: str, o: str) -> bool:
        """Whether a certificate can show `r2` false of a pair stored as `r`: the boxes decide it, or it
        contradicts `r` (`Certifier.nothing` excludes a pair by nothing else)."""
        key = (r, r2, o)
        got = self._refute.get(key)
        if got is None:
            got = self._refute[key] = direction(r2) is not None or self.words.relations_contradict(r, r2, o)[0]
        return got

    def _subject_tries(self, pid: int, s: str, r: str, o: str) -> list[str]:
        """The first `SUBJECT_TRIES` corpus names, in keyed order, never seen in the triple (the paper's rule;
        the anchor image then certifies the name absent, which no name that could be `s` passes)."""
        out = []
        for n in drawn(self.names, self.seed, "probe_r/subject", pid, s, r, o):
            if n != s and self.counts.triples[(n, r, o)] == 0:
                out.append(n)
                if len(out) == SUBJECT_TRIES:
                    break
        return out

    def _predicate_option(self, s: str, r: str, o: str, r2: str) -> SwapOption:
        c, false = self.counts, path_of(s, relation=r2, obj=o)
        seen = {"subject_relation": c.subject_relation[(s, r2)], "relation_object": c.relation_object[(r2, o)],
                "logp": round(self.plausibility.triple_logp(s, r2, o), 4)}  # fmt: skip
        certificate = {"true": path_of(s, relation=r, obj=o).to_json(), "false": false.to_json()}
        return SwapOption(relation_prompt(self.words, s, r2, o), "relation", r, r2, certificate, seen)

    def _subject_option(self, s: str, r: str, o: str, s2: str) -> SwapOption:
        false = path_of(s2, relation=r, obj=o)
        certificate = {"true": path_of(s, relation=r, obj=o).to_json(), "false": false.to_json()}
        return SwapOption(relation_prompt(self.words, s2, r, o), "subject", s, s2, certificate)

    def _images(self, base: dict[str, Any], kind: str, pid: int, i0: str, name: str, false: PathNode,
                banned: str | None = None, then: Callable[[Candidates[ImageOption]], None] | None = None,
                ) -> Candidates[ImageOption]:  # fmt: skip
        """Images of the split that show `name` where `false` certainly matches nothing (and, with `banned`,
        no object could be a `banned`), each an option: "a cup" against the triple, "a dog" against "a cup"."""
        fields = {**base, "kind": kind}
        if kind == "probe_r/swapped_subject":
            fields.update(correct=noun_phrase(self.words, name), swapped=noun_phrase(self.words, false.name))
        probe = Candidates[ImageOption](fields, self.subject_only, then=then)
        pool = self.index.by_name.get((base["split"], name), NO_IDS).without(i0)
        could = self._could_be(banned) if banned is not None else frozenset()
        true = path_of(name)
        test = self._holds(true, false)
        certificate = {"true": true.to_json(), "false": false.to_json()}  # one for all: up to 10 rows a probe
        others = self._objects_of(i0) - {name}
        tries = max(self.candidates, POOL * self.subject_only)  # images certified at most (some fail)
        images = islice(self._alone(pool, others, could, tries, kind, pid, name, *base["triple"]), tries)
        probe.add_all(Option(partial(ImageOption, img, certificate), [(img, test)]) for img in images)
        probe.start(self.checks)
        return probe

    def _objects_of(self, image_id: str) -> frozenset[str]:
        """The names of an image's objects (not crowds or background: a sky is no object of the scene)."""
        return frozenset(n for n in self.index.images[image_id].names if not self.words.is_crowd(n))

    def _alone(
        self, pool: SortedIds, others: frozenset[str], could: frozenset[str], tries: int, *key: object
    ) -> Iterator[str]:
        """`pool`'s images that show nothing `could` names, in keyed order, drawn as they are taken: first those
        that show none of `others` (the paper's images with "no other objects found in the anchor image"),
        then, where the corpus has too few of those, the rest; one pass over `SCAN` images at most."""
        later = []
        for img in islice(drawn(pool, self.seed, *key, "alone"), SCAN):
            names = self.index.images[img].names
            if not could.isdisjoint(names):
                continue
            if others.isdisjoint(names):
                yield img
            elif len(later) < tries:
                later.append(img)
        yield from later

    # -- Probe-C ------------------------------------------------------------------------------------

    def attribute(self, p: KeptPositive, n: str, a: str) -> None:
        i0, split, w = p.image_id, p.split, self.words
        base = {"split": split, "positive_id": p.id, "image_ids": [i0]}
        comp = Candidates[GroupOption]({**base, "kind": "probe_c/composition", "category": w.attribute_category(a)})
        swaps = [
            ((n, b), img)
            for b in self._attribute_swaps(p.id, n, a)
            for img in sample(self.index.by_pair.get((split, n, b), []), self.candidates, self.seed, "pc", p.id, b)
            if img != i0
        ]
        if swaps:
            self.probes.append(comp)
        obj = Candidates[GroupOption]({**base, "kind": "probe_c/object"})
        objects = [
            ((m, a), img)
            for m in self._object_swaps(p.id, split, n, a)
            for img in sample(self.index.by_pair.get((split, m, a), []), self.candidates, self.seed, "pco", p.id)
            if img != i0
        ]
        self.probes.append(obj)
        groups = [(comp, "attribute", swaps), (obj, "object", objects)]
        self.checks.add(i0, partial(self._groups_on_image, (n, a), groups))

    def _groups_on_image(
        self, first: tuple[str, str], probes: list[tuple[Candidates[GroupOption], str, list[Pair]]],
        g: SceneGraph, ix: GraphIndex,
    ) -> None:  # fmt: skip
        """On the positive's image: "a small dog" holds and the swapped prompt matches nothing; only then
        is the second image of a group asked the reverse."""
        p1 = path_of(first[0], (first[1],))
        holds = self.cert.present(p1, g, ix)
        absent: dict[tuple[str, str], bool] = {}
        for probe, what, groups in probes:
            for second, _ in groups if holds else ():
                if second not in absent:
                    absent[second] = self.cert.nothing(path_of(second[0], (second[1],)), g, ix) is None
            ok = [(second, img) for second, img in groups if absent.get(second)]
            probe.add_all(self._group_options(g.image_id, what, first, p1, ok))  # built only as they are needed
            probe.start(self.checks)

    def _group_options(
        self, i0: str, what: str, first: tuple[str, str], p1: PathNode, groups: list[tuple[tuple[str, str], str]]
    ) -> Iterator[Option[GroupOption]]:
        for second, img in groups:
            make = partial(self._group, i0, img, what, first, second)
            yield Option(make, [(img, self._holds(path_of(second[0], (second[1],)), p1))])

    def _object_swaps(self, pid: int, split: str, n: str, a: str) -> list[str]:
        """The first `OBJECT_TRIES` names, in keyed order, that carry `a` in the split and contradict `n`, those
        of `n`'s category first (a cat for a dog before a car), then those of the others."""
        w, out = self.words, []
        for k, names in enumerate(self._carriers(split, a, self._category(n))):
            for m in drawn(names, self.seed, "pc-object", k, pid, n, a):  # drawn only as far as needed
                if m != n and w.names_contradict(n, m)[0] and not (w.is_person(m) and w.is_person_attribute(a)):
                    out.append(m)
                    if len(out) == OBJECT_TRIES:
                        return out
        return out

    def _carriers(self, split: str, a: str, category: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The names that may be swapped in that carry `a` in the split, sorted: those of `category`, and the
        others; what every attribute probe of `a` on a name of `category` draws from, worked out once."""
        got = self._carrying.get((split, a, category))
        if got is None:
            names = [m for m in sorted(self.index.names_by_attribute.get((split, a), ())) if self._swappable(m)]
            mine = tuple(m for m in names if self._category(m) == category)
            others = tuple(m for m in names if self._category(m) != category)
            got = self._carrying[(split, a, category)] = (mine, others)
        return got

    def _category(self, name: str) -> str | None:
        if name not in self._categories:
            self._categories[name] = self.words.name_category(name)
        return self._categories[name]

    def _attribute_category(self, attribute: str) -> str | None:
        if attribute not in self._attribute_categories:
            self._attribute_categories[attribute] = self.words.attribute_category(attribute)
        return self._attribute_categories[attribute]

    def _attribute_swaps(self, pid: int, n: str, a: str) -> list[str]:
        """The attributes to put in place of `a` on `n`, in order: its antonym, then others of its category
        that contradict it and that the corpus shows on `n` ("a blue car" for "a red car")."""
        w, cat = self.words, self.words.attribute_category(a)
        anti = w.antonym(a)
        out = [anti] if anti is not None and w.attributes_contradict(a, anti)[0] else []
        others = [
            b
            for b in self._order(sorted(self.attributes_of.get(n, ())), "pc-attribute", pid, n, a)
            if b not in (a, anti) and cat is not None and self._attribute_category(b) == cat
            and w.attributes_contradict(a, b)[0]
        ]  # fmt: skip
        return out + others[:ATTRIBUTE_TRIES]

    def _group(self, i0: str, img: str, what: str, first: tuple[str, str], second: tuple[str, str]) -> GroupOption:
        (n1, a1), (n2, a2) = first, second
        p1, p2 = path_of(n1, (a1,)), path_of(n2, (a2,))
        swap = [a1, a2] if what == "attribute" else [n1, n2]
        prompts = [noun_phrase(self.words, n1, (a1,)), noun_phrase(self.words, n2, (a2,))]
        certificate = {"true": [p1.to_json(), p2.to_json()], "false": [p2.to_json(), p1.to_json()]}
        return GroupOption([i0, img], {what: swap}, prompts, certificate)

    # -- results ------------------------------------------------------------------------------------

    def results(self) -> tuple[list[ProbeRRow | ProbeCRow], dict[str, int]]:
        """The certified probes, one row per comparison (the first certified option of each; up to
        `subject_only_images` images for the image sets), and the count of probes left uncertified."""
        out: list[ProbeRRow | ProbeCRow] = []
        missed: dict[str, int] = defaultdict(int)
        for probe in self.probes:
            won = probe.won()
            if not won:
                missed[probe.fields["kind"]] += 1
            out += [ProbeCRow.made(**{**probe.fields, **o.to_json()}) for o in won[:1]]
        for rp in self.relation_probes:
            for kind, probe, options in self._chosen(rp):
                if not options:
                    missed[kind] += 1
                out += [ProbeRRow.made(**{**probe.fields, **o.to_json()}) for o in options]
        return out, dict(missed)

    def _chosen(self, rp: RelationProbes) -> list[tuple[str, Candidates[Any], list[SwapOption] | list[ImageOption]]]:
        """One triple's winners: the predicate swap, the subject swap (the first certified one with images
        of the swapped subject, else the first certified), and the subject-only and swapped-subject images."""
        take = self.subject_only
        subjects = rp.subject.won()
        with_images = [o for o in subjects if (images := rp.swapped.get(o.new)) and images.won()]
        subject = (with_images or subjects)[:1]
        out = [("probe_r/predicate", rp.predicate, rp.predicate.won()[:1]), ("probe_r/subject", rp.subject, subject)]
        if rp.subject_only is not None:
            out.append(("probe_r/subject_only", rp.subject_only, rp.subject_only.won()[:take]))
        if take and subject and subject[0].new in rp.swapped:  # none where absence proves nothing
            images = rp.swapped[subject[0].new]
            out.append(("probe_r/swapped_subject", images, images.won()[:take]))
        return out

    def close(self) -> None:
        """Drop the probes: their options point back at the search, so only this frees them at once."""
        self.probes, self.relation_probes = [], []

    def relation_sets(self) -> list[ProbeRSetRow]:
        """Per triple with every part certified (both swaps, subject-only and swapped-subject images), what
        the paper's Probe-R record holds: the anchor image, the three prompts, the two image sets."""
        sets = []
        for rp in self.relation_probes:
            parts: dict[str, Any] = {kind: options for kind, _, options in self._chosen(rp)}
            if len(parts) < 4 or not all(parts.values()):
                continue
            sets.append(ProbeRSetRow(
                **rp.fields,
                predicate=parts["probe_r/predicate"][0].to_json(),
                subject=parts["probe_r/subject"][0].to_json(),
                subject_only_ids=[o.image_id for o in parts["probe_r/subject_only"]],
                swapped_subject_ids=[o.image_id for o in parts["probe_r/swapped_subject"]],
            ))  # fmt: skip
        return sets
