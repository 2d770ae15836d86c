"""OpenAIBackend against a real local LLM (SmolLM2-135M-Instruct behind llama_cpp.server).

The model is small and often wrong: the point is that every answer is either valid (and really passes the
format rules and the semantic validator) or rejected with a reason and the raw text, and that validation
catches what the model gets wrong. Skips when `.ci/install_llm_server.sh` has not been run.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from hardneg.backends.language import ReplaceRequest, RewriteRequest
from hardneg.backends.openai_backend import OpenAIBackend, OpenAISettings, normalise
from hardneg.core.records import PathNode
from hardneg.core.words.attribute_table import AttributeTable
from hardneg.core.words.table import Words
from hardneg.core.words.vocab import Lexicon
from hardneg.generators.text.negatives import iter_keep_words
from hardneg.generators.text.rewrite import RewriteValidator
from tests.helpers import REPO_ROOT, node
from tests.llm_server import MODEL_NAME, llm_server_url  # noqa: F401  (the fixture)

log = logging.getLogger(__name__)

# (expression, its path, (part, word, category) to replace)
CASES: list[tuple[str, PathNode, tuple[str, str, str | None]]] = [
    ("the white plate to the left of the cup", node("plate", "white", rel=[("to the left of", node("cup"))]),
     ("attribute", "white", "color")),
    ("the small red ball that is next to the box", node("ball", "small", "red", rel=[("next to", node("box"))]),
     ("object", "ball", "object: sports")),
    ("the man wearing the green shirt", node("man", rel=[("wearing", node("shirt", "green"))]),
     ("attribute", "green", "color")),
    ("the dog on the bed", node("dog", rel=[("on", node("bed"))]), ("object", "dog", "object: animal")),
    ("the wooden table behind the sofa", node("table", "wooden", rel=[("behind", node("sofa"))]),
     ("relation", "behind", "relation: depth")),
    ("the giraffe to the right of the trees", node("giraffe", rel=[("to the right of", node("trees"))]),
     ("relation", "to the right of", "relation: horizontal")),
    ("the tall lamp on top of the desk", node("lamp", "tall", rel=[("on top of", node("desk"))]),
     ("attribute", "tall", "size")),
    ("the black cat under the chair", node("cat", "black", rel=[("under", node("chair"))]),
     ("object", "chair", "object: furniture")),
    ("the woman holding the blue umbrella", node("woman", rel=[("holding", node("umbrella", "blue"))]),
     ("relation", "holding", "relation: contact")),
    ("the train on the bridge", node("train", rel=[("on", node("bridge"))]), ("object", "bridge", "object: building")),
]  # fmt: skip
OPTIONS = {"color": ("black", "red", "blue", "yellow"), "size": ("short", "small", "large")}


ATTRIBUTES = AttributeTable.load()
LEXICON = Lexicon.load(REPO_ROOT / "templates" / "lexicon.v1.yaml")
WORDS = Words.load()
REWRITE_CHECK = RewriteValidator(ATTRIBUTES, LEXICON, WORDS.known_nouns)


PATHS = {e: p for e, p, _ in CASES}


def validate(req: RewriteRequest | ReplaceRequest, values: tuple[str, ...]) -> str | None:
    """The pipeline's own checks: the spaCy rewrite validator, and replacements that contradict the word."""
    if isinstance(req, RewriteRequest):
        for v in values[1:]:
            if (why := REWRITE_CHECK.check(PATHS[req.expression], req.expression, v)) is not None:
                return f"{why} in {v!r}"
        return None
    check = {"attribute": WORDS.attributes_contradict, "object": WORDS.names_contradict}.get(
        req.part, WORDS.relations_contradict
    )
    for v in values:
        ok, why = check(req.word, v)
        if not ok:
            return why
    return None


def test_real_llm_rewrite_and_replace(llm_server_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    s = OpenAISettings(
        base_url=llm_server_url,
        model=MODEL_NAME,
        timeout_s=60.0,
        concurrency=2,
        max_attempts=2,  # keeps the test near a minute; the benchmark uses the default 3
        cache=tmp_path / "llm.sqlite",
    )
    rewrites = [
        RewriteRequest(f"rw{i}", e, tuple(w for _, w in iter_keep_words(p))) for i, (e, p, _) in enumerate(CASES)
    ]
    replaces = [
        ReplaceRequest(f"rp{i}", e, part, word, cat, OPTIONS.get(cat or "", ()), 3)  # type: ignore[arg-type]
        for i, (e, _, (part, word, cat)) in enumerate(CASES)
    ]
    with OpenAIBackend(s) as backend:
        t0 = time.monotonic()
        rw_answers = backend.rewrite(rewrites, validate)
        rp_answers = backend.replace(replaces, validate)
        elapsed = time.monotonic() - t0
        stats = backend.stats()

    for req, a in zip(rewrites, rw_answers, strict=True):
        assert a.key == req.key
        if a.values is not None:
            assert len(a.values) == 3 and a.values[0] == normalise(req.expression)
            assert len({normalise(v) for v in a.values}) == 3
            assert all(v == v.strip().lower() and v for v in a.values)
            assert validate(req, a.values) is None
        else:
            assert a.error and a.raw is not None and a.attempts == s.max_attempts
    for req, a in zip(replaces, rp_answers, strict=True):
        assert a.key == req.key
        if a.values is not None:
            assert 1 <= len(a.values) <= req.n and len(set(a.values)) == len(a.values)
            assert all(v != normalise(req.word) and len(v.split()) <= 4 for v in a.values)
            assert validate(req, a.values) is None
        else:
            assert a.error and a.raw is not None and a.attempts == s.max_attempts

    answers = rw_answers + rp_answers
    rejected = sum(a.values is None for a in answers)
    assert stats["invalid_answers"] >= 1, "SmolLM2-135M is never this good: validation should have caught something"
    report = (
        f"real LLM: {len(answers)} requests, {stats['calls']} calls in {elapsed:.1f} s at concurrency "
        f"{s.concurrency}: {len(answers) / elapsed:.2f} requests/s, {stats['calls'] / elapsed:.2f} calls/s; "
        f"invalid answers {stats['invalid_answers']}/{stats['calls']}; rejected {rejected}/{len(answers)} "
        f"({rejected / len(answers):.0%})"
    )
    log.info(report)
    with capsys.disabled():
        print("\n" + report)
        for a in answers:
            if a.values is None:
                print(f"  rejected {a.key}: {a.error}")

    # The same run again is served from the cache: zero calls.
    with OpenAIBackend(s) as again:
        assert [a.values for a in again.rewrite(rewrites, validate)] == [a.values for a in rw_answers]
        assert again.stats()["calls"] == 0
