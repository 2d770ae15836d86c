"""Throughput and rejection rate of `OpenAIBackend` against the real local LLM (SmolLM2-135M, llama_cpp.server).

    .venv/bin/python -m benchmarks.bench_llm [--n 40] [--concurrency 1 2 4] [--threads 2]

Starts the server with `tests/llm_server.py`'s launcher, then for each concurrency sends `n` requests
(half rewrites, half replacements, all distinct) through the backend with a fresh, empty cache, and prints
requests/s, model calls/s, the share of requests rejected by validation (format rules and a keep-word
validator) and a few examples. Needs `.ci/install_llm_server.sh`. Timings are per machine: the server
runs on CPU threads shared with everything else on the box.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from pathlib import Path

from hardneg.backends.language import Answer, ReplaceRequest, RewriteRequest
from hardneg.backends.openai_backend import OpenAIBackend, OpenAISettings
from hardneg.core.records import PathEdge, PathNode
from tests.llm_server import MODEL_NAME, llama_server, missing_reason
from tests.test_llm_server import REWRITE_CHECK
from tests.test_llm_server import validate as validate_case

ATTRS = {"white": "color", "red": "color", "black": "color", "small": "size", "wooden": "material", "tall": "size"}
OBJECTS = ["plate", "cup", "ball", "box", "dog", "table", "lamp", "chair", "car", "bag", "man", "tree"]
RELATIONS = ["to the left of", "next to", "behind", "on top of", "under", "near"]
COLOR_OPTIONS = ("black", "red", "blue", "yellow", "green", "white")


PATHS: dict[str, PathNode] = {}


def validate(req: RewriteRequest | ReplaceRequest, values: tuple[str, ...]) -> str | None:
    """The pipeline's checks: the spaCy rewrite validator against the expression's path; replacements by
    the integration test's same-category rule."""
    if isinstance(req, RewriteRequest):
        for v in values[1:]:
            if (why := REWRITE_CHECK.check(PATHS[req.expression], req.expression, v)) is not None:
                return f"{why} in {v!r}"
        return None
    return validate_case(req, values)


def make_requests(n: int) -> tuple[list[RewriteRequest], list[ReplaceRequest]]:
    """`n` distinct requests, half rewrites, half replacements, cycling over the three replaceable parts."""
    combos = itertools.product(ATTRS, OBJECTS, RELATIONS, reversed(OBJECTS))
    rows = [(a, o1, r, o2) for a, o1, r, o2 in combos if o1 != o2]
    step = max(1, len(rows) // n)
    rows = rows[::step][:n]
    rewrites, replaces = [], []
    for i, (attr, obj, rel, other) in enumerate(rows):
        expr = f"the {attr} {obj} {rel} the {other}"
        PATHS[expr] = PathNode(obj, (attr,), (PathEdge(rel, PathNode(other)),))
        if i % 2 == 0:
            rewrites.append(RewriteRequest(f"rw{i}", expr, (attr, obj, rel, other)))
        else:
            part, word, cat = [
                ("attribute", attr, ATTRS[attr]),
                ("object", other, "object"),
                ("relation", rel, "relation"),
            ][(i // 2) % 3]
            options = COLOR_OPTIONS if cat == "color" else ()
            replaces.append(ReplaceRequest(f"rp{i}", expr, part, word, cat, options, 3))  # type: ignore[arg-type]
    return rewrites, replaces


def run_once(
    url: str, concurrency: int, rewrites: list[RewriteRequest], replaces: list[ReplaceRequest], cache: Path
) -> tuple[float, dict[str, int], list[Answer], list[Answer]]:
    s = OpenAISettings(base_url=url, model=MODEL_NAME, timeout_s=120.0, concurrency=concurrency, cache=cache)
    with OpenAIBackend(s) as backend:
        t0 = time.monotonic()
        rw = backend.rewrite(rewrites, validate)
        rp = backend.replace(replaces, validate)
        return time.monotonic() - t0, backend.stats(), rw, rp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=40, help="requests per concurrency level (half rewrite, half replace)")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp CPU threads")
    args = ap.parse_args()
    if (reason := missing_reason()) is not None:
        raise SystemExit(reason)
    rewrites, replaces = make_requests(args.n)
    print(f"{len(rewrites)} rewrites + {len(replaces)} replacements; load average {os.getloadavg()[0]:.2f}")
    last: tuple[list[Answer], list[Answer]] = ([], [])
    with llama_server(n_threads=args.threads) as url, tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            elapsed, stats, rw, rp = run_once(url, c, rewrites, replaces, Path(tmp) / f"cache-{c}.sqlite")
            answers = rw + rp
            rejected = sum(a.values is None for a in answers)
            rw_rej = sum(a.values is None for a in rw)
            rp_rej = sum(a.values is None for a in rp)
            print(
                f"concurrency {c}: {len(answers)} requests in {elapsed:.1f} s = "
                f"{len(answers) / elapsed:.2f} requests/s "
                f"({stats['calls']} calls, {stats['calls'] / elapsed:.2f} calls/s); rejected {rejected}/{len(answers)} "
                f"= {rejected / len(answers):.0%} (rewrite {rw_rej}/{len(rw)}, replace {rp_rej}/{len(rp)}); "
                f"invalid answers {stats['invalid_answers']}/{stats['calls']} calls"
            )
            last = (rw, rp)
    rw, rp = last
    by_key = {r.key: r for r in [*rewrites, *replaces]}
    print("\nexample rewrites (valid first, then rejected):")
    for a in sorted(rw, key=lambda a: a.values is None)[:3]:
        print(f"  {by_key[a.key].expression!r} -> {a.values if a.values else f'REJECTED {a.error}: {a.raw}'}")
    print("example replacements (valid first, then rejected):")
    for a in sorted(rp, key=lambda a: a.values is None)[:3]:
        req = by_key[a.key]
        assert isinstance(req, ReplaceRequest)
        got = a.values if a.values else f"REJECTED {a.error}: {a.raw}"
        print(f"  {req.part} {req.word!r} in {req.expression!r} -> {got}")


if __name__ == "__main__":
    main()
