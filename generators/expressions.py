"""Render a path into English through the versioned templates of `templates/expressions.v1.yaml`.

Articles follow uniqueness: a related object that its own sub-path picks out alone is "the", one that
does not is "a"/"an" ("the ball to the left of a box"); plurals and mass nouns never take "a" ("the
snow", not "a snow"); "is/are", "has/have" agree with their noun. Number, articles and mass nouns come
from the word tables (`core/words.py`, inflect corrected for GQA's words).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from hardneg.core.attributes import AttributeTable
from hardneg.core.executor import GraphIndex, execute
from hardneg.core.records import PathNode
from hardneg.core.vocab import English, RelationVocab, load_yaml_text
from hardneg.core.words import Words


@dataclass(slots=True, frozen=True)
class Templates:
    version: str
    types: dict[str, tuple[str, ...]]

    @classmethod
    def load(cls, path: Path) -> Templates:
        data = load_yaml_text(path.read_text())
        if not isinstance(data, dict) or "version" not in data or "types" not in data:
            raise ValueError(f"{path} must have 'version' and 'types'")
        types = {t: tuple(v) for t, v in data["types"].items()}
        for t, v in types.items():
            if not 1 <= len(v) <= 3:
                raise ValueError(f"{path}: {t} needs 1-3 templates, has {len(v)}")
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

    def noun_phrase(self, node: PathNode, index: GraphIndex | None, root: bool) -> str:
        """Determiner + adjectives + name, for the node alone (its children render separately)."""
        phrase = " ".join((*ordered_attributes(node.attributes, self.table, self.english), node.name))
        if root or index is None or self.words.is_plural(node.name) or self.words.is_mass(node.name):
            return f"the {phrase}"
        unique = len(execute(node, index)) == 1
        return f"the {phrase}" if unique else f"{self.words.indefinite_article(phrase)} {phrase}"

    def be(self, name: str) -> str:
        return self.words.be_verb(name)

    def relation(self, name: str) -> str:
        return self.relations.phrase.get(name, name)

    def slots(self, path: PathNode, ptype: str, index: GraphIndex | None) -> dict[str, str]:
        s: dict[str, str] = {"t": self.noun_phrase(path, index, root=True)}
        s["be_t"] = self.be(path.name)
        s["has_t"] = "have" if s["be_t"] == "are" else "has"
        if ptype in ("1_hop", "and", "2_hop"):
            e1 = path.relations[0]
            s["r1"], s["o1"] = self.relation(e1.name), self.noun_phrase(e1.object, index, root=False)
            s["be_o1"] = self.be(e1.object.name)
            if ptype == "and":
                e2 = path.relations[1]
                s["r2"], s["o2"] = self.relation(e2.name), self.noun_phrase(e2.object, index, root=False)
            elif ptype == "2_hop":
                e2 = e1.object.relations[0]
                s["r2"], s["o2"] = self.relation(e2.name), self.noun_phrase(e2.object, index, root=False)
        elif ptype in ("same_attr", "same_attr_2hop"):
            sm = path.same[0]
            s["c1"], s["o1"] = sm.category, self.noun_phrase(sm.object, index, root=False)
            s["be_o1"] = self.be(sm.object.name)
            if ptype == "same_attr_2hop":
                e2 = sm.object.relations[0]
                s["r2"], s["o2"] = self.relation(e2.name), self.noun_phrase(e2.object, index, root=False)
        elif ptype != "0_hop":
            raise ValueError(f"unknown path type {ptype!r}")
        return s

    def render_with(self, path: PathNode, ptype: str, template_id: str, index: GraphIndex | None) -> str:
        """Render with a given template ("1_hop@v1#2"): a negative reads like its positive."""
        head, _, i = template_id.rpartition("#")
        if head != f"{ptype}@{self.templates.version}":
            raise ValueError(f"template {template_id!r} is not a {ptype} template of version {self.templates.version}")
        return self.templates.types[ptype][int(i)].format(**self.slots(path, ptype, index))

    def render(self, path: PathNode, ptype: str, key: int, index: GraphIndex | None) -> tuple[str, str]:
        """Return (expression, template id)."""
        text, template_id = self.templates.choose(ptype, key)
        return text.format(**self.slots(path, ptype, index)), template_id
