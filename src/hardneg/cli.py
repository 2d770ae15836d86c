"""`hardneg` command line.

hardneg run [--config FILE|NAME] [--scene-graphs PATH --images DIR] [--output DIR] [--seed N] [--no-prefect]
hardneg split RUN [--config FILE] [--force]
hardneg serve --cron CRON --output DIR [--config FILE|NAME] [--scene-graphs PATH --images DIR]

Exit status: 0 done; 2 a user error (`HardnegError`: a bad config, a missing input, a busy run folder,
a folder that cannot be written), one line on stderr, found before Prefect starts and before any folder
is made wherever it can be; 3 a server that stays unreachable (rerun to resume); 1 a bug in hardneg: its
traceback, to report. The terminal shows a bar per stage, a line per finished stage and a closing
summary; Prefect's and httpx's logs stay out unless -v.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from hardneg.core.config import OpenAIConfig
from hardneg.core.config_files import read_mapping
from hardneg.core.errors import ConfigError, HardnegError
from hardneg.core.io import os_error_message
from hardneg.core.runner import stop
from hardneg.core.secrets import scrub_for, scrubbed
from hardneg.review.cli import add_commands, cmd_report, cmd_review

log = logging.getLogger("hardneg")


def prefect_env_defaults(verbose: bool = False) -> None:
    """Offline, quiet, ephemeral Prefect; explicit settings in the env win. Quiet in every process: the
    console handler of Prefect's own logging config (which the workers of the process and Dask task runners
    set up for themselves) shows warnings only, while the run logs still reach the server."""
    defaults = {
        "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO" if verbose else "WARNING",
        "PREFECT_HOME": str(Path.home() / ".hardneg" / "prefect"),  # never inside the repository or a run
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        # stage lines go to the server through the run logger; the terminal filter keeps them off the console
        "PREFECT_LOGGING_LOGGERS_PREFECT_FLOW_RUNS_LEVEL": "INFO",
        "PREFECT_LOGGING_LOGGERS_PREFECT_TASK_RUNS_LEVEL": "INFO",
        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
        "PREFECT_LOGGING_EXTRA_LOGGERS": "hardneg",  # hardneg's warnings inside tasks reach the server too
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(Path(tempfile.gettempdir()) / "hardneg-prefect-results"),
    }
    for k, v in defaults.items():
        os.environ.setdefault(k, v)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)  # Prefect makes only the last level


def prefect_starting() -> str:
    """The line `hardneg run` prints before Prefect starts: importing Prefect and starting its local server
    take 15-30 s in which Prefect itself says nothing, and a blank terminal looks hung."""
    if os.environ.get("PREFECT_API_URL"):
        return f"starting Prefect (server at {os.environ['PREFECT_API_URL']})..."
    return "starting Prefect (a local server takes ~20 s; --no-prefect runs without it)..."


def _overrides(args: argparse.Namespace) -> dict:
    o: dict = {}
    if args.scene_graphs is not None:
        o["inputs"] = {"scene_graphs": str(Path(args.scene_graphs).resolve())}
        if args.images is not None:
            o["inputs"]["images"] = str(Path(args.images).resolve())
    elif args.images is not None:
        raise ConfigError("--images needs --scene-graphs (the demo world brings its own images)")
    return o


def cmd_run(args: argparse.Namespace) -> int:
    from hardneg.flows.pipeline import plan, run_local
    from hardneg.flows.progress import Terminal, closing_summary
    from hardneg.flows.request import resolve_run

    overrides = _overrides(args)
    cfg, run_dir = resolve_run(args.config, args.output, args.seed, overrides)
    run = plan(cfg, run_dir)  # config, inputs and output checked before Prefect starts and before any folder exists
    t0 = time.perf_counter()
    with Terminal() as terminal:
        # A finished run leaves Prefect nothing to schedule: skip its start-up (15-30 s); every stage shows as done
        if args.no_prefect or all(run.is_complete(name) for name in run.order):
            manifest = run_local(cfg, run_dir, terminal)
        else:
            prefect_env_defaults(args.verbose)
            terminal.console.print(prefect_starting(), markup=False, highlight=False)
            from hardneg.flows.generate import run_flow

            manifest = run_flow(args.config, run_dir, args.seed, overrides, terminal)
    print(closing_summary(run_dir, manifest, time.perf_counter() - t0))
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from hardneg.exports.finecops import read_manifest
    from hardneg.flows.pipeline import resplit
    from hardneg.flows.progress import Terminal, export_counts, split_table

    root = Path(args.run).resolve()
    if not root.is_dir():
        raise HardnegError(f"run folder not found: {args.run}")
    overrides = read_mapping(Path(args.config)) if args.config is not None else {}
    before = read_manifest(root) if (root / "manifest.json").is_file() else None
    exports_before = export_counts(root)
    t0 = time.perf_counter()
    with Terminal() as terminal:
        outcome = resplit(root, overrides, force=args.force, progress=terminal)
    took = time.perf_counter() - t0
    for key, old, new in outcome.changed:
        print(f"  {key}: {'default' if old is None else old} -> {'default' if new is None else new}")
    if outcome.unchanged:
        why = "they keep and drop the same samples" if outcome.changed else "its outputs were made with these settings"
        print(f"nothing changed in {root} ({why}; {took:.1f}s): the run is left as it was")
        return 0
    print(f"re-split {root} in {took:.1f}s")
    if before is not None:
        print(split_table(before, outcome.manifest, exports_before, export_counts(root)))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from hardneg.flows.pipeline import plan
    from hardneg.flows.request import check_scheduled_inputs, resolve_run

    overrides = _overrides(args)
    cfg, run_dir = resolve_run(args.config, args.output, None, overrides)
    check_scheduled_inputs(cfg, args.config)
    plan(cfg, run_dir)  # fail now, not at 3 a.m.
    prefect_env_defaults(args.verbose)
    from hardneg.flows.deploy import check_cron, check_server, serve

    check_cron(args.cron)
    if not os.environ.get("PREFECT_API_URL"):
        raise HardnegError("schedules need a running Prefect server: `prefect server start`, then set PREFECT_API_URL")
    check_server(os.environ["PREFECT_API_URL"])
    what = "the demo world" if cfg.inputs.scene_graphs is None else cfg.inputs.scene_graphs.name
    print(
        f"serving hardneg-generate/hardneg-scheduled on {args.cron!r}: {what} into {run_dir} (Ctrl+C or SIGTERM stops)"
    )
    serve(args.config, str(run_dir), args.cron, overrides or None)
    print("hardneg serve: stopped")
    return 0


class _Quiet(logging.Filter):
    """Without -v, the console shows hardneg's warnings, not Prefect's, httpx's or the server's chatter."""

    CHATTY = ("prefect", "httpx", "httpcore", "uvicorn", "fastapi", "alembic", "sqlalchemy", "asyncio")

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.split(".")[0] not in self.CHATTY


def setup_logging(verbose: bool) -> None:
    """The CLI's one console handler on the root logger (replaced by each `main` call, so a test's
    captured stderr is the one written to)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "hardneg_cli", False)]:
        root.removeHandler(h)
    handler = logging.StreamHandler()
    handler.hardneg_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO if verbose else logging.WARNING)
    if not verbose:
        handler.addFilter(_Quiet())
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def _stopped(command: str, how: str) -> int:
    print(
        f"\nhardneg: stopped ({how}); finished work is kept and the outputs are as the last finished "
        f"{command} left them: rerun the same command to resume",
        file=sys.stderr,
    )
    return 143 if how == "SIGTERM" else 130


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hardneg", description="Build hard-negative grounding benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the pipeline (default: the embedded demo world)")
    run.add_argument(
        "--config", default=None, help="YAML config or a bundled one's name (demo, gqa, openai); default demo"
    )
    run.add_argument("--scene-graphs", default=None, help="GQA *_sceneGraphs.json file or folder of them")
    run.add_argument("--images", default=None, help="folder of <image_id>.jpg")
    run.add_argument("--output", default=None, help="run folder (default outputs/<config>-<hash>)")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--no-prefect", action="store_true", help="run the same stages without Prefect")
    run.add_argument("-v", "--verbose", action="store_true")
    split = sub.add_parser(
        "split",
        help="re-decide a finished run from its stored scores with new thresholds (never new samples or splits)",
    )
    split.add_argument("run", help="a run folder made by `hardneg run`")
    split.add_argument("--config", default=None, help="YAML with filters / refine thresholds to apply")
    split.add_argument("--force", action="store_true", help="apply even a rule that would drop everything")
    split.add_argument("-v", "--verbose", action="store_true")
    srv = sub.add_parser("serve", help="serve a cron-scheduled deployment of the run (needs a Prefect server)")
    srv.add_argument("--cron", required=True, help='cron schedule, e.g. "0 3 * * 1"')
    srv.add_argument("--config", default=None, help="YAML config, read when each run starts")
    srv.add_argument("--scene-graphs", default=None, help="GQA *_sceneGraphs.json file or folder of them")
    srv.add_argument("--images", default=None, help="folder of <image_id>.jpg")
    srv.add_argument("--output", required=True, help="the run folder every scheduled run resumes in")
    srv.add_argument("-v", "--verbose", action="store_true")
    add_commands(sub)  # report, review
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    scrub_for([OpenAIConfig().api_key_env])  # a config naming another key variable adds it when it is read
    from hardneg.backends.language import BackendUnavailable

    stopping = args.command in ("run", "split")  # serve and review stop by themselves on a signal
    try:
        handlers = {"run": cmd_run, "split": cmd_split, "serve": cmd_serve, "report": cmd_report, "review": cmd_review}
        if not stopping:
            return handlers[args.command](args)
        with stop.handled():
            try:
                return handlers[args.command](args)
            except Exception:
                stop.check()  # a stop that a C extension wrapped in an error of its own is still a stop
                raise
    except KeyboardInterrupt as e:  # Ctrl+C, or SIGTERM (`stop`): the run's cleanup has run by now
        if not stopping:
            raise
        return _stopped(args.command, stop.requested() or ("SIGTERM" if isinstance(e, stop.Terminated) else "Ctrl+C"))
    except BackendUnavailable as e:  # finished shards and cached answers are kept: rerun to resume
        said = scrubbed(str(e))
        print(
            f"hardneg: error: {said}\nhardneg: finished work is kept; rerun the same command to resume", file=sys.stderr
        )
        return 3
    except HardnegError as e:
        print(f"hardneg: error: {scrubbed(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:  # a folder read-only, full or missing: the user's to fix, not a bug to trace back
        where = getattr(args, "output", None) or getattr(args, "run", None)
        msg = os_error_message(e, Path(where) if where else None)
        print(f"hardneg: error: {msg}; then rerun the same command (finished work is kept)", file=sys.stderr)
        return 2
    except Exception:  # a bug, not the user's to fix: its traceback is what a report of it needs
        print(scrubbed(traceback.format_exc()), file=sys.stderr, end="")
        print(
            "hardneg: internal error (a bug in hardneg, not in your input); please report it with the traceback above",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
