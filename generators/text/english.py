"""English that reads right: a check on every rendered and rewritten expression.

Templates and the word tables (`core/words/table.py`) get articles and agreement right by construction; an LLM
rewrite, or a word the tables do not know, may not. Each expression is tagged with spaCy (the English
pipeline the rewrite validator loads) and refused, with the reason, when:

- "a"/"an" introduces a plural noun ("a bananas") or a mass noun ("a snow", "a mud");
- "a"/"an" does not match the next word's sound ("a apple", "an banana");
- "is/are", "has/have", "was/were" disagree in number with both the noun right before them (after
  "that"/"which"/"who") and the expression's head noun: "the bananas that is yellow". A relative clause may
  attach to either ("the cup on the plates that is white"), so agreeing with one of them is enough.

A noun the word tables know is read with the tables' number and mass-ness, and a multi-word name they know
is one noun: the small tagger reads "mitt" as a plural and "hydrant" in "fire hydrant" as an adverb, and
every such sample was refused before. The noun an article introduces is the head of its phrase ("a cream
colored jar" is about a jar). Tagging runs the network only (`generators/text/english_tags.py`).

A text made of its path's parts and the templates' words (a template expression, an offline lexicon
rewrite) is not tagged: its words are read from the word tables (`generators/text/english_words.py`) and the
same rules run on them. spaCy tags only the others: an LLM's text, or words the tables do not know.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from hardneg.core.words.table import Words
from hardneg.generators.text.english_tags import Tagger
from hardneg.generators.text.rewrite import load_nlp

if TYPE_CHECKING:
    from hardneg.core.records import PathNode
    from hardneg.core.rows import PositiveRow, TextNegativeRow
    from hardneg.generators.text.english_words import TableReader

ARTICLES = ("a", "an")
VERBS = {"is": False, "was": False, "has": False, "are": True, "were": True, "have": True}  # plural?
SKIP_TO_NOUN = frozenset({"ADJ", "ADV", "NUM", "PUNCT", "DET", "PART", "SYM"})
TRIGGERS = frozenset(ARTICLES) | frozenset(VERBS)  # the only tokens at which `check_doc` can refuse
Said = TypeVar("Said", "PositiveRow", "TextNegativeRow")  # a record whose expression is checked


class EnglishCheck:
    """`reader`: reads texts made of their path's parts from the word tables (None: spaCy tags every text).
    `rewrites_read`: whether a record's rewrites are read too (the offline lexicon's are; an LLM's are not).
    `stats` counts the texts read from the tables, tagged, and passed for holding no word a rule reads."""

    def __init__(self, words: Words, reader: TableReader | None = None, rewrites_read: bool = False) -> None:
        self.words = words
        self.reader = reader
        self.rewrites_read = rewrites_read
        self.stats: Counter = Counter()
        self._cache: dict[str, str | None] = {}
        self._invariant: dict[str, bool] = {}

    def _plural(self, tok: Any) -> bool:
        if self.words.is_mass(tok.lemma_.lower()) or self.words.is_mass(tok.lower_):
            return False
        if self.words.is_known(tok.lower_):  # a noun the tables know: their number beats a tagger's guess
            return self.words.is_plural(tok.lower_)  # the small tagger reads "mitt" as NNS
        return tok.tag_ in ("NNS", "NNPS") or self.words.is_plural(tok.lower_)

    def _either(self, tok: Any) -> bool:
        """An invariant noun (sheep, fish, series): singular and plural alike. A plural-only noun (shorts,
        pants) is its own plural and lemma too, but always plural ("the shorts are")."""
        w = tok.lower_
        got = self._invariant.get(w)
        if got is None:
            got = self.words.plural(w) == w and self.words.lemma(w) == w and not self.words.is_plural(w)
            self._invariant[w] = got
        return got

    @staticmethod
    def _noun(tok: Any) -> bool:
        """A noun with a letter in it: the tagger may call "_" a noun, and the tables read only words."""
        return tok.pos_ in ("NOUN", "PROPN") and any(ch.isalpha() for ch in tok.lower_)

    def _name_at(self, toks: list[Any], j: int) -> int:
        """How many tokens from j make the longest multi-word name the tables know ("fire hydrant", which
        the tagger may split into a noun and an adverb); 0 when none does."""
        for k in (3, 2):
            if j + k <= len(toks) and " ".join(t.lower_ for t in toks[j : j + k]) in self.words.known_nouns:
                return k
        return 0

    def _article_head(self, toks: list[Any], i: int) -> tuple[str, int] | None:
        """The head noun of the phrase an article at i introduces (as a phrase the tables can read, and the
        index of its last token), or None. Modifiers before the first noun are skipped; after it the phrase goes on
        through compounds, known multi-word names and adjectives/participles that lead to another noun
        ("a cream colored jar" is about a jar, "a snow covered roof" about a roof)."""
        j, head = i + 1, None
        while j < len(toks) and (toks[j].pos_ in SKIP_TO_NOUN or toks[j].tag_ in ("JJ", "VBN", "VBG")):
            j += 1
        while j < len(toks):
            if k := self._name_at(toks, j):
                head, j = (" ".join(t.lower_ for t in toks[j : j + k]), j + k - 1), j + k
            elif self._noun(toks[j]):
                head, j = (toks[j].lower_, j), j + 1
            else:
                break
            m = j
            while m < len(toks) and (toks[m].pos_ == "ADJ" or toks[m].tag_ in ("JJ", "VBN")):
                m += 1
            if m >= len(toks) or not (self._noun(toks[m]) or self._name_at(toks, m)):
                break
            j = m
        return head

    def check_doc(self, doc: Any) -> str | None:
        """`doc`: a spaCy Doc, or the tagged words of one text (`english_tags.Word`s)."""
        toks = [t for t in doc if not t.is_space]
        nouns = [i for i, t in enumerate(toks) if self._noun(t)]
        for i, t in enumerate(toks):
            low = t.lower_
            if low in ARTICLES and i + 1 < len(toks):
                nxt, sound = toks[i + 1], toks[i + 1].lower_
                found = self._article_head(toks, i)
                if found is not None:
                    phrase, at = found
                    head = toks[at]
                    sound = " ".join(t.lower_ for t in toks[i + 1 : at + 1])  # "an oval fire hydrant"
                    if self.words.is_plural(phrase) if " " in phrase else self._plural(head):
                        return f"'{low}' before the plural noun '{phrase}'"
                    if self.words.is_mass(phrase) or self.words.is_mass(head.lemma_.lower()):
                        return f"'{low}' before the mass noun '{phrase}'"
                want = self.words.indefinite_article(sound) if any(ch.isalpha() for ch in sound) else ""
                if want in ARTICLES and want != low:
                    return f"'{low} {nxt.text}' should read '{want} {nxt.text}'"
            if low in VERBS and t.pos_ in ("AUX", "VERB"):
                before = [k for k in nouns if k < i]
                if not before:
                    continue
                near, head = toks[before[-1]], toks[nouns[0]]
                verb_plural = VERBS[low]
                if self._either(near) or self._either(head):
                    continue  # "the sheep that is/are grazing": both read right
                if self._plural(near) != verb_plural and self._plural(head) != verb_plural:
                    return f"'{near.text} ... {low}': the verb does not agree with its noun"
        return None

    def check(self, text: str) -> str | None:
        """None when the expression reads right, else why not."""
        if text not in self._cache:
            self._cache[text] = self.check_doc(tagger().words([text])[0])
        return self._cache[text]

    def check_many(self, texts: Iterable[str], paths: Mapping[str, PathNode] | None = None) -> dict[str, str | None]:
        """`check` for many texts: those with a path in `paths` (the one they are made of) that the reader
        reads from the tables are checked on those words; the others are tagged in one batch. `check_doc`
        can refuse a text only at a token that is an article or one of VERBS, so a text whose tokens (the
        pipeline's own tokenizer, which costs a fraction of tagging) hold none reads right as it is: only
        the others are tagged."""
        texts = list(texts)
        todo = self._read(sorted({t for t in texts if t not in self._cache}), paths or {})
        if todo:
            self._tag(todo)
        return {t: self._cache[t] for t in texts}

    def _read(self, texts: list[str], paths: Mapping[str, PathNode]) -> list[str]:
        """Check the texts the reader reads from the tables; return the others."""
        if self.reader is None:
            return texts
        parts: dict[int, Any] = {}
        rest = []
        for text in texts:
            path = paths.get(text)
            if path is not None and id(path) not in parts:
                parts[id(path)] = self.reader.parts(path)
            words = self.reader.words(text, parts[id(path)]) if path is not None else None
            if words is None:
                rest.append(text)
            else:
                self._cache[text] = self.check_doc(words)
                self.stats["read"] += 1
        return rest

    def _tag(self, texts: list[str]) -> None:
        nlp = load_nlp()
        todo: list[tuple[str, Any]] = []
        for text in texts:
            doc = nlp.make_doc(text)
            if any(t.lower_ in TRIGGERS for t in doc):
                todo.append((text, doc))
            else:
                self._cache[text] = None
                self.stats["no_rule"] += 1
        self.stats["tagged"] += len(todo)
        tagged = tagger().words([text for text, _ in todo], [doc for _, doc in todo])
        for (text, _), words in zip(todo, tagged, strict=True):
            self._cache[text] = self.check_doc(words)


@lru_cache(maxsize=1)
def tagger() -> Tagger:
    """The loaded pipeline's tagger with its ruler and lemmatizer applied by table, once per process."""
    return Tagger(load_nlp())


def check_records(records: list[Said], checker: EnglishCheck, about: tuple[str, ...]) -> tuple[list[Said], list[Any]]:
    """Records (positives or text negatives) whose expression reads right: a failing rewrite falls back to
    the template text, failing rewrites are dropped from `rewrites`, and a record whose template fails too is
    rejected (its `about` fields in the reject's detail)."""
    from hardneg.core.records import Reject

    texts = [t for r in records for t in (r.expression, r.template_expression or "", *(r.rewrites or []))]
    rendered = _rendered_from(records, checker.rewrites_read) if checker.reader is not None else {}
    verdict = checker.check_many([t for t in texts if t], rendered)
    kept, rejects = [], []
    for r in records:
        if r.rewrites:
            r.rewrites = [t for t in r.rewrites if verdict[t] is None]
        why = verdict[r.expression]
        template = r.template_expression
        if why is not None and template and template != r.expression and verdict[template] is None:
            r.expression, r.expression_source = template, "template"
            why = None
        if why is None:
            kept.append(r)
            continue
        detail = {"expression": r.expression, **{k: getattr(r, k) for k in about}}
        rejects.append(Reject("english", why, r.image_id, r.id, detail=detail))
    return kept, rejects


def _rendered_from(records: list[Said], rewrites_read: bool) -> dict[str, PathNode]:
    """Each text that is made of its record's path's parts, with that path: the template text (the
    expression of a record that was not rewritten), and with `rewrites_read` the rewrites and the
    expression too. A text several records share is read with the first one's path."""
    out: dict[str, PathNode] = {}
    for r in records:
        template = r.template_expression or r.expression
        texts = [template, r.expression, *(r.rewrites or [])] if rewrites_read else [template]
        if fresh := [t for t in texts if t and t not in out]:
            out.update(dict.fromkeys(fresh, r.node()))
    return out


def check_positives(records: list[PositiveRow], checker: EnglishCheck) -> tuple[list[PositiveRow], list[Any]]:
    return check_records(records, checker, ("tuple_type", "level"))


def check_negatives(records: list[TextNegativeRow], checker: EnglishCheck) -> tuple[list[TextNegativeRow], list[Any]]:
    return check_records(records, checker, ("negative_type",))
