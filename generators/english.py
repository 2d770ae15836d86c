"""English that reads right (issue 12): a check on every rendered and rewritten expression.

Templates and the word tables (`core/words.py`) get articles and agreement right by construction; an LLM
rewrite, or a word the tables do not know, may not. Each expression is tagged with spaCy (the English
pipeline the rewrite validator loads) and refused, with the reason, when:

- "a"/"an" introduces a plural noun ("a bananas") or a mass noun ("a snow", "a mud");
- "a"/"an" does not match the next word's sound ("a apple", "an banana");
- "is/are", "has/have", "was/were" disagree in number with both the noun right before them (after
  "that"/"which"/"who") and the expression's head noun: "the bananas that is yellow". A relative clause may
  attach to either ("the cup on the plates that is white"), so agreeing with one of them is enough.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hardneg.core.words import Words
from hardneg.generators.rewrite import load_nlp

ARTICLES = ("a", "an")
VERBS = {"is": False, "was": False, "has": False, "are": True, "were": True, "have": True}  # plural?
SKIP_TO_NOUN = frozenset({"ADJ", "ADV", "NUM", "PUNCT", "DET", "PART", "SYM"})
RELATIVE = frozenset({"that", "which", "who", "whose"})
TRIGGERS = frozenset(ARTICLES) | frozenset(VERBS)  # the only tokens at which `check_doc` can refuse


class EnglishCheck:
    def __init__(self, words: Words) -> None:
        self.words = words
        self._cache: dict[str, str | None] = {}

    def _plural(self, tok: Any) -> bool:
        if self.words.is_mass(tok.lemma_.lower()) or self.words.is_mass(tok.lower_):
            return False
        return tok.tag_ in ("NNS", "NNPS") or self.words.is_plural(tok.lower_)

    def _either(self, tok: Any) -> bool:
        """An invariant noun (sheep, fish, series): singular and plural alike."""
        w = tok.lower_
        return self.words.plural(w) == w and self.words.lemma(w) == w

    def check_doc(self, doc: Any) -> str | None:
        toks = [t for t in doc if not t.is_space]
        nouns = [i for i, t in enumerate(toks) if t.pos_ in ("NOUN", "PROPN")]
        for i, t in enumerate(toks):
            low = t.lower_
            if low in ARTICLES and i + 1 < len(toks):
                nxt = toks[i + 1]
                j = i + 1
                while j < len(toks) and (toks[j].pos_ in SKIP_TO_NOUN or toks[j].tag_ in ("JJ", "VBN", "VBG")):
                    j += 1
                while j + 1 < len(toks) and toks[j].pos_ in ("NOUN", "PROPN") and toks[j + 1].pos_ in ("NOUN", "PROPN"):
                    j += 1  # a compound's head is its last noun: "a metal chair" is about a chair
                if j < len(toks) and toks[j].pos_ in ("NOUN", "PROPN"):
                    head = toks[j]
                    if self._plural(head):
                        return f"'{low}' before the plural noun '{head.text}'"
                    if self.words.is_mass(head.lemma_.lower()) or self.words.is_mass(head.lower_):
                        return f"'{low}' before the mass noun '{head.text}'"
                want = self.words.indefinite_article(nxt.lower_)
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
            self._cache[text] = self.check_doc(load_nlp()(text))
        return self._cache[text]

    def check_many(self, texts: Iterable[str]) -> dict[str, str | None]:
        """`check` for many texts, tagged in one batch. `check_doc` can refuse a text only at a token that
        is an article or one of VERBS, so a text whose tokens (the pipeline's own tokenizer, which costs a
        fraction of tagging) hold none reads right as it is: only the others are tagged."""
        texts = list(texts)
        nlp = load_nlp()
        todo: list[tuple[str, Any]] = []
        for text in sorted({t for t in texts if t not in self._cache}):
            doc = nlp.make_doc(text)
            if any(t.lower_ in TRIGGERS for t in doc):
                todo.append((text, doc))
            else:
                self._cache[text] = None
        tagged = nlp.pipe((doc for _, doc in todo), batch_size=256)
        for (text, _), doc in zip(todo, tagged, strict=True):
            self._cache[text] = self.check_doc(doc)
        return {t: self._cache[t] for t in texts}


def check_positives(records: list[dict[str, Any]], checker: EnglishCheck) -> tuple[list[dict[str, Any]], list[Any]]:
    """Positives whose expression reads right (a failing rewrite falls back to the template text; failing
    rewrites are dropped from `rewrites`), and a reject for each positive whose template fails too."""
    from hardneg.core.records import Reject

    texts = [t for r in records for t in (r["expression"], r.get("template_expression", ""), *r.get("rewrites", []))]
    verdict = checker.check_many([t for t in texts if t])
    kept, rejects = [], []
    for r in records:
        if "rewrites" in r:
            r["rewrites"] = [t for t in r["rewrites"] if verdict[t] is None]
        why = verdict[r["expression"]]
        template = r.get("template_expression")
        if why is not None and template and template != r["expression"] and verdict[template] is None:
            r["expression"], r["expression_source"] = template, "template"
            why = None
        if why is None:
            kept.append(r)
            continue
        detail = {"expression": r["expression"], "tuple_type": r["tuple_type"], "level": r["level"]}
        rejects.append(Reject("english", why, r["image_id"], r["id"], detail=detail))
    return kept, rejects


def check_negatives(records: list[dict[str, Any]], checker: EnglishCheck) -> tuple[list[dict[str, Any]], list[Any]]:
    from hardneg.core.records import Reject

    verdict = checker.check_many([r["expression"] for r in records])
    kept, rejects = [], []
    for r in records:
        if (why := verdict[r["expression"]]) is None:
            kept.append(r)
        else:
            detail = {"expression": r["expression"], "negative_type": r["negative_type"]}
            rejects.append(Reject("english", why, r["image_id"], r["id"], detail=detail))
    return kept, rejects
