"""`GrammarRuleScorer`: rule-based grammar acceptability in [0, 1], offline.

SugarCREPE's grammar-classifier stand-in: documented rules (articles, agreement, repeated words,
contradictory attributes, dangling relations), each violation a fixed penalty. Its word lists are most
of its bulk, hence a module of its own; `filters/scorers/text.py` re-exports it next to the other text
scorers and wraps it as the `grammar` filter.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

# Lower-cased words: the tokenisation of both offline scorers (filters/scorers/text.py imports it).
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# Per-occurrence penalties; the score is 1 - sum, floored at 0.
PENALTY = {
    "empty": 1.0,  # no words at all
    "too_short": 0.3,  # a single word cannot refer to one object among many
    "article": 0.3,  # "a apple", "an ball"
    "agreement": 0.3,  # "the plates that is"
    "repeated_word": 0.3,  # "the the cup"
    "contradictory_attributes": 0.4,  # "the red blue ball"
    "dangling_relation": 0.5,  # "the cup to the left of"
}

# "an" words that start with a consonant letter, and "a" words that start with a vowel letter.
_VOWEL_SOUND_PREFIXES = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_PREFIXES = ("one", "once", "use", "usu", "uti", "eu", "ewe", "uku", "ubiq", "unicorn")
_CONSONANT_SOUND_WORDS = {
    "uniform", "uniforms", "unit", "units", "united", "universe", "universal", "university", "unique",
    "union", "unicycle", "unisex", "urinal", "urine", "utensil", "utensils", "ufo",
}  # fmt: skip

_SINGULAR_VERBS = {"is", "was", "has", "does"}
_PLURAL_VERBS = {"are", "were", "have", "do"}
_REL_PRONOUNS = {"that", "which", "who"}
# Nouns whose number the "-s" heuristic gets wrong, and ones that are both (no judgement).
_IRREGULAR_PLURALS = {"men", "women", "people", "children", "feet", "teeth", "mice", "geese", "oxen", "police"}
_SINGULAR_S = {
    "glass", "grass", "dress", "bus", "cactus", "octopus", "walrus", "asparagus", "hummus", "lens", "gas",
    "canvas", "tennis", "news", "mattress", "bonus", "circus", "iris", "atlas", "compass", "chess", "bass",
    "campus", "virus", "hippopotamus", "platypus", "lotus", "abacus", "bias", "this", "his", "its",
}  # fmt: skip
_EITHER_NUMBER = {"sheep", "deer", "fish", "series", "species", "aircraft", "moose", "bison", "salmon"}
# Words that start a relation phrase: a noun right before one is another candidate head of a relative clause.
_PREPOSITIONS = {
    "on", "in", "at", "near", "by", "with", "under", "above", "below", "behind", "beside", "between", "to",
    "of", "inside", "outside", "over", "next", "onto", "into", "from", "against", "along", "across",
    "around", "beneath", "underneath", "holding", "wearing", "carrying",
}  # fmt: skip
# A referring expression may not end on these: the relation (or determiner) lacks its object.
_NEEDS_OBJECT = {
    "the", "a", "an", "of", "to", "with", "from", "into", "onto", "at", "beside", "between", "beneath",
    "underneath", "toward", "towards", "among", "than", "and", "or", "that", "which", "who", "this",
}  # fmt: skip
# Mutually exclusive values per category; light/dark/pale stay out so "dark blue" is not a contradiction.
_EXCLUSIVE: dict[str, frozenset[str]] = {
    "color": frozenset({
        "red", "blue", "green", "yellow", "white", "black", "brown", "gray", "grey", "orange", "pink", "purple",
        "silver", "gold", "beige", "tan", "maroon", "turquoise",
    }),
    "size": frozenset({"big", "large", "small", "little", "tiny", "huge", "giant"}),
    "height": frozenset({"tall", "short"}),
    "length": frozenset({"long", "short"}),
    "state_open": frozenset({"open", "closed"}),
    "fill": frozenset({"empty", "full"}),
    "wetness": frozenset({"wet", "dry"}),
    "age": frozenset({"young", "old"}),
}  # fmt: skip
# Pairs inside a category that are compatible ("big" and "huge" are both large).
_COMPATIBLE = {frozenset(p) for p in (("big", "large"), ("small", "little"), ("small", "tiny"), ("little", "tiny"))}
_COMPATIBLE |= {frozenset(p) for p in (("huge", "giant"), ("big", "huge"), ("large", "huge"), ("gray", "grey"))}


def _vowel_sound(word: str) -> bool | None:
    """Whether `word` starts with a vowel sound; None when the heuristic should not judge (digits)."""
    if not word[0].isalpha():
        return None
    if word.startswith(_VOWEL_SOUND_PREFIXES):
        return True
    if word in _CONSONANT_SOUND_WORDS or word.startswith(_CONSONANT_SOUND_PREFIXES):
        return False
    return word[0] in "aeiou"


def _number(word: str) -> str | None:
    """Number of a would-be noun ("plural", "singular", None: cannot tell): "-s" heuristic plus lists."""
    if word in _EITHER_NUMBER or len(word) < 3 or not word.isalpha():
        return None
    if word in _IRREGULAR_PLURALS:
        return "plural"
    if word in _SINGULAR_S or word.endswith(("ss", "us", "is")):
        return "singular"
    return "plural" if word.endswith("s") else "singular"


class GrammarRuleScorer:
    """Rule-based acceptability in [0, 1]: SugarCREPE's grammar-classifier stand-in, offline.

    Score = max(0, 1 - sum of penalties), one penalty per violation (`PENALTY`):
    - empty (1.0): no words. too_short (0.3): one word.
    - article (0.3): "a" before a vowel sound or "an" before a consonant sound (first letter plus
      exception lists: "an hour", "a unicorn", "a one-way sign").
    - agreement (0.3): in "<noun> that|which|who <verb>", a singular verb (is/was/has/does) after a
      plural noun or the reverse ("the plates that is"). Number comes from an "-s" heuristic with lists of
      irregular plurals, singulars in "-s" and either-number nouns (no judgement). The clause may attach
      to an earlier noun ("the cup on the plates that is white"): if the word before any earlier
      preposition agrees with the verb, no penalty.
    - repeated_word (0.3): the same word twice in a row ("the the").
    - contradictory_attributes (0.4): two adjacent different values of one exclusive category on one
      noun ("the red blue ball", "the big small cup"); "black and white" is not adjacent, so allowed.
    - dangling_relation (0.5): the text ends on a word that needs an object ("to the left of", "the").
    """

    version = "grammar-rules@v1"

    def violations(self, text: str) -> list[tuple[str, str]]:
        """(rule, detail) per violation; the score is derived from this list."""
        words = _words(text)
        if not words:
            return [("empty", "no words")]
        out: list[tuple[str, str]] = []
        if len(words) == 1:
            out.append(("too_short", words[0]))
        for i, (w, nxt) in enumerate(itertools.pairwise(words)):
            if w == nxt:
                out.append(("repeated_word", f"{w} {nxt}"))
            if w in ("a", "an"):
                vowel = _vowel_sound(nxt)
                if vowel is not None and vowel != (w == "an"):
                    out.append(("article", f"{w} {nxt}"))
            if i + 2 < len(words) and nxt in _REL_PRONOUNS and words[i + 2] in _SINGULAR_VERBS | _PLURAL_VERBS:
                problem = self._disagrees(words, i, words[i + 2])
                if problem:
                    out.append(("agreement", problem))
            if w != nxt:
                for cat, values in _EXCLUSIVE.items():
                    if w in values and nxt in values and frozenset((w, nxt)) not in _COMPATIBLE:
                        out.append(("contradictory_attributes", f"{w} {nxt} ({cat})"))
        if words[-1] in _NEEDS_OBJECT:
            out.append(("dangling_relation", f"ends with {words[-1]!r}"))
        return out

    @staticmethod
    def _disagrees(words: list[str], noun_at: int, verb: str) -> str | None:
        want = "singular" if verb in _SINGULAR_VERBS else "plural"
        number = _number(words[noun_at])
        if number is None or number == want:
            return None
        # benefit of the doubt: an earlier head noun (the word before a preposition) that agrees
        for j in range(1, noun_at):
            if words[j] in _PREPOSITIONS and _number(words[j - 1]) == want:
                return None
        return f"{words[noun_at]} {words[noun_at + 1]} {verb}"

    def score(self, texts: Sequence[str]) -> list[float]:
        return [max(0.0, 1.0 - sum(PENALTY[rule] for rule, _ in self.violations(t))) for t in texts]
