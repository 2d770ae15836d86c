"""The ingest stage: stream the scene graphs, validate each, check its image, cut the corpus into shards.

The first stage of every run, and the only one that reads the inputs (`core/gqa/inputs.py`): its summary
lists the shards every sharded stage runs over, and the corpus vocabulary (names, attributes, relations
with counts) that later stages draw replacements from; each image it keeps goes into the run's photo
store, the bytes it checked, which is all any later stage reads.

A resumed run sees every change to its inputs by content: the fingerprint holds a digest of the scene-graph
files' bytes, and the `photos` rows record each image's digest, so a changed or newly present image
redoes ingest (`stale`), while a touched, copied or re-linked but unchanged input redoes nothing. The
stage's output digest is its rows alone (`digest_is_content`): a rerun that reads the same content
redoes nothing after it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from io import BytesIO
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from hardneg.core.errors import EmptyInput, InputError
from hardneg.core.gqa.inputs import bytes_digest, graphs_digest, photo_record, photo_store, photos_changed
from hardneg.core.gqa.loader import GraphLimits, load_graphs
from hardneg.core.gqa.run_inputs import image_file, input_paths
from hardneg.core.ids import printable_id
from hardneg.core.io import atomic_write_bytes
from hardneg.core.records import Reject, SceneGraph
from hardneg.core.rows import INGEST_GRAPHS, INGEST_PHOTOS
from hardneg.core.runner.stage import ALL, Run, Stage, Unit
from hardneg.core.schema import outputs


def graph_to_row(g: SceneGraph) -> dict[str, Any]:
    return {"image_id": g.image_id, "graph": g.to_gqa()}


DRAFT_SCALE = 8  # JPEGs decode at 1/8 size: every byte of the stream is still read, at a fraction of the cost
JPEG_FORMATS = ("JPEG", "MPO")  # MPO: a JPEG with a multi-picture extension, as many cameras write
# Greyscale is kept (every later reader converts to RGB); CMYK is refused: converting it without its colour
# profile shifts colours, and colour words are what many negatives change.
IMAGE_MODES = ("RGB", "L")
MAX_IMAGE_BYTES = 256 << 20  # an image is read whole (to hash and decode it): far above any real photo


def unreadable_input(path: Path, e: OSError) -> InputError:
    """The one-line user error for an input the run cannot read: its permissions are the fix, not --output."""
    why = e.strerror or str(e)
    return InputError(
        f"cannot read the input {path}: {why}; make it readable for this user, then rerun the same command"
    )


def read_image(path: Path) -> bytes | str:
    """The bytes of an image file, or why it is refused: missing, a symlink, not a regular file, too large.
    A symlink is refused wherever it points: its target may lie outside the folder, and later stages and
    `data/` would read and link it; `O_NOFOLLOW` refuses one made after the check too (and `O_NONBLOCK` a
    FIFO). A file that is there but cannot be read stops the run with a line naming it as an input."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            return f"image file is a symlink: {path.name} (copy the image into the images folder)"
        if not stat.S_ISREG(st.st_mode):
            return f"image file missing: {path.name} is {'a folder' if stat.S_ISDIR(st.st_mode) else 'no regular file'}"
        if st.st_size > MAX_IMAGE_BYTES:
            return f"image file is {st.st_size} bytes (at most {MAX_IMAGE_BYTES}): {path.name}"
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as f:  # a FIFO never blocks
            return f.read(MAX_IMAGE_BYTES + 1)
    except FileNotFoundError:
        return f"image file missing: {path.name}"
    except OSError as e:
        if e.errno == errno.ELOOP:  # replaced by a symlink since the check
            return f"image file is a symlink: {path.name} (copy the image into the images folder)"
        raise unreadable_input(path, e) from e


def image_problem(data: bytes, name: str, graph: SceneGraph) -> str | None:
    """None when `data` is a JPEG in RGB or greyscale that decodes fully and has the graph's size, else why not.

    `Image.verify` does not decode, so a truncated JPEG would pass it: the image is decoded (`draft` makes
    libjpeg decode at 1/8 size, bounding the cost). The format and mode are read from the header, before
    any decoding: other formats are never decoded at all."""
    try:
        with Image.open(BytesIO(data)) as im:
            if im.format not in JPEG_FORMATS:
                return f"image file is not a JPEG ({im.format} data): {name}"
            if im.mode not in IMAGE_MODES:
                return f"image file is a {im.mode} JPEG, not RGB or greyscale: {name} (convert it to RGB)"
            size = im.size
            im.draft(im.mode, (max(1, size[0] // DRAFT_SCALE), max(1, size[1] // DRAFT_SCALE)))
            im.load()
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, SyntaxError, ValueError) as e:
        return f"image file corrupt: {name}: {e}"
    except Exception as e:  # a decoder's internal error on hostile bytes (struct.error, IndexError, ...)
        return f"image file corrupt: {name}: {type(e).__name__}: {e}"
    if size != (graph.width, graph.height):
        return f"image size {size[0]}x{size[1]} differs from the graph's {graph.width}x{graph.height}"
    return None


def inspect_image(images: Path, graph: SceneGraph) -> tuple[str | None, bytes | None]:
    """(why the graph's image is refused, or None; the bytes read, or None when none could be): the file
    is read once, and the bytes that were checked are the ones the run keeps (its digest and its copy)."""
    path = image_file(images, graph.image_id)
    data = read_image(path)
    if isinstance(data, str):
        return data, None
    if len(data) > MAX_IMAGE_BYTES:  # it grew since its size was read
        return f"image file is over {MAX_IMAGE_BYTES} bytes: {path.name}", data
    return image_problem(data, path.name, graph), data


def check_image(images: Path, graph: SceneGraph) -> str | None:
    """Why the graph's image is refused, or None when it is fine (`inspect_image` without the bytes)."""
    return inspect_image(images, graph)[0]


def keep_photo(store: Path, image_id: str, data: bytes) -> None:
    """The run's own copy of a checked image (`core/gqa/inputs.py`), written atomically."""
    atomic_write_bytes(store / f"{image_id}.jpg", data)


class IngestStage(Stage):
    name = "ingest"
    version = "ingest@v3"  # v3: the run's photo store and the photos' record; the fingerprint, content only
    writes = outputs(INGEST_GRAPHS, INGEST_PHOTOS)  # one graphs file per shard
    config = ("inputs", "demo", "shard_size")
    sharded = False
    digest_is_content = True  # a rerun that read the same content redoes nothing after it

    def extra_fingerprint(self, run: Run) -> Any:
        """The scene graphs' content. A run that does not read its inputs (`hardneg split`) takes the digest
        its ingest recorded: it reads the run folder only."""
        if run.cfg.inputs.scene_graphs is None:  # the demo world lives in the run: its config identifies it
            return "demo"
        if run.frozen_inputs:
            return self._recorded_digest(run)
        return graphs_digest(input_paths(run.root, run.cfg)[0])

    @staticmethod
    def _recorded_digest(run: Run) -> str | None:
        try:
            return run.summary("ingest")["meta"].get("graphs_digest")
        except RuntimeError:  # not finished: the stage is not complete either way
            return None

    def stale(self, run: Run) -> str | None:
        """Why the stored ingest no longer matches the images it read (`photos_changed`), or None."""
        if run.frozen_inputs or run.cfg.inputs.scene_graphs is None:  # the demo world: built from its config
            return None
        images = input_paths(run.root, run.cfg)[1]
        if images is None:
            return None
        if not images.is_dir():
            return f"images folder {images} is gone"
        return photos_changed(images, run.read_all(INGEST_PHOTOS))

    def finish(self, run: Run, units: list[dict[str, Any]]) -> dict[str, Any]:
        """Nothing to build on is the user's to fix, not a benchmark of nothing (`EmptyInput`)."""
        stats = units[0]["stats"]
        if stats.get("images_kept", 0) == 0:
            sg = input_paths(run.root, run.cfg)[0]
            if stats.get("images_read", 0) == 0:
                raise EmptyInput(f"the scene graphs {sg.name} hold no image: nothing to build a benchmark from")
            reasons = "; ".join(f"{n} x {why}" for why, n in run.common_reasons(self.name))
            raise EmptyInput(
                f"none of the {stats['images_read']} images in {sg.name} could be used ({reasons}); "
                "fix the inputs and run again"
            )
        return {}

    def run(self, unit: Unit) -> None:
        cfg = unit.cfg
        sg, images = input_paths(unit.root, cfg)
        store = photo_store(unit.root)
        shards: list[str] = []
        buf: list[dict[str, Any]] = []
        photos: list[dict[str, Any]] = []
        repairs: Counter = Counter()
        vocab: dict[str, Counter] = {"names": Counter(), "attributes": Counter(), "relations": Counter()}

        def flush() -> None:
            shard = f"{len(shards):05d}"
            unit.write("graphs", buf, shard=shard)
            shards.append(shard)
            buf.clear()

        for check in load_graphs(sg, limits=GraphLimits.of(cfg.inputs)):
            unit.items_in += 1
            if check.graph is None:
                unit.reject(Reject("ingest", check.reason or "invalid", printable_id(check.image_id)))
                continue
            repairs.update(check.repairs)
            row = graph_to_row(check.graph)
            if images is not None:
                seen = photo_record(check.image_id, image_file(images, check.image_id))  # stat before the read
                why, data = inspect_image(images, check.graph)
                digest = bytes_digest(data) if data is not None else None
                photos.append(seen | {"digest": digest})
                if why:
                    unit.reject(Reject("ingest", why, check.image_id))
                    continue
                assert data is not None and digest is not None
                keep_photo(store, check.image_id, data)
                row["image_digest"] = digest
            buf.append(row)
            objects = check.graph.objects.values()  # counted a graph at a time: three updates, not three an object
            vocab["names"].update(o.name for o in objects)
            vocab["attributes"].update(a for o in objects for a in o.attributes)
            vocab["relations"].update(r.name for o in objects for r in o.relations)
            if len(buf) >= cfg.shard_size:
                flush()
        if buf:
            flush()
        if images is not None:
            unit.write("photos", photos)
        unit.stats.update({"images_read": unit.items_in, "images_kept": unit.items_in - len(unit.rejects)})
        unit.stats["images_rejected"] = len(unit.rejects)
        unit.meta.update(
            shards=shards,
            repairs=dict(sorted(repairs.items())),
            vocab={k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))) for k, v in vocab.items()},
        )
        if cfg.inputs.scene_graphs is not None:
            unit.meta["graphs_digest"] = graphs_digest(sg)


def corpus_vocab(summary: dict[str, Any]) -> dict[str, Counter]:
    """The corpus vocabulary from the ingest stage's summary."""
    return {k: Counter(v) for k, v in summary["meta"]["vocab"].items()}


__all__ = ["ALL", "IngestStage", "check_image", "corpus_vocab", "graph_to_row"]
