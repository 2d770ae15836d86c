"""An expression's words with their parts of speech read from the word tables, for the English check.

A template expression is made of its path's parts and the templates' own words: the target and related
objects' names (nouns, their number and lemma from the tables), their attributes (adjectives), relation
phrases, the categories of `same` edges, and function words ("the", "that", "is", "with the same ... as").
The offline lexicon's rewrites only swap those for the lexicon's synonyms and paraphrases. For such a text
the tagger has nothing to find out: each word's part of speech is known from the role it plays, and the
English check (`generators/text/english.py`) can run its rules on these words instead of spaCy's.

`TableReader.words` reads a text as the path's parts and the function words, longest part first, and
answers None, so that the check tags the text with spaCy, where it cannot be sure:

- a word that is no part of the path, no synonym and no function word (an LLM's text, a rewrite that split
  a name: "the hydrant that is fire");
- a name the noun tables do not know, or an attribute the attribute table does not know: their number or
  part of speech would be a guess;
- a part that reads two ways at the same place (a path whose name is also one of its attributes);
- a part other than a function word holding an article or "is"/"has": the check's rules apply at those
  words, so their role must be the templates'.

A relation phrase reads as one preposition-like link ("to the left of", "sitting on"): in an expression it
always closes the noun phrase before it and opens the next, and names no object, so its words are neither
nouns nor adjectives to the check; its function words ("the" in "to the left of") read as they do anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hardneg.core.records import PathNode
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import Lexicon, RelationVocab
from hardneg.generators.text.english import TRIGGERS  # the words at which the check's rules apply
from hardneg.generators.text.english_tags import Word

# The words the templates, their article and verb slots, and the lexicon's paraphrases write
# (tests/test_english_words.py checks the files hold no other): (part of speech, fine tag), as the English
# pipeline tags them in these phrases.
FUNCTION_WORDS: dict[str, tuple[str, str]] = {
    "the": ("DET", "DT"), "a": ("DET", "DT"), "an": ("DET", "DT"),
    "that": ("PRON", "WDT"), "which": ("PRON", "WDT"),
    "is": ("AUX", "VBZ"), "are": ("AUX", "VBP"), "has": ("VERB", "VBZ"), "have": ("VERB", "VBP"),
    "and": ("CCONJ", "CC"), "with": ("ADP", "IN"), "as": ("ADP", "IN"), "in": ("ADP", "IN"),
    "same": ("ADJ", "JJ"), "sharing": ("VERB", "VBG"), "image": ("NOUN", "NN"), "picture": ("NOUN", "NN"),
}  # fmt: skip
RELATION = ("ADP", "IN")

Reading = tuple[tuple[str, str, str], ...]  # (part of speech, tag, lemma) per word of a part
FUNCTION_READINGS: dict[str, Reading] = {w: ((pos, tag, w),) for w, (pos, tag) in FUNCTION_WORDS.items()}


@dataclass(slots=True)
class Parts:
    """The readings of a path's parts, keyed by their words; a part that reads two ways has two."""

    readings: dict[tuple[str, ...], set[Reading]] = field(default_factory=dict)
    longest: dict[str, int] = field(default_factory=dict)  # first word -> the most words a part starting so has
    sure: bool = True  # False: a part the tables do not know, or one holding a word the check's rules read


class TableReader:
    """Per path, the readings of its parts (`parts`); per text, its words read from them (`words`)."""

    def __init__(self, words: Words, table: AttributeTable, relations: RelationVocab, lexicon: Lexicon) -> None:
        self.tables = words
        self.table = table
        self.relations = relations
        self.lexicon = lexicon
        self._entries: dict[tuple[str, str], tuple[tuple[tuple[str, ...], Reading | None], ...]] = {}

    def parts(self, path: PathNode) -> Parts:
        parts = Parts()
        for node in path.nodes():
            for kind, value in (
                ("name", node.name),
                *(("attribute", a) for a in node.attributes),
                *(("relation", e.name) for e in node.relations),
                *(("category", s.category) for s in node.same),
            ):
                for words, reading in self.entries(kind, value):
                    if reading is None:
                        parts.sure = False
                        return parts
                    parts.readings.setdefault(words, set()).add(reading)
                    parts.longest[words[0]] = max(parts.longest.get(words[0], 1), len(words))
        return parts

    def entries(self, kind: str, value: str) -> tuple[tuple[tuple[str, ...], Reading | None], ...]:
        """A part's words with their reading, or None where the tables cannot give one (memoised)."""
        key = (kind, value)
        got = self._entries.get(key)
        if got is None:
            got = self._entries[key] = tuple(
                (words, None if reading is None or not TRIGGERS.isdisjoint(words) else reading)
                for words, reading in self._read(kind, value)
            )
        return got

    def _read(self, kind: str, value: str) -> list[tuple[tuple[str, ...], Reading | None]]:
        words = tuple(value.split(" "))
        if kind == "name":
            # nouns: the last has the name's number and lemma, those before it modify it ("eye glasses")
            if not self.tables.is_known(value):
                return [(words, None)]
            head = ("NOUN", "NNS" if self.tables.is_plural(value) else "NN", self.tables.lemma(value).split(" ")[-1])
            return [(words, (*(("NOUN", "NN", m) for m in words[:-1]), head))]
        if kind == "attribute":
            known = self.tables.attribute_category(value) is not None
            forms = (value, *self.lexicon.attribute_synonyms.get(value, ()))
            return [
                (tuple(f.split(" ")), tuple(("ADJ", "JJ", w) for w in f.split(" ")) if known else None) for f in forms
            ]
        if kind == "relation":
            relation_words = dict.fromkeys(w for form in self._relation_forms(value) for w in form.split(" "))
            return [((w,), ((*RELATION, w),)) for w in relation_words if w not in FUNCTION_WORDS or w in TRIGGERS]
        return [(words, tuple(("NOUN", "NN", w) for w in words))]  # a `same` category: "color", "material"

    def _relation_forms(self, name: str) -> list[str]:
        """The relation's phrase and every synonym the lexicon may put in its place, or in place of a
        relation its phrase holds ("on" in "sitting on")."""
        phrase = self.relations.phrase.get(name, name)
        forms = [phrase, name]
        padded = f" {phrase} "
        for key, synonyms in self.lexicon.relation_synonyms.items():
            if key == name or f" {key} " in padded:
                forms.extend(synonyms)
            # a rewrite's verb kept where a negative replaced the relation after it ("resting on" -> "resting
            # under": the change between the template texts is carried onto the rewritten positive)
            forms.extend(f"{s[: -len(key)]}{phrase}" for s in synonyms if s.endswith(f" {key}"))
        return forms

    def words(self, text: str, parts: Parts) -> list[Word] | None:
        """The text's words read as `parts` and the function words, longest part first; None where a word is
        none of them or the reading is not sure (see the module docstring)."""
        if not parts.sure:
            return None
        toks = text.split(" ")
        out: list[Word] = []
        i = 0
        while i < len(toks):
            for n in range(min(parts.longest.get(toks[i], 1), len(toks) - i), 0, -1):
                readings = parts.readings.get(tuple(toks[i : i + n]))
                if n == 1 and (function := FUNCTION_READINGS.get(toks[i])) is not None:
                    readings = {function} if readings is None else {function} | readings
                if readings is not None:
                    break
            else:
                return None
            if len(readings) > 1:
                return None
            (reading,) = readings
            for w, (pos, tag, lemma) in zip(toks[i : i + n], reading, strict=True):
                out.append(Word(w, w.lower(), tag, False, pos, lemma))
            i += n
        return out
