"""`hardneg` command line.

hardneg run [--config FILE] [--scene-graphs PATH --images DIR] [--output DIR] [--seed N] [--no-prefect]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from core.config import DEFAULT_CONFIG, REPO_ROOT, load_config
from core.vocab import load_yaml_text

log = logging.getLogger("hardneg")


def prefect_env_defaults() -> None:
    """Offline, quiet, ephemeral Prefect (see ENVIRONMENT.md); explicit settings in the env win."""
    defaults = {
        "PREFECT_HOME": str(REPO_ROOT / ".prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(Path(tempfile.gettempdir()) / "hardneg-prefect-results"),
    }
    for k, v in defaults.items():
        os.environ.setdefault(k, v)


def _overrides(args: argparse.Namespace) -> dict:
    o: dict = {}
    if args.scene_graphs is not None:
        o["inputs"] = {"scene_graphs": str(Path(args.scene_graphs).resolve())}
        if args.images is not None:
            o["inputs"]["images"] = str(Path(args.images).resolve())
    elif args.images is not None:
        raise ValueError("--images needs --scene-graphs (the demo world brings its own images)")
    if args.seed is not None:
        o["seed"] = args.seed
    return o


def cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _overrides(args))
    if args.output is not None:
        run_dir = Path(args.output).resolve()
    else:
        stem = cfg.name or f"{Path(args.config or DEFAULT_CONFIG).stem}-{cfg.fingerprint()[:8]}"
        run_dir = REPO_ROOT / "outputs" / stem
    t0 = time.perf_counter()
    if args.no_prefect:
        from core.pipeline import run_local

        manifest = run_local(cfg, run_dir)
    else:
        prefect_env_defaults()
        from flows.generate import run_generate

        manifest = run_generate(cfg, run_dir)
    c = manifest["counts"]
    print(f"run folder: {run_dir}")
    print(
        f"images kept {c['ingest'].get('images_kept', 0)}, rejected {c['ingest'].get('images_rejected', 0)}; "
        f"positives {c['positives']} (of {c['positives_candidates']} candidates); "
        f"{time.perf_counter() - t0:.1f}s"
    )
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from core.pipeline import resplit

    overrides: dict = {}
    if args.config is not None:
        try:
            overrides = load_yaml_text(Path(args.config).read_text()) or {}
        except FileNotFoundError:
            raise ValueError(f"config file not found: {args.config}") from None
        if not isinstance(overrides, dict):
            raise ValueError(f"config {args.config} must be a mapping of keys")
    t0 = time.perf_counter()
    manifest = resplit(Path(args.run).resolve(), overrides)
    c = manifest["counts"]
    print(
        f"re-split {args.run} in {time.perf_counter() - t0:.1f}s: "
        f"positives {c['positives']}, negatives {c['negatives']}"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    prefect_env_defaults()
    if not os.environ.get("PREFECT_API_URL"):
        raise ValueError("schedules need a running Prefect server: `prefect server start`, then set PREFECT_API_URL")
    load_config(args.config)  # fail now, not at 3 a.m.
    from flows.deploy import serve

    config = str(Path(args.config).resolve()) if args.config else None
    serve(config, str(Path(args.output).resolve()), args.cron)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hardneg", description="Build hard-negative grounding benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the pipeline (default: the embedded demo world)")
    run.add_argument("--config", type=Path, default=None, help="YAML config (default configs/demo.yaml)")
    run.add_argument("--scene-graphs", default=None, help="GQA *_sceneGraphs.json file or folder of them")
    run.add_argument("--images", default=None, help="folder of <image_id>.jpg")
    run.add_argument("--output", default=None, help="run folder (default outputs/<config>-<hash>)")
    run.add_argument("--seed", type=int, default=None)
    run.add_argument("--no-prefect", action="store_true", help="run the same stages without Prefect")
    run.add_argument("-v", "--verbose", action="store_true")
    split = sub.add_parser("split", help="re-apply thresholds and split proportions to a run's stored scores")
    split.add_argument("run", help="a run folder made by `hardneg run`")
    split.add_argument("--config", default=None, help="YAML with splits / filters / refine thresholds to apply")
    split.add_argument("-v", "--verbose", action="store_true")
    srv = sub.add_parser("serve", help="serve a cron-scheduled deployment of the run (needs a Prefect server)")
    srv.add_argument("--cron", required=True, help='cron schedule, e.g. "0 3 * * 1"')
    srv.add_argument("--config", default=None, help="YAML config, read when each run starts")
    srv.add_argument("--output", required=True, help="the run folder every scheduled run resumes in")
    srv.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    from backends.language import BackendUnavailable

    try:
        return {"run": cmd_run, "split": cmd_split, "serve": cmd_serve}[args.command](args)
    except ValueError as e:
        print(f"hardneg: error: {e}", file=sys.stderr)
        return 2
    except BackendUnavailable as e:  # finished shards and cached answers are kept: rerun to resume
        print(f"hardneg: error: {e}\nhardneg: finished work is kept; rerun the same command to resume", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
