"""The offline language backend: deterministic, with real semantics (the demo's, and the paper's
"predefined replace list" baseline).

- rewrite: template paraphrase by the regex rules of `templates/lexicon.v1.yaml` (e.g. "that is" <->
  "which is", "that has the same color as" -> "with the same color as"), applied alone and in pairs,
  and relation/attribute synonyms from the same file; two distinct variants are chosen by a keyed draw.
- replace: the antonym of a relation first ("to the left of" -> "to the right of") when it is among the
  options, then the options in a keyed random order drawn in proportion to their weights (how plausible
  each is in context), or uniformly when they carry none, walked until `n` of them pass the generator's
  checks (its validator, asked word by word).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hardneg.backends.language import Answer, ReplaceRequest, RewriteRequest, Validator
from hardneg.core.plugins import LANGUAGE_BACKENDS
from hardneg.core.records import keyed_seed
from hardneg.core.words.vocab import Lexicon

if TYPE_CHECKING:
    from pathlib import Path

    from hardneg.backends.requirements import Requirement
    from hardneg.core.config import RunConfig


@LANGUAGE_BACKENDS.add("lexicon", order=10)
class LexiconBackend:
    reads_own_rewrites = True  # its rewrites are made of the path's parts: the word tables read them

    @classmethod
    def from_config(cls, cfg: RunConfig, work_dir: Path, lexicon: Lexicon) -> LexiconBackend:
        return cls(lexicon, seed=cfg.seed)

    @classmethod
    def requirements(cls, cfg: RunConfig) -> list[Requirement]:
        return []  # the word tables ship with the package

    @classmethod
    def fingerprint(cls, cfg: RunConfig) -> object:
        return None  # the lexicon file is declared data of the stages that use it

    def __init__(self, lexicon: Lexicon, seed: int = 0):
        self.lexicon = lexicon
        self.seed = seed
        self.version = lexicon.version
        self._rules = [(re.compile(a), b) for a, b in lexicon.paraphrases]
        self._synonyms = {**lexicon.relation_synonyms, **lexicon.attribute_synonyms}
        # One alternation, longest phrase first: "on top of" is one relation, never "on" followed by "top of"
        # (swapping that "on" wrote "on top of top of").
        words = sorted(self._synonyms, key=len, reverse=True)
        self._synonym_rx = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b") if words else None
        self._calls = 0

    def stats(self) -> dict[str, int]:
        return {"calls": 0, "cache_hits": 0, "lexicon_requests": self._calls}

    # ----------------------------------------------------------------------------------------------
    def variants(self, text: str) -> list[str]:
        """Every distinct paraphrase reachable by one or two rules or one synonym swap, sorted."""
        once = [rx.sub(repl, text, count=1) for rx, repl in self._rules]
        out = {t for t in once if t != text}
        first: dict[str, re.Match[str]] = {}
        for m in self._synonym_rx.finditer(text) if self._synonym_rx else ():
            first.setdefault(m.group(1), m)
        for word, m in first.items():
            out.update(text[: m.start()] + s + text[m.end() :] for s in self._synonyms[word])
        for a, b in itertools.combinations(range(len(self._rules)), 2):
            if once[a] == text:
                continue  # rule a changes nothing: the pair is rule b alone, already in `out`
            if self._rules[a][0].pattern == self._rules[b][0].pattern:
                continue  # two rewrites of the same spot ("in the image in the picture")
            out.add(self._rules[b][0].sub(self._rules[b][1], once[a], count=1))
        out.discard(text)
        return sorted(" ".join(v.split()) for v in out)

    def rewrite(self, requests: Sequence[RewriteRequest], validate: Validator | None = None) -> list[Answer]:
        answers = []
        for r in requests:
            self._calls += 1
            candidates = self.variants(r.expression)
            random.Random(keyed_seed(self.seed, "rewrite", r.key)).shuffle(candidates)
            if validate is not None:  # lazily: validation (spaCy) costs more than making variants
                candidates = list(
                    itertools.islice((c for c in candidates if validate(r, (r.expression, c)) is None), 2)
                )
            if len(candidates) < 2:
                answers.append(Answer(r.key, None, error="lexicon: fewer than two valid paraphrases", raw=None))
                continue
            answers.append(Answer(r.key, (r.expression, candidates[0], candidates[1])))
        return answers

    def replace(self, requests: Sequence[ReplaceRequest], validate: Validator | None = None) -> list[Answer]:
        answers = []
        for r in requests:
            self._calls += 1
            rng = random.Random(keyed_seed(self.seed, "replace", r.key))
            if r.weights:  # a draw in proportion to the weights, without replacement (Efraimidis-Spirakis)
                drawn = sorted(zip(r.options, r.weights, strict=True), key=lambda ow: -(rng.random() ** (1 / ow[1])))
                options = [o for o, _ in drawn if o != r.word]
            else:
                options = [o for o in r.options if o != r.word]
                rng.shuffle(options)
            antonym = self.lexicon.antonyms.get(r.word) if r.part == "relation" else None
            if antonym is not None and (antonym in r.options or not r.weights):
                options = [antonym, *(o for o in options if o != antonym)]
            if not options:
                answers.append(
                    Answer(r.key, None, error=f"lexicon: no {r.category or r.part} alternative to {r.word!r}")
                )
                continue
            if validate is None:
                answers.append(Answer(r.key, tuple(options[: r.n])))
                continue
            # the drawn order, walked until `n` words pass the generator's checks (a draw from the weights
            # restricted to the words that make a true negative); the reasons of the first refusals otherwise
            values, whys = [], []
            for o in options:
                why = validate(r, (o,))
                if why is None:
                    values.append(o)
                    if len(values) == r.n:
                        break
                elif len(whys) < r.n:
                    whys.append(why)
            if values:
                answers.append(Answer(r.key, tuple(values)))
            else:
                answers.append(Answer(r.key, None, error=f"semantic: {'; '.join(dict.fromkeys(whys))}"))
        return answers
