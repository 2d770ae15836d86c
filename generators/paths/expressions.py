"""Render a path into English through the versioned templates of `templates/expressions.v1.yaml`.

Articles follow uniqueness: a related object that its own sub-path picks out alone is "the", one that
does not is "a"/"an" ("the ball to the left of a box"); plurals and mass nouns never take "a" ("the
snow", not "a snow"); "is/are", "has/have" agree with their noun. Number, articles and mass nouns come
from the word tables (`core/words/table.py`, inflect corrected for GQA's words).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

from hardneg.core.errors import ConfigError
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathNode
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.common import read_yaml
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import English, RelationVocab


@dataclass(slots=True, frozen=True)
class Templates:
    version: str
    types: dict[str, tuple[str, ...]]

    @classmethod
    def load(cls, path: Path) -> Templates:
        data = read_yaml(path)
        if not isinstance(data.get("types"), dict):
            raise ConfigError(f"{path} must have 'version' and 'types'")
        types = {t: tuple(v) for t, v in data["types"].items()}
        for t, v in types.items():
            if not 1 <= len(v) <= 3:
                raise ConfigError(f"{path}: {t} needs 1-3 templates, has {len(v)}")
        return cls(version=str(data["version"]), types=types)

    def choose(self, ptype: str, key: int) -> tuple[str, str]:
        """Pick a template deterministically from the sample id; return (text, "type@version#i")."""
        options = self.types[ptype]
        i = random.Random(key).randrange(len(options))
        return options[i], f"{ptype}@{self.version}#{i}"


def ordered_attributes(attrs: tuple[str, ...] | list[str], table: AttributeTable, english: English) -> tuple[str, ...]:
    """English adjective order: size before shape before color before material ("the small white plate")."""
    rank = {c: i for i, c in enumerate(english.adjective_order)}
    n = len(rank)

    def key(a: str) -> tuple[int, str]:
        c = table.category(a)
        return (rank.get(c, n) if c is not None else n, a)

    return tuple(sorted(attrs, key=key))


class Renderer:
    def __init__(
        self, templates: Templates, english: English, relations: RelationVocab, table: AttributeTable, words: Words
    ):
        self.templates = templates
        self.english = english  # adjective order
        self.relations = relations
        self.table = table
        self.words = words  # number, articles, mass nouns

    def noun_phrase(self, node: PathNode, index: GraphIndex | None, root: bool, like: PathNode | None = None) -> str:
        """Determiner + adjectives + name, for the node alone (its children render separately); an attribute
        English says only after "is" (`English.predicative`: on, off, asleep) follows the name ("the walk sign
        that is on", never "the on walk sign"). The article
        says whether the node's sub-path picks out one object ("the") or not ("a"); with `like`, whether
        `like`'s does: a negative keeps its positive's articles, so the two read alike but for the change."""
        ordered = ordered_attributes(node.attributes, self.table, self.english)
        after = [a for a in ordered if a in self.english.predicative]  # "the walk sign that is on"
        phrase = " ".join((*(a for a in ordered if a not in self.english.predicative), node.name))
        tail = f" that {self.be(node.name)} {' and '.join(after)}" if after else ""
        if root or index is None or self.words.is_plural(node.name) or self.words.is_mass(node.name):
            return f"the {phrase}{tail}"
        unique = len(execute(like or node, index)) == 1
        return f"the {phrase}{tail}" if unique else f"{self.words.indefinite_article(phrase)} {phrase}{tail}"

    def be(self, name: str) -> str:
        return self.words.be_verb(name)

    def relation(self, name: str) -> str:
        return self.relations.phrase.get(name, name)

    def slots(
        self, path: PathNode, ptype: str, index: GraphIndex | None, like: PathNode | None = None
    ) -> dict[str, str]:
        """The template's slots; `like` (a path of the same shape, aligned node by node) sets the articles."""
        twin = dict(zip(map(id, path.nodes()), like.nodes(), strict=True)) if like is not None else {}

        def np_(node: PathNode) -> str:
            return self.noun_phrase(node, index, root=False, like=twin.get(id(node)))

        s: dict[str, str] = {"t": self.noun_phrase(path, index, root=True)}
        if ptype != "0_hop" and s["t"].endswith(tuple(f" {a}" for a in path.attributes)):
            s["t"] += ","  # "the walk sign that is on, to the left of the light": not "on to the left of"
        s["be_t"] = self.be(path.name)
        s["has_t"] = "have" if s["be_t"] == "are" else "has"
        if ptype in ("1_hop", "and", "2_hop"):
            e1 = path.relations[0]
            s["r1"], s["o1"] = self.relation(e1.name), np_(e1.object)
            s["be_o1"] = self.be(e1.object.name)
            if ptype == "and":
                e2 = path.relations[1]
                s["r2"], s["o2"] = self.relation(e2.name), np_(e2.object)
            elif ptype == "2_hop":
                e2 = e1.object.relations[0]
                s["r2"], s["o2"] = self.relation(e2.name), np_(e2.object)
        elif ptype in ("same_attr", "same_attr_2hop"):
            sm = path.same[0]
            s["c1"], s["o1"] = sm.category, np_(sm.object)
            s["be_o1"] = self.be(sm.object.name)
            if ptype == "same_attr_2hop":
                e2 = sm.object.relations[0]
                s["r2"], s["o2"] = self.relation(e2.name), np_(e2.object)
        elif ptype != "0_hop":
            raise ValueError(f"unknown path type {ptype!r}")
        return s

    def render_with(
        self, path: PathNode, ptype: str, template_id: str, index: GraphIndex | None, like: PathNode | None = None
    ) -> str:
        """Render with a given template ("1_hop@v1#2") and, with `like` (the positive's path), the positive's
        articles: a negative reads like its positive but for what it changed ("near the round plate" ->
        "near the square plate", never "near a square plate", which would tell a blind reader which is which)."""
        head, _, i = template_id.rpartition("#")
        if head != f"{ptype}@{self.templates.version}":
            raise ValueError(f"template {template_id!r} is not a {ptype} template of version {self.templates.version}")
        return self.templates.types[ptype][int(i)].format(**self.slots(path, ptype, index, like))

    def render(self, path: PathNode, ptype: str, key: int, index: GraphIndex | None) -> tuple[str, str]:
        """Return (expression, template id)."""
        text, template_id = self.templates.choose(ptype, key)
        return text.format(**self.slots(path, ptype, index)), template_id


def carry_change(template: str, expression: str, changed: str) -> str | None:
    """The positive's wording with the negative's change: `template` is the positive's template text,
    `expression` what it reads (the template or a rewrite), `changed` the negative's template text. Each
    span where `changed` differs from `template` is found in `expression` (widened by a word at a time
    until it occurs once in both) and replaced, so a rewritten positive gets a negative worded the same way
    ("the plate that is white" -> "the plate that is black", not the template's "the black plate"). None
    when a span cannot be found once in the rewrite (it reworded the very words the negative changes)."""
    if expression == template:
        return changed
    base, final, neg = template.split(), expression.split(), changed.split()
    edits: list[tuple[int, int, list[str]]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, base, neg, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo, hi = i1, i2
        while True:
            if hi > lo and _count(base, base[lo:hi]) == 1 and _count(final, base[lo:hi]) == 1:
                break
            if (lo == 0 and hi == len(base)) or hi - lo >= i2 - i1 + 4:
                return None
            lo, hi = max(lo - 1, 0), min(hi + 1, len(base))
        at = _find(final, base[lo:hi])
        edits.append((at, at + hi - lo, base[lo:i1] + neg[j1:j2] + base[i2:hi]))
    edits.sort()
    if any(a[1] > b[0] for a, b in itertools.pairwise(edits)):
        return None
    for start, end, words in reversed(edits):
        final[start:end] = words
    return " ".join(final)


def _find(seq: list[str], sub: list[str]) -> int:
    n = len(sub)
    return next((i for i in range(len(seq) - n + 1) if seq[i : i + n] == sub), -1)


def _count(seq: list[str], sub: list[str]) -> int:
    n = len(sub)
    return sum(1 for i in range(len(seq) - n + 1) if seq[i : i + n] == sub)
