"""The ingest stage: stream the scene graphs, validate each, check its image, cut the corpus into shards.

The first stage of every run: its summary lists the shards every sharded stage runs over, and the
corpus vocabulary (names, attributes, relations with counts) that later stages draw replacements from.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from hardneg.core.gqa import load_graphs, validate_graph
from hardneg.core.ids import printable_id
from hardneg.core.records import Reject, SceneGraph
from hardneg.core.runfolder import image_file, resolve_inputs
from hardneg.core.stage import ALL, Run, Stage, Unit


def graph_to_row(g: SceneGraph) -> dict[str, Any]:
    return {"image_id": g.image_id, "graph": g.to_gqa()}


def row_to_graph(row: dict[str, Any]) -> SceneGraph:
    check = validate_graph(row["image_id"], row["graph"])
    if check.graph is None:  # the shard was written from a validated graph: this is corruption
        raise ValueError(f"work shard holds an invalid graph {row['image_id']}: {check.reason}")
    return check.graph


DRAFT_SCALE = 8  # JPEGs decode at 1/8 size: every byte of the stream is still read, at a fraction of the cost


def check_image(images: Path, graph: SceneGraph) -> str | None:
    """None when the graph's image exists, decodes fully and has the graph's size, else why not.

    `Image.verify` does not decode, so a truncated JPEG would pass it: the image is decoded (`draft`
    makes libjpeg decode a JPEG at 1/8 size, bounding the cost). An unreadable folder or file is an
    OS error and stops the run; a file that does not decode is this image's reject."""
    path = image_file(images, graph.image_id)
    if not path.is_file():
        return f"image file missing or not a file: {path.name}"
    with path.open("rb") as f:
        try:
            with Image.open(f) as im:
                size = im.size
                if im.format == "JPEG":
                    im.draft(im.mode, (max(1, size[0] // DRAFT_SCALE), max(1, size[1] // DRAFT_SCALE)))
                im.load()
        except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError) as e:
            return f"image file corrupt: {path.name}: {e}"
        except Exception as e:  # a decoder's internal error on hostile bytes (struct.error, IndexError, ...)
            return f"image file corrupt: {path.name}: {type(e).__name__}: {e}"
    if size != (graph.width, graph.height):
        return f"image size {size[0]}x{size[1]} differs from the graph's {graph.width}x{graph.height}"
    return None


def _input_stamp(path: Path) -> list[Any]:
    """Cheap identity of an input file or folder: names, sizes, mtimes (never the content of GBs)."""
    if path.is_dir():
        return sorted(
            (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir() if p.name.endswith(".json")
        )
    st = path.stat()
    return [path.name, st.st_size, st.st_mtime_ns]


class IngestStage(Stage):
    name = "ingest"
    version = "ingest@v1"
    config = ("inputs", "demo", "shard_size")
    sharded = False

    def extra_fingerprint(self, run: Run) -> Any:
        if run.cfg.inputs.scene_graphs is None:  # the demo world lives in the run: its config identifies it
            return "demo"
        sg, _ = resolve_inputs(run.root, run.cfg)
        return _input_stamp(sg)

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        sg, images = resolve_inputs(unit.root, cfg)
        shards: list[str] = []
        buf: list[dict[str, Any]] = []
        repairs: Counter = Counter()
        vocab: dict[str, Counter] = {"names": Counter(), "attributes": Counter(), "relations": Counter()}

        def flush() -> None:
            shard = f"{len(shards):05d}"
            unit.write("graphs", buf, shard=shard)
            shards.append(shard)
            buf.clear()

        for check in load_graphs(sg):
            unit.items_in += 1
            if check.graph is None:
                unit.reject(Reject("ingest", check.reason or "invalid", printable_id(check.image_id)))
                continue
            repairs.update(check.repairs)
            if images is not None and (why := check_image(images, check.graph)):
                unit.reject(Reject("ingest", why, check.image_id))
                continue
            buf.append(graph_to_row(check.graph))
            for obj in check.graph.objects.values():
                vocab["names"][obj.name] += 1
                vocab["attributes"].update(obj.attributes)
                vocab["relations"].update(r.name for r in obj.relations)
            if len(buf) >= cfg.shard_size:
                flush()
        if buf:
            flush()
        unit.stats.update({"images_read": unit.items_in, "images_kept": unit.items_in - len(unit.rejects)})
        unit.stats["images_rejected"] = len(unit.rejects)
        unit.meta.update(
            shards=shards,
            repairs=dict(sorted(repairs.items())),
            vocab={k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in vocab.items()},
        )


def corpus_vocab(summary: dict[str, Any]) -> dict[str, Counter]:
    """The corpus vocabulary from the ingest stage's summary."""
    return {k: Counter(v) for k, v in summary["meta"]["vocab"].items()}


__all__ = ["ALL", "IngestStage", "check_image", "corpus_vocab", "graph_to_row", "row_to_graph"]
