"""The Stage contract and the one runner every stage goes through (datatrove's `PipelineStep.run`).

A stage declares what it is, what it reads and writes, and what its output depends on, and implements
one method over one unit of work (`core/runner/unit.py`): a shard of the corpus (`sharded = True`) or the whole
corpus (the unit `"all"`):

    class PathsStage(Stage):
        name = "paths"
        version = "paths@v2"                     # bump when the output changes meaning
        reads = ("hygiene", "plausibility")      # upstream stages it reads (and only those)
        writes = outputs(PATHS_POSITIVES)        # its outputs: (stage, kind, record type) handles
        config = ("seed", "targets", "paths")    # config keys its output depends on

        def run(self, unit: Unit) -> None:
            for row in unit.records(HYGIENE_GRAPHS):
                ...
            unit.write("positives", rows)

The runner owns everything else, once for all stages:
- **fingerprints**: a hash of the version, the declared config values, the content of the declared data
  files, `extra_fingerprint` and the *output digests* of the stages it reads (a hash of their fingerprint
  and of every file they wrote; of the files alone for a `digest_is_content` stage), so a resumed run equals
  a fresh one: a changed key redoes exactly the stages that depend on it, and a stage redone for any reason
  (a lost folder, a touched input) redoes everything downstream of it unless its output came out the same;
- **skip-if-done**: a unit is done when its marker `_done/<unit>.json` exists (written last, atomically);
- **declared reads and writes** (`core/runner/unit.py`): a fingerprint never misses an input, a misspelt
  kind fails, each write's first row is checked against its kind's record type (`core/schema.py`); and
  **declared config**: `unit.cfg` and the hooks' `run.cfg` hold only the declared keys (`core/runner/config_view.py`);
- **rejects, stats, timings** per unit; once every unit is done, `finish` (what all units make together)
  and the summary `_stage.json`; **progress** hooks; **publishing** (`publishes`: the run's transaction);
- the cyclic garbage collector asleep while a unit or a `finish` runs (`core/runner/cycles.py`), and the
  memory a stage left free given back once it closes (`core/runner/memory.py`).
The first stage partitions the corpus: its unit's `meta["shards"]` lists every sharded stage's shards.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import orjson

from hardneg.core.config import RunConfig, config_value
from hardneg.core.io import (
    atomic_write_bytes,
    clean_temp_files,
    digest,
    file_digest,
    stat_key,
    write_json,
    write_jsonl,
)
from hardneg.core.runner import memory, stop
from hardneg.core.runner.config_view import ConfigView, SeenBy
from hardneg.core.runner.cycles import no_cycle_collection
from hardneg.core.runner.outputs import StageOutputs
from hardneg.core.runner.progress import Progress
from hardneg.core.runner.publish import open_transaction
from hardneg.core.runner.reasons import reason_counts
from hardneg.core.runner.unit import ALL, Unit
from hardneg.core.runner.waves import in_read_order, interleaved, waves
from hardneg.core.schema import outputs

log = logging.getLogger("hardneg")

Jobs = Callable[[list[tuple[str, str]]], Iterable[dict[str, Any]]]  # (stage, unit) jobs -> markers, in order
FINGERPRINT = "_fingerprint"
SUMMARY = "_stage.json"


class Stage:
    """One step of the pipeline. Subclasses set the class attributes and implement `run`."""

    name: ClassVar[str]
    version: ClassVar[str]
    reads: ClassVar[tuple[str, ...]] = ()
    reads_all: ClassVar[bool] = False  # reads every earlier stage (the final writer: rejects, stats)
    writes: ClassVar[Mapping[str, type]] = outputs({})  # output kind -> its record type (`core/schema.py`)
    config: ClassVar[tuple[str, ...]] = ()  # dotted RunConfig keys: "seed", "paths", "filters.scorers"
    data: ClassVar[tuple[str, ...]] = ()  # dotted RunConfig keys whose value is a data file
    sharded: ClassVar[bool] = True
    decision: ClassVar[bool] = False  # model-free and cheap: `hardneg split` may rerun it with new keys
    gpu: ClassVar[bool] = False  # runs models on a GPU when one is configured (one worker per GPU)
    reports: ClassVar[bool] = False  # reports on the stages it reads: redone whenever one of them reran
    publishes: ClassVar[tuple[str, ...]] = ()  # the run folder's outputs it writes (`core/runner/publish.py`)
    digest_is_content: ClassVar[bool] = False  # its output digest is its version and files, not its fingerprint

    def extra_fingerprint(self, run: Run) -> Any:
        """Anything else the output depends on (the ingest stage: the content of the scene graphs)."""
        return None

    def stale(self, run: Run) -> str | None:
        """Why the stored output no longer holds although the fingerprint matches (the ingest stage: an
        input image's content changed since it was read), or None. A stale stage is redone."""
        return None

    def validate(self, cfg: RunConfig) -> None:
        """Raise a ConfigError for a config this stage cannot run with; called before any work starts."""

    def prepare(self, run: Run, folder: Path) -> None:
        """Once per opening of the stage, before its units run (e.g. an index over the whole corpus)."""

    def run(self, unit: Unit) -> None:
        raise NotImplementedError

    def summarize(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        return {}  # extra fields of `_stage.json` from the units' markers

    def shards_per_unit(self, run: Run) -> int:
        """How many corpus shards one unit of a sharded stage covers (a search that shares graph reads)."""
        return 1

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Once every unit is done: what all units' outputs make together (an export's tables from its shards'
        rows), and extra fields of `_stage.json`. A run cut off here does it again."""
        return {}

    def __repr__(self) -> str:
        return f"<stage {self.name} {self.version}>"


class Run(StageOutputs):
    """A run folder with a config and the ordered stage list: fingerprints, opening, units, summaries."""

    check_every_row = False  # check every row written against its record type, not only each write's first

    def __init__(
        self,
        root: Path,
        cfg: RunConfig,
        stages: Sequence[Stage],
        progress: Progress | None = None,
        frozen_inputs: bool = False,
    ) -> None:
        self.root, self.cfg, self.stages = root, cfg, {s.name: s for s in stages}
        # True: the run folder is all there is (`hardneg split`): stages take what they recorded of the
        # inputs instead of reading them, so a moved run folder, or one whose inputs are gone, re-splits
        self.frozen_inputs = frozen_inputs
        self._stale: dict[str, str | None] = {}
        self.progress = progress or Progress()  # told of stages opening, units done, closing
        if len(self.stages) != len(stages):
            raise ValueError("two stages share a name")
        stages = in_read_order(stages)  # each after what it reads (`core/runner/waves.py`)
        self.order = [s.name for s in stages]
        self.reads = {s.name: tuple(self.order[:i]) if s.reads_all else s.reads for i, s in enumerate(stages)}
        self._config_fps: dict[str, str] = {}
        self._views: dict[str, ConfigView] = {}
        self._seen: dict[str, SeenBy] = {}
        self.published = tuple(dict.fromkeys(n for s in stages for n in s.publishes))

    # -- folders and fingerprints ------------------------------------------------------------------

    @property
    def work(self) -> Path:
        return self.root / "work"

    def stage_dir(self, name: str) -> Path:
        return self.work / name

    def config_fingerprint(self, name: str) -> str:
        """What the config and code say about a stage (about the stages it reads: their output digests)."""
        fp = self._config_fps.get(name)
        if fp is None:
            s = self.stages[name]
            fp = digest(
                s.version,
                {k: config_value(self.cfg, k) for k in s.config},
                {k: file_digest(self.cfg.resolve(Path(config_value(self.cfg, k)))) for k in s.data},
                s.extra_fingerprint(self),
            )
            self._config_fps[name] = fp
        return fp

    def stage_cfg(self, name: str) -> RunConfig:
        """The config as stage `name` may read it: its declared keys (`core/runner/config_view.py`)."""
        view = self._views.get(name)
        if view is None:
            s = self.stages[name]
            view = self._views[name] = ConfigView(self.cfg, (*s.config, *s.data), name)
        return view  # type: ignore[return-value]  # reads like the config it stands for

    def seen_by(self, name: str) -> Run:
        """The run as stage `name`'s hooks (`prepare`, `finish`, ...) see it: its config is `stage_cfg(name)`."""
        if name not in self._seen:
            self._seen[name] = SeenBy(self, name)
        return self._seen[name]  # type: ignore[return-value]  # reads like the run it stands for

    def fingerprint(self, name: str) -> str | None:
        """The config fingerprint plus the output digests of the stages it reads; None while one of
        those is not finished (this stage cannot be current then)."""
        upstream = {}
        for r in self.reads[name]:
            f = self.stage_dir(r) / SUMMARY
            if not f.exists():
                return None
            summary = orjson.loads(f.read_bytes())
            upstream[r] = digest(summary) if self.stages[name].reports else summary.get("digest")
        return digest(self.config_fingerprint(name), upstream)

    def stored_fingerprint(self, name: str) -> str | None:
        return f.read_text() if (f := self.stage_dir(name) / FINGERPRINT).exists() else None

    def summary(self, name: str) -> dict[str, Any]:
        if not (f := self.stage_dir(name) / SUMMARY).exists():
            raise RuntimeError(f"stage {name} has not finished in {self.root}")
        return orjson.loads(f.read_bytes())

    def is_complete(self, name: str) -> bool:
        """Finished for the current config and the current outputs of every stage it reads, with every
        file it wrote still there, and not stale."""
        f, fp = self.stage_dir(name) / SUMMARY, self.fingerprint(name)
        if fp is None or not f.exists() or orjson.loads(f.read_bytes()).get("fingerprint") != fp:
            return False
        return all(self._unit_ok(name, u) for u in self.units(name)) and self.stale(name) is None

    def stale(self, name: str) -> str | None:
        """`Stage.stale` of a finished stage, asked once per Run (it may read inputs)."""
        if name not in self._stale:
            done = (self.stage_dir(name) / SUMMARY).exists() and all(self._unit_ok(name, u) for u in self.units(name))
            self._stale[name] = self.stages[name].stale(self.seen_by(name)) if done else None
        return self._stale[name]

    def _unit_ok(self, name: str, unit: str) -> bool:
        """Done: its marker exists and every file it lists holds the bytes it was written with: a file whose
        stat is as written is trusted unread, any other is hashed, and one whose content changed (an edit,
        a disk error) makes the unit to do again. A file found intact under a new stat (a copied run folder)
        has its new stat recorded, so it is hashed once."""
        if not (m := self._marker(name, unit)).exists():
            return False
        marker, d, moved = orjson.loads(m.read_bytes()), self.stage_dir(name), False
        for rel, info in marker["files"].items():
            try:
                st = (d / rel).stat()
            except FileNotFoundError:
                return False
            if st.st_size != info["size"]:
                return False
            if info.get("stat") != stat_key(st):
                if file_digest(d / rel) != info["sha1"]:
                    log.warning("stage %s: %s changed since it was written; it is made again", name, rel)
                    return False
                info["stat"], moved = stat_key(st), True
        if moved and not self.frozen_inputs:  # `hardneg split` leaves the stages it does not run as they are
            write_json(m, marker, indent=False)
        return True

    def problems(self, name: str) -> list[str]:
        """Why a stage's stored work cannot be trusted under the current config (empty: it can): not
        finished, made under another config, a unit or a file missing or not the bytes it was written with."""
        if not ((d := self.stage_dir(name)) / SUMMARY).exists():
            return [f"stage {name} has not finished"]
        out = []
        units = self.summary(name)["units"]
        for unit in units:  # a damaged file first: it says more than the fingerprint it breaks
            if not (m := self._marker(name, unit)).exists():
                out.append(f"stage {name}: unit {unit} is missing")
                continue
            for rel, info in orjson.loads(m.read_bytes()).get("files", {}).items():
                if not (f := d / rel).exists():
                    out.append(f"stage {name}: {rel} is missing")
                elif f.stat().st_size != info["size"] or file_digest(f) != info["sha1"]:
                    out.append(f"stage {name}: {rel} changed since it was written")
        if out:
            return out
        if not self.is_complete(name):
            return [f"stage {name} was made under another config or version, or from other upstream output or inputs"]
        if units != self.units(name):
            return [f"stage {name} covers other shards than the ingest stage made"]
        return []

    # -- units ---------------------------------------------------------------------------------------

    def shards(self) -> list[str]:
        """The corpus's shard names, from the first stage's summary."""
        return list(self.summary(self.order[0])["meta"]["shards"])

    def units(self, name: str) -> list[str]:
        """`ALL`, the shards, or runs of `shards_per_unit` shards named `<first>-<last>` (one alone: itself)."""
        if not self.stages[name].sharded:
            return [ALL]
        shards, k = self.shards(), max(1, self.stages[name].shards_per_unit(self.seen_by(name)))
        groups = [shards[i : i + k] for i in range(0, len(shards), k)]
        return [g[0] if len(g) == 1 else f"{g[0]}-{g[-1]}" for g in groups]

    def unit_shards(self, unit: str) -> list[str]:
        """The shards a unit covers: itself, or a run of shards `<first>-<last>`."""
        first, _, last = unit.partition("-")
        return [unit] if not last else (s := self.shards())[s.index(first) : s.index(last) + 1]

    def _marker(self, name: str, unit: str) -> Path:
        return self.stage_dir(name) / "_done" / f"{unit}.json"

    def open(self, name: str) -> list[str]:
        """Open a stage for this config (reset if its fingerprint changed); the units still to do. Once, first."""
        d, fp = self.stage_dir(name), self.fingerprint(name)
        if fp is None:
            raise RuntimeError(f"stage {name}: the stages it reads ({', '.join(self.reads[name])}) are not finished")
        if self.stages[name].publishes:  # the old outputs stay whole until the run commits
            open_transaction(self.root, self.published, name)
        why = "inputs changed" if self.stored_fingerprint(name) != fp else self.stale(name)
        if d.exists() and why:
            log.info("stage %s: %s, redoing it", name, why)
            shutil.rmtree(d)
            self._stale.pop(name, None)
        if not d.exists():
            d.mkdir(parents=True)
            atomic_write_bytes(d / FINGERPRINT, fp.encode())
        clean_temp_files(d)
        self.stages[name].prepare(self.seen_by(name), d)
        pending = [u for u in self.units(name) if not self._unit_ok(name, u)]
        if pending:
            (d / SUMMARY).unlink(missing_ok=True)  # the summary describes the old units
            for u in pending:
                self._marker(name, u).unlink(missing_ok=True)
        self.progress.stage_start(name, len(self.units(name)), len(pending))
        return pending

    def run_unit(self, name: str, unit: str) -> dict[str, Any]:
        """Run one unit (skipped when done); returns its marker."""
        if self._unit_ok(name, unit):
            return orjson.loads(self._marker(name, unit).read_bytes())
        if self.stored_fingerprint(name) != self.fingerprint(name):
            raise RuntimeError(f"stage {name} is not open for this config: call Run.open first")
        u, t0 = Unit(self, self.stages[name], unit), time.perf_counter()
        with no_cycle_collection():  # its records make no cycles (`core/runner/cycles.py`)
            self.stages[name].run(u)
        seconds = time.perf_counter() - t0
        stop.check()  # a unit cut short by a stop that something swallowed is not stored as done
        write_jsonl(self.stage_dir(name) / "_rejects" / f"{unit}.jsonl", (r.to_json() for r in u.rejects))
        done = {
            "unit": unit, "seconds": round(seconds, 4), "items_in": u.items_in,
            "written": dict(sorted(u.written.items())),
            "rejects": len(u.rejects),
            "reasons": reason_counts((r.stage, r.reason) for r in u.rejects),  # the write stage's stats sum these
            "stats": dict(sorted(u.stats.items())),
            "meta": u.meta,
            "files": u.files,
        }  # fmt: skip
        write_json(self._marker(name, unit), done, indent=False)  # last: its presence marks the unit done
        return done

    def close(self, name: str) -> dict[str, Any]:
        """Write the stage summary once every unit is done; returns it. What the stage left free in this
        process (its finish, units run here) is given back first (`core/runner/memory.py`)."""
        units, markers = self.units(name), []
        for unit in units:
            if not (m := self._marker(name, unit)).exists():
                raise RuntimeError(f"stage {name}: unit {unit} is not done")
            markers.append(orjson.loads(m.read_bytes()))
        stats, written = Counter[str](), Counter[str]()
        for m in markers:
            stats.update(m["stats"])
            written.update(m["written"])
        files = sorted((u, f, info["sha1"]) for m in markers for u in [m["unit"]] for f, info in m["files"].items())
        summary = {
            "stage": name,
            "version": self.stages[name].version,
            "fingerprint": (fp := self.fingerprint(name)),
            "digest": digest(self.stages[name].version if self.stages[name].digest_is_content else fp, files),
            "units": units,
            "seconds": round(sum(m["seconds"] for m in markers), 4),
            "items_in": sum(m["items_in"] for m in markers),
            "written": dict(sorted(written.items())),
            "rejects": sum(m["rejects"] for m in markers),
            "stats": dict(sorted(stats.items())),
            "meta": markers[0]["meta"] if len(markers) == 1 else {},
        }
        t0 = time.perf_counter()
        with no_cycle_collection():
            seen = self.seen_by(name)
            summary |= self.stages[name].finish(seen, markers) | self.stages[name].summarize(seen, markers)
        memory.release(full=summary["seconds"] + time.perf_counter() - t0 >= memory.LONG_STAGE)
        stop.check()
        write_json(self.stage_dir(name) / SUMMARY, summary)
        self.progress.stage_done(name, summary)
        return summary

    def run_stage(self, name: str, pool: Jobs | None = None) -> dict[str, Any]:
        """Open, run every pending unit (here, or by `pool(jobs)`, which runs (stage, unit) jobs and yields
        their markers in order: `flows/runners.py`), close (`run_local` and `hardneg split`)."""
        return self.run_wave([name], pool)[name]

    def waves(self) -> list[list[str]]:
        """The stages in order, cut into waves that may run at once (`core/runner/waves.py`)."""
        return waves(self)

    def run_wave(self, names: list[str], pool: Jobs | None = None) -> dict[str, dict[str, Any]]:
        """`run_stage` of stages that read none of each other (`waves`): every pending unit of all of them
        goes to `pool` at once, so a worker free of one stage takes another's unit (two exports of one
        unit each run side by side); without a pool, one stage after the other. Returns their summaries."""
        out: dict[str, dict[str, Any]] = {}
        todo = []
        for name in names:
            if self.is_complete(name):
                self.progress.stage_skipped(name, summary := self.summary(name))
                out[name] = summary
            else:
                todo.append(name)
        pending = {name: self.open(name) for name in todo}
        jobs = interleaved(todo, pending) if pool else [(n, u) for n in todo for u in pending[n]]
        ran = (pool or (lambda jobs: (self.run_unit(stage, u) for stage, u in jobs)))(jobs) if jobs else ()
        left = {name: len(units) for name, units in pending.items()}
        for (name, _), marker in zip(jobs, ran, strict=True):
            self.progress.unit_done(name, marker)
            left[name] -= 1
            if not left[name]:  # its units come together: it closes while the others still run
                out[name] = self.close(name)
        for name in todo:
            if name not in out:  # no unit was pending
                out[name] = self.close(name)
        return {name: out[name] for name in names}
