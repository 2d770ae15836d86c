"""Probe-R and Probe-C from the decided positives (the probing paper, section 3).

**Probe-R**, per (subject, relation, object) triple of a positive's path whose subject is an object (not a
crowd or background name: "ground under a chair" asks nothing), on the positive's image I0:
- `probe_r/predicate`: the prompt "a cup on a table" against the predicate swapped for one *never seen
  with that subject and object in the corpus* (the plausibility stage's triple counts) that the relation
  tables say contradicts the true one ("a cup under a table");
- `probe_r/subject`: against the subject swapped for a corpus name never seen in that triple, which
  contradicts the subject's name ("a dog on a table": no dog in I0, or none the graph lets be on it);
- `probe_r/subject_only`: on images of I0's split that show the subject and certainly no object of the
  object's kind, the subject-only prompt "a cup" against the triple's prompt (the paper's X_O1 vs P_O1).
**Probe-C**, per attribute of a grounded object of a positive ("a small dog" on I0), 2 images x 2 prompts:
- `probe_c/composition`: the attribute swapped for its antonym (`Words.antonym`, which must contradict it),
  with a second image of the split that shows "a large dog";
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

from hardneg.core.executor import GraphIndex
from hardneg.core.plausibility import Counts
from hardneg.core.records import PathNode, SceneGraph, keyed_seed
from hardneg.core.words import Words
from hardneg.generators.export_certify import Certifier, path_of
from hardneg.generators.export_common import CorpusIndex, GraphChecks, noun_phrase, relation_prompt, sample

SUBJECT_TRIES = 12  # swapped subjects certified per triple (the first that passes is kept)
OBJECT_TRIES = 5  # swapped objects tried per Probe-C attribute


@dataclass(slots=True)
class Probe:
    """One probe in the making: its fixed fields, and the options still to be certified, in order."""

    fields: dict[str, Any]
    options: list[dict[str, Any]] = field(default_factory=list)
    ok: dict[int, bool] = field(default_factory=dict)  # option index -> certified (all its checks passed)
    pending: dict[int, int] = field(default_factory=dict)  # option index -> checks not yet run


class ProbeSearch:
    """Registers the certificate checks of Probe-R and Probe-C options, then picks the winners."""

    def __init__(self, words: Words, cert: Certifier, counts: Counts, index: CorpusIndex, checks: GraphChecks,
                 seed: int, candidates: int, subject_only: int) -> None:  # fmt: skip
        self.words, self.cert, self.counts, self.index, self.checks = words, cert, counts, index, checks
        self.seed, self.candidates, self.subject_only = seed, candidates, subject_only
        self.probes: list[Probe] = []
        self.relations = sorted(counts.relations)
        self.names = sorted(n for n in counts.names if self._swappable(n))

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

    def relation(self, p: dict[str, Any], s: str, r: str, o: str) -> None:
        if self.words.is_crowd(s):  # "ground under a chair": the subject must be an object
            return
        i0, split, c = p["image_id"], p["split"], self.counts
        base = {"split": split, "positive_id": p["id"], "triple": [s, r, o]}
        correct = relation_prompt(self.words, s, r, o)
        true_path = path_of(s, relation=r, obj=o)
        pred = Probe({**base, "kind": "probe_r/predicate", "image_id": i0, "correct": correct})
        for r2 in self._order(self.relations, "probe_r/predicate", p["id"], s, r, o):
            if c.triples[(s, r2, o)] == 0 and self.words.relations_contradict(r, r2, o)[0]:
                false = path_of(s, relation=r2, obj=o)
                option = {"swapped": relation_prompt(self.words, s, r2, o), "swap": {"relation": [r, r2]},
                          "certificate": {"true": true_path.to_json(), "false": false.to_json()}}  # fmt: skip
                self._option(pred, option, [(i0, self._true(true_path)), (i0, self._false(false))])
        subj = Probe({**base, "kind": "probe_r/subject", "image_id": i0, "correct": correct})
        tries = [n for n in self._order(self.names, "probe_r/subject", p["id"], s, r, o) if c.triples[(n, r, o)] == 0]
        for s2 in [n for n in tries if self.words.names_contradict(s, n)[0]][:SUBJECT_TRIES]:
            false = path_of(s2, relation=r, obj=o)
            option = {"swapped": relation_prompt(self.words, s2, r, o), "swap": {"subject": [s, s2]},
                      "certificate": {"true": true_path.to_json(), "false": false.to_json()}}  # fmt: skip
            self._option(subj, option, [(i0, self._true(true_path)), (i0, self._false(false))])
        self.probes += [pred, subj]
        if not self.subject_only or self.cert.absence_refusal(o) is not None:
            return
        images = [i for i in self.index.by_name.get((split, s), []) if i != i0]
        only = Probe({**base, "kind": "probe_r/subject_only", "correct": noun_phrase(self.words, s),
                      "swapped": correct}, [])  # fmt: skip
        for img in self._order(sample(images, self.candidates, self.seed, "subject_only", p["id"]), s, r, o):
            if any(self.cert.could_be(n, o) for n in self.index.images[img].names):
                continue
            option = {"image_id": img, "certificate": {"true": path_of(s).to_json(), "false": true_path.to_json()}}
            self._option(only, option, [(img, self._true(path_of(s))), (img, self._false(true_path))])
        only.fields["take"] = self.subject_only
        self.probes.append(only)

    # -- Probe-C ------------------------------------------------------------------------------------

    def attribute(self, p: dict[str, Any], n: str, a: str) -> None:
        i0, split, w = p["image_id"], p["split"], self.words
        base = {"split": split, "positive_id": p["id"], "image_ids": [i0]}
        p1 = path_of(n, (a,))
        anti = w.antonym(a)
        if anti is not None and w.attributes_contradict(a, anti)[0]:
            comp = Probe({**base, "kind": "probe_c/composition"})
            p2 = path_of(n, (anti,))
            for img in sample(self.index.by_pair.get((split, n, anti), []), self.candidates, self.seed, "pc", p["id"]):
                if img != i0:
                    self._group(comp, i0, img, p1, p2, {"attribute": [a, anti]}, n, a, n, anti)
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
        """The certified probes (the first certified option of each; `take` options for subject-only)."""
        out, missed = [], defaultdict(int)
        for probe in self.probes:
            won = [o for k, o in enumerate(probe.options) if probe.ok[k] and probe.pending[k] == 0]
            take = probe.fields.pop("take", 1)
            if not won:
                missed[probe.fields["kind"]] += 1
            for option in won[:take]:
                out.append({**probe.fields, **option})
        return out, dict(missed)
