"""`hardneg report RUN` and `hardneg review RUN`: argument parsers and handlers (heavy imports deferred)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import threading
import webbrowser
from pathlib import Path

from hardneg.core.errors import HardnegError
from hardneg.core.runner.lock import RunLock
from hardneg.core.runner.publish import recover, rollback

log = logging.getLogger(__name__)


def add_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rep = sub.add_parser("report", help="write RUN/report.html: stats, plots, a gallery of samples and rejects")
    rep.add_argument("run", help="a run folder made by `hardneg run`")
    rep.add_argument("--per-group", type=int, default=12, help="samples shown per path type and level (default 12)")
    rep.add_argument("--seed", type=int, default=0, help="seed of the samples (default 0)")
    rep.add_argument("-v", "--verbose", action="store_true")
    rev = sub.add_parser("review", help="the human-filter web app for a run (local, one item at a time)")
    rev.add_argument("run", help="a run folder made by `hardneg run`")
    rev.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    rev.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
    rev.add_argument("--no-browser", action="store_true", help="do not open a browser")
    rev.add_argument(
        "--adjudicator",
        action="append",
        default=[],
        metavar="NAME",
        help="an annotator name whose label is the final word (repeatable; kept in RUN/work/review.sqlite)",
    )
    rev.add_argument(
        "--audit",
        type=int,
        metavar="N",
        help="draw (or extend) a random sample of N items of the final dataset, stratified by kind, type and "
        "level, kept in RUN/work/review.sqlite, and serve only those, without scores (docs/review.md)",
    )
    rev.add_argument("--seed", type=int, default=0, help="seed of the audit's draw (default 0; keep it to extend)")
    rev.add_argument("-v", "--verbose", action="store_true")


def _run_dir(raw: str) -> Path:
    p = Path(raw).resolve()
    if not p.is_dir():
        raise HardnegError(f"run folder not found: {raw}")
    return p


def cmd_report(args: argparse.Namespace) -> int:
    from hardneg.review.report.page import build_report

    if args.per_group < 1:
        raise HardnegError(f"--per-group must be at least 1, got {args.per_group}")
    root = _run_dir(args.run)
    if not (root / "work").is_dir():  # a copy of the published files alone: nothing to recover, no lock
        print(f"report: {build_report(root, per_group=args.per_group, seed=args.seed)}")
        return 0
    with RunLock(root, "hardneg report"):  # never beside a run or a split that is writing the folder
        if stages := rollback(root):  # a run cut off half-way: its outputs as the last finished one left them
            print(f"report: an interrupted run's outputs were put back first; {', '.join(stages)} will be redone")
        recover(root)
        out = build_report(root, per_group=args.per_group, seed=args.seed)
    print(f"report: {out}")
    return 0


def draw_and_say(run_dir: Path, n: int, seed: int) -> None:
    """Draw the audit and say what the draw did: a first draw, an extension, or nothing new."""
    from hardneg.review.audit_draw import draw_audit

    done = draw_audit(run_dir, n, seed)
    total = len(done.sample.items)
    if done.added == total:
        what = f"drew {total} items"
    elif done.added:
        what = f"added {done.added} items (the audit had {total - done.added})"
    else:
        what = f"nothing new drawn: the audit already holds {total} items (a larger N extends it)"
    strata = len(set(done.sample.items.values()))
    print(f"audit (seed {seed}): {what}; {total} items in {strata} strata, shown without scores", flush=True)
    if strata < done.strata:
        print(
            f"audit: the dataset has {done.strata} strata (kind, type and level) and {total} items cover {strata} "
            f"of them; --audit {done.strata} or more gives every stratum at least one item",
            flush=True,
        )


def cmd_review(args: argparse.Namespace) -> int:
    from hardneg.review.server import ReviewServer

    if not 0 <= args.port <= 65535:
        raise HardnegError(f"--port must be 0-65535, got {args.port}")
    run_dir = _run_dir(args.run)
    if args.audit is not None:
        draw_and_say(run_dir, args.audit, args.seed)
    audit = args.audit is not None
    server = ReviewServer(run_dir, host=args.host, port=args.port, adjudicators=tuple(args.adjudicator), audit=audit)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("review app listening on %s: anyone who can reach it can read, and label with the URL", args.host)
    # the URL carries this start's token: only a page opened from it can label
    print(f"review: {server.page_url}  (Ctrl+C stops)", flush=True)
    if args.adjudicator:
        print(f"adjudicators (their label is the final word): {', '.join(sorted(set(args.adjudicator)))}", flush=True)
    if not args.no_browser:
        threading.Timer(0.5, webbrowser.open, args=(server.page_url,)).start()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C is how the app is stopped
        server.serve_forever()
    print(closing_words(run_dir, audit), flush=True)
    return 0


def closing_words(run_dir: Path, audit: bool) -> str:
    """What the app's end says: the labels it holds, and the command that applies them."""
    from hardneg.filters.human.store import ReviewStore, store_path

    labels = ReviewStore(run_dir).current() if store_path(run_dir).is_file() else {}
    n, who = sum(len(v) for v in labels.values()), len({a for v in labels.values() for a in v})
    estimate = " and put the audit's estimates in stats.md, the report and the card" if audit else ""
    return (
        f"review stopped: {n} labels on {len(labels)} items by {who} annotator{'s' if who != 1 else ''} kept; "
        f"next, `hardneg split {run_dir}` applies them{estimate}"
    )
