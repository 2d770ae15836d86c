"""Streaming loader for GQA scene graphs (SPEC section 2), with per-image validation.

GQA's `train_sceneGraphs.json` is ONE JSON object mapping 74,942 image ids to graphs, hundreds of MB.
We never hold it whole: the file is read in binary chunks, a numpy scanner finds the byte span of each
top-level `"image_id": {...}` member, and orjson parses one member at a time, so memory stays bounded
by the chunk size plus one image's graph whatever the file size.

Two kinds of defect, handled differently:
- File-level (top level not an object, invalid JSON, a truncated file, trailing garbage): once the
  syntax is broken no later boundary can be trusted (one unbalanced quote shifts every member after
  it), so `iter_raw_graphs` first yields every complete image before the defect and then raises a
  `ValueError` naming the file and byte offset. The caller sees all good data and still fails loudly:
  a truncated download must not pass for a smaller dataset.
- Image-level (a malformed graph): `validate_graph` rejects the image with a reason, or repairs it
  where the repair is obvious and counts the repair; the run goes on (STYLE habit 2).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from core.records import Reject, Relation, SceneGraph, SceneObject

log = logging.getLogger(__name__)

REJECT_STAGE = "gqa_load"
DEFAULT_CHUNK = 8 << 20  # bytes per read
_SCAN_BLOCK = 256 << 10  # bytes scanned at once: its arrays take ~3x this, and small blocks stay in cache
DEFAULT_MAX_MEMBER = 64 << 20  # bytes; a GQA graph is ~5-50 KB, a bigger one means broken quoting

# The scanner's byte classes (0 = uninteresting). `[`/`{` and `]`/`}` share a class: depth counts
# both, and mismatched bracket kinds are caught when orjson parses the member.
_QUOTE, _OPEN, _CLOSE, _COMMA = 1, 2, 3, 4
_CLASS_OF = {
    ord('"'): _QUOTE,
    ord("{"): _OPEN,
    ord("["): _OPEN,
    ord("}"): _CLOSE,
    ord("]"): _CLOSE,
    ord(","): _COMMA,
}
_CLASS_TABLE = bytes(_CLASS_OF.get(b, 0) for b in range(256))  # for bytes.translate: one C pass
_DEPTH_DELTA = np.array([0, 0, 1, -1, 0], dtype=np.int32)  # indexed by class
_BACKSLASH = ord("\\")
_WS = b" \t\r\n"


# --------------------------------------------------------------------------------------------
# Streaming: byte spans of top-level members


@dataclass(slots=True)
class _ScanState:
    """What the scanner carries across a chunk boundary."""

    depth: int = 0  # bracket nesting; 1 = directly inside the top-level object
    in_string: bool = False
    backslashes: int = 0  # length of the backslash run that ended the previous chunk


def _scan(chunk: bytes, st: _ScanState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions, classes and depth-after of the brackets and commas of `chunk` outside strings.

    Vectorised, a few byte-wide passes: classify bytes (one translate), mark string bytes with a
    running XOR of the quote mask, keep structural bytes outside strings. Updates `st` to the state
    at the end of the chunk.
    """
    classes = np.frombuffer(chunk.translate(_CLASS_TABLE), dtype=np.uint8)
    quotes = (classes == _QUOTE).view(np.uint8)
    if st.backslashes or b"\\" in chunk:  # memchr; real GQA files have (almost) no backslashes
        _clear_escaped_quotes(chunk, quotes, st.backslashes)
    # inside[i] = parity of the quotes up to i: 1 on an opening quote and the string bytes after it.
    inside = np.bitwise_xor.accumulate(quotes)
    del quotes
    if st.in_string:
        inside ^= 1
    if len(inside):
        st.in_string = bool(inside[-1])
    outside = inside == 0
    del inside
    outside &= classes > _QUOTE
    spos = np.flatnonzero(outside)
    del outside
    scls = classes[spos]
    depth_after = np.cumsum(_DEPTH_DELTA[scls], dtype=np.int32)
    depth_after += st.depth
    if len(depth_after):
        st.depth = int(depth_after[-1])
    if chunk.endswith(b"\\"):
        run = len(chunk) - len(chunk.rstrip(b"\\"))
        st.backslashes = st.backslashes + run if run == len(chunk) else run
    else:
        st.backslashes = 0
    return spos, scls, depth_after


def _clear_escaped_quotes(chunk: bytes, quotes: np.ndarray, carried: int) -> None:
    """Zero `quotes` where a quote is escaped by an odd run of backslashes (the rare slow path).

    `carried` is the length of the backslash run that ended the previous chunk. Outside strings a
    backslash is invalid JSON anyway; orjson reports it when it parses the member.
    """
    data = np.frombuffer(chunk, dtype=np.uint8)
    cand = np.flatnonzero(quotes[1:] & (data[:-1] == _BACKSLASH)) + 1
    if len(quotes) and quotes[0] and carried:
        cand = np.concatenate(([0], cand))
    for q in cand.tolist():
        j = q - 1
        while j >= 0 and chunk[j] == _BACKSLASH:
            j -= 1
        run = q - 1 - j + (carried if j < 0 else 0)  # the run may continue from the previous chunk
        if run & 1:
            quotes[q] = 0


def _describe_start(byte: int) -> str:
    return {ord("["): "an array", ord('"'): "a string"}.get(byte, f"{chr(byte)!r}")


def _byte_offset(data: bytes, char_pos: int) -> int:
    """orjson reports character positions; turn one into a byte offset (error path only)."""
    return len(data.decode("utf-8", "replace")[:char_pos].encode("utf-8"))


class _FileStream:
    """Splits one file into (image_id, raw_value) members; see the module docstring for errors."""

    def __init__(self, path: Path, chunk_size: int, max_member: int) -> None:
        self.path = path
        self.chunk_size = chunk_size
        self.max_member = max_member

    def _error(self, offset: int, what: str) -> ValueError:
        return ValueError(f"{self.path}, byte {offset}: {what}")

    def _blocks(self, f: BinaryIO) -> Iterator[bytes]:
        # One reused read buffer: `f.read(n)` would allocate n bytes per call and briefly hold two.
        buf = bytearray(self.chunk_size)
        view = memoryview(buf)
        while n := f.readinto(buf):
            for i in range(0, n, _SCAN_BLOCK):
                yield bytes(view[i : min(i + _SCAN_BLOCK, n)])

    def _parse_member(self, data: bytes | memoryview, start: int) -> tuple[str, Any]:
        # Wrapping the member in braces lets orjson check the key, the colon and the value at once.
        doc = b"".join((b"{", data, b"}"))
        try:
            obj = orjson.loads(doc)
        except orjson.JSONDecodeError as e:
            offset = start + max(_byte_offset(doc, e.pos) - 1, 0)
            raise self._error(offset, f"invalid JSON ({e.msg})") from None
        if len(obj) != 1:  # only an empty member (a stray comma) gets here
            raise self._error(start, "empty member (stray comma)")
        ((key, value),) = obj.items()
        return key, value

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        st = _ScanState()
        parts: list[bytes] = []  # bytes of the current member read in earlier chunks
        held = 0  # len of those bytes
        member_start = -1  # file offset of the current member's first byte
        offset = 0  # file offset of the current chunk
        started = ended = False
        members = 0
        with self.path.open("rb") as f:
            for chunk in self._blocks(f):
                if ended:
                    if chunk.strip(_WS):
                        raise self._error(offset + len(chunk) - len(chunk.lstrip(_WS)), "trailing data")
                    offset += len(chunk)
                    continue
                base = 0  # where this chunk's member bytes begin
                if not started:
                    body = chunk.lstrip(_WS)
                    if not body:
                        offset += len(chunk)
                        continue
                    base = len(chunk) - len(body)
                    if body[0] != ord("{"):
                        raise self._error(
                            offset + base,
                            f"top level must be an object of image id -> graph, got {_describe_start(body[0])}",
                        )
                    started, st.depth = True, 1
                    base += 1
                    member_start = offset + base
                    chunk = chunk[base:]
                    offset += base
                spos, scls, depth = _scan(chunk, st)
                ends = np.flatnonzero(depth == 0)  # only the top-level `}` brings depth back to 0
                stop = int(ends[0]) if len(ends) else len(spos)
                bounds = spos[:stop][(scls[:stop] == _COMMA) & (depth[:stop] == 1)].tolist()
                if len(ends):
                    end_pos = int(spos[stop])
                    if chunk[end_pos] != ord("}"):
                        raise self._error(offset + end_pos, "']' closes the top-level object")
                    bounds.append(end_pos)
                prev = member_start - offset  # negative while the member began in an earlier chunk
                view = memoryview(chunk)
                for i, p in enumerate(bounds):
                    if parts:
                        parts.append(chunk[:p])
                        data: bytes | memoryview = b"".join(parts)
                        parts, held = [], 0
                    else:
                        data = view[prev:p]
                    is_end = len(ends) > 0 and i == len(bounds) - 1
                    if not (is_end and members == 0 and not bytes(data).strip(_WS)):  # `{}`: no images
                        yield self._parse_member(data, member_start)
                        members += 1
                    del data  # hold no reference to this chunk while the next one is read
                    member_start = offset + p + 1
                    prev = p + 1
                del view
                if len(ends):
                    ended = True
                    rest = chunk[bounds[-1] + 1 :]
                    if rest.strip(_WS):
                        pos = bounds[-1] + 1 + len(rest) - len(rest.lstrip(_WS))
                        raise self._error(offset + pos, "trailing data")
                else:
                    tail = chunk[max(prev, 0) :]
                    parts.append(tail)
                    held += len(tail)
                    if held > self.max_member:
                        raise self._error(
                            member_start,
                            f"member longer than {self.max_member} bytes (unbalanced quote?)",
                        )
                offset += len(chunk)
        if not started:
            raise self._error(offset, "no JSON object (empty file)")
        if not ended:
            data = b"".join(parts)
            # The image before the cut is complete when its value's closing bracket was read; a
            # scalar value might have lost digits, so it is not yielded.
            if st.depth == 1 and not st.in_string and data.rstrip(_WS).endswith((b"}", b"]")):
                yield self._parse_member(data, member_start)
            where = "inside a string" if st.in_string else f"at nesting depth {st.depth}"
            raise self._error(
                offset, f"truncated file: it ends {where}, in the image that starts at byte {member_start}"
            )


def graph_files(path: str | Path) -> list[Path]:
    """The file itself, or a folder's `*sceneGraphs*.json` files sorted by name."""
    p = Path(path)
    if p.is_dir():
        files = sorted(q for q in p.glob("*sceneGraphs*.json") if q.is_file())
        if not files:
            raise ValueError(f"{p}: folder holds no *sceneGraphs*.json file")
        return files
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such scene-graph file or folder")
    return [p]


def iter_raw_graphs(
    path: str | Path, chunk_size: int = DEFAULT_CHUNK, *, max_member_bytes: int = DEFAULT_MAX_MEMBER
) -> Iterator[tuple[str, Any]]:
    """Yield `(image_id, raw_value)` in file order, streaming; `raw_value` is unvalidated.

    `path` is a `*_sceneGraphs.json` file, or a folder: then every `*sceneGraphs*.json` in it, sorted
    by name. A broken file yields every complete image before the break, then raises `ValueError`
    with the file and byte offset. A duplicated image id is yielded twice (orjson.loads of the whole
    file would keep the last); `load_graphs` rejects the repeat.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive number of bytes, got {chunk_size}")
    for file in graph_files(path):
        log.info("reading scene graphs from %s", file)
        yield from _FileStream(file, chunk_size, max_member_bytes)


# --------------------------------------------------------------------------------------------
# Validation: one image's raw value -> SceneGraph, a reject reason, and counted repairs


@dataclass(frozen=True, slots=True)
class GraphCheck:
    """The outcome of validating one image: a graph (maybe repaired) or a reject reason."""

    image_id: str
    graph: SceneGraph | None
    reason: str | None = None
    repairs: dict[str, int] = field(default_factory=dict)  # repair kind -> count

    @property
    def ok(self) -> bool:
        return self.graph is not None

    def to_reject(self) -> Reject:
        """The reject record for a rejected image (STYLE habit 2)."""
        if self.reason is None:
            raise ValueError(f"image {self.image_id} was not rejected")
        return Reject(stage=REJECT_STAGE, reason=self.reason, image_id=self.image_id)


class _Invalid(Exception):
    """Internal: the image is rejected with this message."""


def _kind(value: Any) -> str:
    """JSON type name of a parsed value, for reasons."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "list"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "number"
    return "null" if value is None else type(value).__name__


def _as_int(value: Any, what: str) -> int:
    """Ints and integral floats (12.0) are accepted; bools, fractions and other types are not."""
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise _Invalid(f"{what} must be an integer, got {orjson.dumps(value).decode()[:40]}")


def _text(value: Any, what: str, repairs: Counter[str]) -> str:
    if not isinstance(value, str):
        raise _Invalid(f"{what} must be a string, got {_kind(value)}")
    stripped = value.strip()
    if stripped != value:
        repairs["stripped_whitespace"] += 1
    if not stripped:
        raise _Invalid(f"{what} is empty")
    return stripped


def _attributes(raw: Any, oid: str, repairs: Counter[str]) -> tuple[str, ...]:
    if type(raw) is not list:
        raise _Invalid(f"object {oid}: 'attributes' must be a list of strings, got {_kind(raw)}")
    attrs = tuple(raw)
    for a in attrs:  # fast path: clean strings, no repeats
        if type(a) is not str or not a or a.strip() != a:
            break
    else:
        if len(set(attrs)) == len(attrs):
            return attrs
    if not all(isinstance(a, str) for a in attrs):
        raise _Invalid(f"object {oid}: 'attributes' must be a list of strings")
    out: dict[str, None] = {}
    for a in attrs:
        a = _text(a, f"object {oid}: attribute", repairs)
        if a in out:
            repairs["dropped_duplicate_attribute"] += 1
        out[a] = None
    return tuple(out)


def _relation_fields(r: Any, oid: str, i: int, repairs: Counter[str]) -> tuple[str, str]:
    """Slow path for one relation: type errors reject, fixable forms are repaired and counted."""
    if not isinstance(r, dict) or "name" not in r or "object" not in r:
        raise _Invalid(f"object {oid}: relation {i} must be {{name, object}}")
    name = _text(r["name"], f"object {oid}: relation {i} 'name'", repairs)
    target = r["object"]
    if type(target) is int:  # a malformed file may write the id as a number
        target = str(target)
        repairs["stringified_id"] += 1
    elif not isinstance(target, str):
        raise _Invalid(f"object {oid}: relation {i} 'object' must be an id string, got {_kind(target)}")
    return name, target


def _build(image_id: str, raw: Any, repairs: Counter[str]) -> SceneGraph:
    if type(raw) is not dict:
        raise _Invalid(f"graph must be an object, got {_kind(raw)}")
    size: list[int] = []
    for key in ("width", "height"):
        if key not in raw:
            raise _Invalid(f"missing key '{key}'")
        value = raw[key]
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is not int or value <= 0:
            raise _Invalid(f"{key} must be a positive integer, got {orjson.dumps(raw[key]).decode()[:40]}")
        size.append(value)
    width, height = size
    extras: list[str | None] = []
    for key in ("location", "weather"):
        value = raw.get(key)
        if value is not None and type(value) is not str:
            raise _Invalid(f"{key} must be a string, got {_kind(value)}")
        extras.append(value)
    if "objects" not in raw:
        raise _Invalid("missing key 'objects'")
    raw_objects = raw["objects"]
    if type(raw_objects) is not dict:
        raise _Invalid(f"objects must be an object of id -> object, got {_kind(raw_objects)}")

    # Reject the whole image rather than drop a bad object: a dropped object could make a path look
    # unique (SPEC 1.1 keeps a path only if it picks out exactly one object) when it is not.
    objects: dict[str, SceneObject] = {}
    for oid, obj in raw_objects.items():
        if type(obj) is not dict:
            raise _Invalid(f"object {oid}: must be an object, got {_kind(obj)}")
        try:
            name, x, y, w, h = obj["name"], obj["x"], obj["y"], obj["w"], obj["h"]
        except KeyError as e:
            raise _Invalid(f"object {oid}: missing key '{e.args[0]}'") from None
        if type(name) is not str or not name or name.strip() != name:
            name = _text(name, f"object {oid}: 'name'", repairs)
        if type(x) is not int or type(y) is not int or type(w) is not int or type(h) is not int:
            x, y, w, h = (_as_int(obj[k], f"object {oid}: '{k}'") for k in "xywh")
        if w <= 0 or h <= 0:
            raise _Invalid(f"object {oid}: non-positive size w={w} h={h}")
        x1, y1 = x + w, y + h
        if x < 0 or y < 0 or x1 > width or y1 > height:
            x, y, x1, y1 = max(x, 0), max(y, 0), min(x1, width), min(y1, height)
            if x1 <= x or y1 <= y:
                raise _Invalid(f"object {oid}: box lies entirely outside the image")
            repairs["clipped_box"] += 1
        attrs = _attributes(obj.get("attributes", []), oid, repairs)
        raw_rels = obj.get("relations", [])
        if type(raw_rels) is not list:
            hint = " (the GQA web page's dict form is not the file format)" if type(raw_rels) is dict else ""
            raise _Invalid(f"object {oid}: 'relations' must be a list of {{name, object}}, got {_kind(raw_rels)}{hint}")
        kept: dict[tuple[str, str], Relation] = {}  # insertion-ordered: duplicates drop in place
        for i, r in enumerate(raw_rels):
            if type(r) is dict and len(r) == 2:
                rname, target = r.get("name"), r.get("object")
            else:
                rname = target = None
            if type(rname) is not str or type(target) is not str or not rname or rname.strip() != rname:
                rname, target = _relation_fields(r, oid, i, repairs)
            key = (rname, target)
            if target == oid:
                repairs["dropped_self_relation"] += 1
            elif target not in raw_objects:
                repairs["dropped_dangling_relation"] += 1
            elif key in kept:
                repairs["dropped_duplicate_relation"] += 1
            else:
                kept[key] = Relation(rname, target)
        objects[oid] = SceneObject(oid, name, x, y, x1 - x, y1 - y, attrs, tuple(kept.values()))
    return SceneGraph(image_id, width, height, objects, extras[0], extras[1])


def validate_graph(image_id: str, raw: Any) -> GraphCheck:
    """Check one image's raw GQA value; reject it with a reason or return the (repaired) graph.

    Rejected: a value or field of the wrong type, missing width/height/objects or name/x/y/w/h,
    a non-positive image or box size, a box entirely outside the image, malformed attributes or
    relations. Repaired and counted in `repairs`: boxes clipped to the image (`clipped_box`),
    relations to unknown ids (`dropped_dangling_relation`), self-relations (`dropped_self_relation`),
    exact duplicate relations (`dropped_duplicate_relation`) and attributes
    (`dropped_duplicate_attribute`), names/attributes with surrounding whitespace
    (`stripped_whitespace`), integer relation targets (`stringified_id`). A missing `attributes` or
    `relations` key means none.
    """
    repairs: Counter[str] = Counter()
    try:
        graph = _build(image_id, raw, repairs)
    except _Invalid as e:
        return GraphCheck(image_id, None, str(e), {})
    return GraphCheck(image_id, graph, None, dict(repairs))


def load_graphs(
    path: str | Path, chunk_size: int = DEFAULT_CHUNK, *, max_member_bytes: int = DEFAULT_MAX_MEMBER
) -> Iterator[GraphCheck]:
    """Stream `validate_graph` over `iter_raw_graphs(path)`; file-level errors raise as there.

    A repeated image id (within or across files) is rejected: the first occurrence is kept, because
    ids key every sample and split assignment downstream. The set of ids seen is the only state that
    grows with the input (about 100 bytes an image, ~7 MB for GQA train).
    """
    seen: set[str] = set()
    n = rejected = 0
    repairs: Counter[str] = Counter()
    for image_id, raw in iter_raw_graphs(path, chunk_size, max_member_bytes=max_member_bytes):
        n += 1
        if image_id in seen:
            check = GraphCheck(image_id, None, "duplicate image id; the first occurrence was kept", {})
        else:
            seen.add(image_id)
            check = validate_graph(image_id, raw)
        rejected += check.graph is None
        repairs.update(check.repairs)
        yield check
    log.info("%s: %d images, %d rejected, repairs %s", path, n, rejected, dict(repairs))
