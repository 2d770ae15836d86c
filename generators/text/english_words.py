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


@dataclass(slots=True)
class Parts:
    """The readings of a path's parts, keyed by their words; a part that reads two ways has two."""

    readings: dict[tuple[str, ...], set[Reading]] = field(default_factory=dict)
    longest: int = 1
    sure: bool = True  # False: a part the tables do not know, or one holding a word the check's rules read

    def add(self, words: tuple[str, ...], reading: Reading) -> None:
        self.readings.setdefault(words, set()).add(reading)
        self.longest = max(self.longest, len(words))


class TableReader:
    """Per path, the readings of its parts (`parts`); per text, its words read from them (`words`)."""

    def __init__(self, words: Words, table: AttributeTable, relations: RelationVocab, lexicon: Lexicon) -> None:
        self.tables = words
        self.table = table
        self.relations = relations
        self.lexicon = lexicon
        self._nouns: dict[str, Reading | None] = {}

    def noun(self, name: str) -> Reading | None:
        """A name's words as nouns: the last has the name's number and lemma, those before it modify it
        ("eye glasses"). None for a name the tables do not know."""
        if name not in self._nouns:
            got = None
            if self.tables.is_known(name):
                mods = name.split(" ")[:-1]
                lemma = self.tables.lemma(name).split(" ")[-1]
                tag = "NNS" if self.tables.is_plural(name) else "NN"
                got = (*(("NOUN", "NN", m) for m in mods), ("NOUN", tag, lemma))
            self._nouns[name] = got
        return self._nouns[name]

    def parts(self, path: PathNode) -> Parts:
        parts = Parts()

        def add(phrase: str, reading: Reading | None) -> None:
            words = tuple(phrase.split(" "))
            if reading is None or not TRIGGERS.isdisjoint(words):
                parts.sure = False
            else:
                parts.add(words, reading)

        for word, (pos, tag) in FUNCTION_WORDS.items():
            parts.add((word,), ((pos, tag, word),))
        for node in path.nodes():
            add(node.name, self.noun(node.name))
            for a in node.attributes:
                known = self.tables.attribute_category(a) is not None
                for form in (a, *self.lexicon.attribute_synonyms.get(a, ())):
                    add(form, tuple(("ADJ", "JJ", w) for w in form.split(" ")) if known else None)
            for e in node.relations:
                for form in self._relation_forms(e.name):
                    for w in form.split(" "):
                        if w not in FUNCTION_WORDS or w in TRIGGERS:
                            add(w, ((*RELATION, w),))
            for s in node.same:
                add(s.category, tuple(("NOUN", "NN", w) for w in s.category.split(" ")))
        return parts

    def _relation_forms(self, name: str) -> list[str]:
        """The relation's phrase and every synonym the lexicon may put in its place, or in place of a
        relation its phrase holds ("on" in "sitting on")."""
        phrase = self.relations.phrase.get(name, name)
        forms = [phrase, name]
        padded = f" {phrase} "
        for key, synonyms in self.lexicon.relation_synonyms.items():
            if key == name or f" {key} " in padded:
                forms.extend(synonyms)
        return forms

    def words(self, text: str, parts: Parts) -> list[Word] | None:
        """The text's words read as `parts`, longest part first; None where a word is none of them or the
        reading is not sure (see the module docstring)."""
        if not parts.sure:
            return None
        toks = text.split(" ")
        out: list[Word] = []
        i = 0
        while i < len(toks):
            for n in range(min(parts.longest, len(toks) - i), 0, -1):
                readings = parts.readings.get(tuple(toks[i : i + n]))
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
