"""Probe-R and Probe-C from the decided positives (the probing paper: "Probing Conceptual Understanding of
Large Visual-Language Models", Schiappa et al.).

**Probe-R**, per (subject, relation, object) triple of a positive's path whose subject is an object (not a
crowd or background name: "ground under a chair" asks nothing), on the positive's image I0:
- `probe_r/predicate`: the prompt "a cup on a table" against the predicate swapped for one *never seen
  with that subject and object in the corpus* (the plausibility stage's triple counts) that the relation
  tables say contradicts the true one ("a cup under a table"); among those, the most implausible first (the
  paper's "highly unlikely" predicate): one never seen with the subject at all, then one that only says
  where things are seen from (left/right, front/behind, near), then the lowest smoothed triple probability;
- `probe_r/subject`: against the subject swapped for a corpus name never seen in that triple, which
  contradicts the subject's name ("a dog on a table": no dog in I0, or none the graph lets be on it);
- `probe_r/subject_only`: on images of I0's split that show the subject and certainly no object of the
  object's kind, the subject-only prompt "a cup" against the triple's prompt (the paper's X_O1 vs P_O1);
- `probe_r/swapped_subject`: on images of the split that show the swapped subject and certainly no object
  of the subject's kind, "a dog" against "a cup" (the paper's X_O3 vs P_O1). The subject swap kept is the
  first certified one whose name has such images; both image sets hold up to `subject_only_images` (the
  paper: 10), and `relation_sets` gives them per triple for the paper's own record.
**Probe-C**, per attribute of a grounded object of a positive ("a small dog" on I0), 2 images x 2 prompts:
- `probe_c/composition`: the attribute swapped for its antonym (`Words.antonym`, which must contradict it),
  else for another attribute of its category that contradicts it ("a red car" / "a blue car"), with a
  second image of the split that shows it; so that colours, materials and patterns are probed, not only
  sizes (most antonyms are sizes), and the stage caps any one category's share (`balance_categories`);
- `probe_c/object`: the object swapped for a name that contradicts it and carries the same attribute in a
  second image ("a small cat").

Every swapped prompt is certified false where it is scored (`Certifier.nothing`), and every correct
prompt true (the executor matches it); the choices among candidates are keyed random, so a rerun is
identical. The checks run while the graphs stream by (`GraphChecks`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hardneg.core.certify import Certifier, path_of
from hardneg.core.executor import GraphIndex
from hardneg.core.gqa.plausibility import Counts, Plausibility
from hardneg.core.records import PathNode, SceneGraph, keyed_seed
from hardneg.core.words.table import Words
from hardneg.exports.common import NO_IDS, CorpusIndex, GraphChecks, noun_phrase, relation_prompt, sample

SUBJECT_TRIES = 12  # swapped subjects certified per triple (the first that passes is kept)
OBJECT_TRIES = 5  # swapped objects tried per Probe-C attribute
ATTRIBUTE_TRIES = 4  # swapped attributes tried per Probe-C attribute when there is no antonym
POOL = 3  # images sampled per image wanted (subject-only, swapped-subject): some fail their certificate


@dataclass(slots=True)
class Probe:
    """One probe in the making: its fixed fields, and the options still to be certified, in order."""

    fields: dict[str, Any]
    options: list[dict[str, Any]] = field(default_factory=list)
    ok: dict[int, bool] = field(default_factory=dict)  # option index -> certified (all its checks passed)
    pending: dict[int, int] = field(default_factory=dict)  # option index -> checks not yet run

    def won(self) -> list[dict[str, Any]]:
        """The certified options, in the order they were registered."""
        return [o for k, o in enumerate(self.options) if self.ok[k] and self.pending[k] == 0]


@dataclass(slots=True)
class RelationProbes:
    """The Probe-R probes of one triple on one image: what the paper's record brings together."""

    fields: dict[str, Any]
    predicate: Probe
    subject: Probe
    subject_only: Probe | None
    swapped: dict[str, Probe]  # swapped subject name -> images that show it and no subject
    later: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # their `_images` arguments, until needed


class ProbeSearch:
    """Registers the certificate checks of Probe-R and Probe-C options, then picks the winners."""

    def __init__(self, words: Words, cert: Certifier, counts: Counts, index: CorpusIndex, checks: GraphChecks,
                 seed: int, candidates: int, subject_only: int) -> None:  # fmt: skip
        self.words, self.cert, self.counts, self.index, self.checks = words, cert, counts, index, checks
        self.seed, self.candidates, self.subject_only = seed, candidates, subject_only
        self.probes: list[Probe] = []
        self.relation_probes: list[RelationProbes] = []
        self.plausibility = Plausibility(counts)
        self.relations = sorted(counts.relations)
        self.names = sorted(n for n in counts.names if self._swappable(n))
        self.attributes_of: dict[str, set[str]] = defaultdict(set)  # name -> attributes the corpus shows on it
        for a, n in counts.attribute_name:
            self.attributes_of[n].add(a)

    def _swappable(self, name: str) -> bool:
        return self.cert.absence_refusal(name) is None and self.words.name_category(name) is not None

    def _order(self, items: list[Any], *key: object) -> list[Any]:
        items = list(items)
        random.Random(keyed_seed(self.seed, *key)).shuffle(items)
        return items

    def _option(self, probe: Probe, option: dict[str, Any], checks: list[tuple[str, Any]]) -> None:
        k = len(probe.options)
        probe.options.append(option)
        probe.ok[k] = True
        probe.pending[k] = len(checks)
        for image_id, fn in checks:

            def run(g: SceneGraph, ix: GraphIndex, fn: Any = fn, k: int = k) -> None:
                probe.ok[k] = probe.ok[k] and bool(fn(g, ix))
                probe.pending[k] -= 1

            self.checks.add(image_id, run)

    def _false(self, path: PathNode) -> Any:
        return lambda g, ix: self.cert.nothing(path, g, ix) is None

    def _true(self, path: PathNode) -> Any:
        return lambda g, ix: self.cert.present(path, g, ix)

    # -- Probe-R ------------------------------------------------------------------------------------

    def implausibility(self, s: str, r2: str, o: str) -> tuple[bool, bool, float]:
        """Sort key of a swapped predicate, most implausible first: never seen with the subject, not a mere
        viewpoint relation (any two things can be left of each other), the lowest smoothed probability."""
        seen = self.counts.subject_relation[(s, r2)] > 0
        return seen, self.words.is_positional(r2), self.plausibility.triple_logp(s, r2, o)

    def relation(self, p: dict[str, Any], s: str, r: str, o: str) -> None:
        if self.words.is_crowd(s):  # "ground under a chair": the subject must be an object
            return
        i0, split, c = p["image_id"], p["split"], self.counts
        base = {"split": split, "positive_id": p["id"], "triple": [s, r, o]}
        correct = relation_prompt(self.words, s, r, o)
        true_path = path_of(s, relation=r, obj=o)
        pred = Probe({**base, "kind": "probe_r/predicate", "image_id": i0, "correct": correct})
        swaps = [
            r2
            for r2 in self._order(self.relations, "probe_r/predicate", p["id"], s, r, o)
            if c.triples[(s, r2, o)] == 0 and self.words.relations_contradict(r, r2, o)[0]
        ]
        for r2 in sorted(swaps, key=lambda x: self.implausibility(s, x, o)):  # stable: keyed order breaks ties
            false = path_of(s, relation=r2, obj=o)
            option = {"swapped": relation_prompt(self.words, s, r2, o), "swap": {"relation": [r, r2]},
                      "plausibility": {"subject_relation": c.subject_relation[(s, r2)],
                                       "relation_object": c.relation_object[(r2, o)],
                                       "logp": round(self.plausibility.triple_logp(s, r2, o), 4)},
                      "certificate": {"true": true_path.to_json(), "false": false.to_json()}}  # fmt: skip
            self._option(pred, option, [(i0, self._true(true_path)), (i0, self._false(false))])
        subj = Probe({**base, "kind": "probe_r/subject", "image_id": i0, "correct": correct})
        swapped: dict[str, Probe] = {}
        later: dict[str, tuple[Any, ...]] = {}
        tries = [n for n in self._order(self.names, "probe_r/subject", p["id"], s, r, o) if c.triples[(n, r, o)] == 0]
        for s2 in [n for n in tries if self.words.names_contradict(s, n)[0]][:SUBJECT_TRIES]:
            false = path_of(s2, relation=r, obj=o)
            option = {"swapped": relation_prompt(self.words, s2, r, o), "swap": {"subject": [s, s2]},
                      "certificate": {"true": true_path.to_json(), "false": false.to_json()}}  # fmt: skip
            self._option(subj, option, [(i0, self._true(true_path)), (i0, self._false(false))])
            if self.subject_only and self.cert.absence_refusal(s) is None:  # else "no cup here" proves nothing
                later[s2] = (base, "probe_r/swapped_subject", p["id"], i0, s2, path_of(s))
        only = None
        if self.subject_only and self.cert.absence_refusal(o) is None:
            only = self._images(base, "probe_r/subject_only", p["id"], i0, s, true_path, o)
            only.fields.update(correct=noun_phrase(self.words, s), swapped=correct)
        self.relation_probes.append(RelationProbes({**base, "image_id": i0, "correct": correct}, pred, subj, only,
                                                   swapped, later))  # fmt: skip

    def swapped_subject_sets(self) -> bool:
        """After a first pass of checks, the swapped-subject image sets of the subject swaps it certified, the
        only ones `_chosen` can take (registering all of them first cost most of the export's checks: up to
        `SUBJECT_TRIES` sets per triple, for one used). True when a second pass has checks to run."""
        added = False
        for rp in self.relation_probes:
            for o in rp.subject.won():
                name = o["swap"]["subject"][1]
                if name in rp.later and name not in rp.swapped:
                    rp.swapped[name] = self._images(*rp.later.pop(name))
                    added = True
        return added

    def _images(self, base: dict[str, Any], kind: str, pid: int, i0: str, name: str, false: PathNode,
                banned: str | None = None) -> Probe:  # fmt: skip
        """Images of the split that show `name` where `false` certainly matches nothing (and, with `banned`,
        no object could be a `banned`), each an option: "a cup" against the triple, "a dog" against "a cup"."""
        fields = {**base, "kind": kind}
        if kind == "probe_r/swapped_subject":
            fields.update(correct=noun_phrase(self.words, name), swapped=noun_phrase(self.words, false.name))
        probe = Probe(fields)
        pool = self.index.by_name.get((base["split"], name), NO_IDS).without(i0)
        k = max(self.candidates, POOL * self.subject_only)
        for img in self._order(sample(pool, k, self.seed, kind, pid, name), *base["triple"], name):
            if banned is not None and any(self.cert.could_be(n, banned) for n in self.index.images[img].names):
                continue
            option = {"image_id": img, "certificate": {"true": path_of(name).to_json(), "false": false.to_json()}}
            self._option(probe, option, [(img, self._true(path_of(name))), (img, self._false(false))])
        return probe

    # -- Probe-C ------------------------------------------------------------------------------------

    def attribute(self, p: dict[str, Any], n: str, a: str) -> None:
        i0, split, w = p["image_id"], p["split"], self.words
        base = {"split": split, "positive_id": p["id"], "image_ids": [i0]}
        p1 = path_of(n, (a,))
        comp = Probe({**base, "kind": "probe_c/composition", "category": w.attribute_category(a)})
        for b in self._attribute_swaps(p["id"], n, a):
            p2 = path_of(n, (b,))
            for img in sample(self.index.by_pair.get((split, n, b), []), self.candidates, self.seed, "pc", p["id"], b):
                if img != i0:
                    self._group(comp, i0, img, p1, p2, {"attribute": [a, b]}, n, a, n, b)
        if comp.options:
            self.probes.append(comp)
        obj = Probe({**base, "kind": "probe_c/object"})
        names = [
            m
            for m in self._order(sorted(self.index.names_by_attribute.get((split, a), ())), "pc-object", p["id"], n, a)
            if m != n and self._swappable(m) and w.names_contradict(n, m)[0]
            and not (w.is_person(m) and w.is_person_attribute(a))
        ]  # fmt: skip
        same = w.name_category(n)
        names.sort(key=lambda m: w.name_category(m) != same)  # a cat for a dog before a car (stable: keyed order)
        for m in names[:OBJECT_TRIES]:
            p2 = path_of(m, (a,))
            for img in sample(self.index.by_pair.get((split, m, a), []), self.candidates, self.seed, "pco", p["id"]):
                if img != i0:
                    self._group(obj, i0, img, p1, p2, {"object": [n, m]}, n, a, m, a)
        self.probes.append(obj)

    def _attribute_swaps(self, pid: int, n: str, a: str) -> list[str]:
        """The attributes to put in place of `a` on `n`, in order: its antonym, then others of its category
        that contradict it and that the corpus shows on `n` ("a blue car" for "a red car")."""
        w, cat = self.words, self.words.attribute_category(a)
        anti = w.antonym(a)
        out = [anti] if anti is not None and w.attributes_contradict(a, anti)[0] else []
        others = [
            b
            for b in self._order(sorted(self.attributes_of.get(n, ())), "pc-attribute", pid, n, a)
            if b not in (a, anti) and cat is not None and w.attribute_category(b) == cat
            and w.attributes_contradict(a, b)[0]
        ]  # fmt: skip
        return out + others[:ATTRIBUTE_TRIES]

    def _group(
        self, probe: Probe, i0: str, img: str, p1: PathNode, p2: PathNode, swap: dict[str, Any], *words: str
    ) -> None:
        n1, a1, n2, a2 = words
        option = {
            "image_ids": [i0, img],
            "swap": swap,
            "prompts": [noun_phrase(self.words, n1, (a1,)), noun_phrase(self.words, n2, (a2,))],
            "certificate": {"true": [p1.to_json(), p2.to_json()], "false": [p2.to_json(), p1.to_json()]},
        }
        checks = [(i0, self._true(p1)), (i0, self._false(p2)), (img, self._true(p2)), (img, self._false(p1))]
        self._option(probe, option, checks)

    # -- results ------------------------------------------------------------------------------------

    def results(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The certified probes, one row per comparison (the first certified option of each; up to
        `subject_only_images` images for the image sets), and the count of probes left uncertified."""
        out: list[dict[str, Any]] = []
        missed: dict[str, int] = defaultdict(int)
        for probe in self.probes:
            won = probe.won()
            if not won:
                missed[probe.fields["kind"]] += 1
            out += [{**probe.fields, **o} for o in won[:1]]
        for rp in self.relation_probes:
            chosen = self._chosen(rp)
            for kind, probe, options in chosen:
                if not options:
                    missed[kind] += 1
                out += [{**probe.fields, **o} for o in options]
        return out, dict(missed)

    def _chosen(self, rp: RelationProbes) -> list[tuple[str, Probe, list[dict[str, Any]]]]:
        """One triple's winners: the predicate swap, the subject swap (the first certified one with images
        of the swapped subject, else the first certified), and the subject-only and swapped-subject images."""
        take = self.subject_only
        subjects = rp.subject.won()
        with_images = [o for o in subjects if rp.swapped.get(o["swap"]["subject"][1]) and
                       rp.swapped[o["swap"]["subject"][1]].won()]  # fmt: skip
        subject = (with_images or subjects)[:1]
        out = [("probe_r/predicate", rp.predicate, rp.predicate.won()[:1]), ("probe_r/subject", rp.subject, subject)]
        if rp.subject_only is not None:
            out.append(("probe_r/subject_only", rp.subject_only, rp.subject_only.won()[:take]))
        if take and subject and subject[0]["swap"]["subject"][1] in rp.swapped:  # none where absence proves nothing
            images = rp.swapped[subject[0]["swap"]["subject"][1]]
            out.append(("probe_r/swapped_subject", images, images.won()[:take]))
        return out

    def relation_sets(self) -> list[dict[str, Any]]:
        """Per triple with every part certified (both swaps, subject-only and swapped-subject images), what
        the paper's Probe-R record holds: the anchor image, the three prompts, the two image sets."""
        sets = []
        for rp in self.relation_probes:
            parts = {kind: options for kind, _, options in self._chosen(rp)}
            if len(parts) < 4 or not all(parts.values()):
                continue
            sets.append({
                **rp.fields,
                "predicate": parts["probe_r/predicate"][0],
                "subject": parts["probe_r/subject"][0],
                "subject_only_ids": [o["image_id"] for o in parts["probe_r/subject_only"]],
                "swapped_subject_ids": [o["image_id"] for o in parts["probe_r/swapped_subject"]],
            })  # fmt: skip
        return sets


def balance_categories(rows: list[dict[str, Any]], share: float) -> list[dict[str, Any]]:
    """Probe-C composition rows with no attribute category above `share` of them, per split (the rows past
    a category's cap dropped in their given order): sizes have the most antonyms, and a probe of sizes
    alone says nothing about colours or materials. A split with one category keeps it whole."""
    out: list[dict[str, Any]] = []
    for split in sorted({r["split"] for r in rows}):
        mine = [r for r in rows if r["split"] == split]
        sizes: dict[Any, int] = defaultdict(int)
        for r in mine:
            sizes[r.get("category")] += 1
        while len(sizes) > 1:
            big = max(sizes, key=lambda k: (sizes[k], str(k)))
            rest = sum(sizes.values()) - sizes[big]
            cap = max(1, int(share / (1.0 - share) * rest))
            if sizes[big] <= cap:
                break
            sizes[big] = cap
        kept: dict[Any, int] = defaultdict(int)
        for r in mine:
            if kept[r.get("category")] < sizes[r.get("category")]:
                kept[r.get("category")] += 1
                out.append(r)
    return out
