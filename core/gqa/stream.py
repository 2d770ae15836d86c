"""Streaming half of the GQA loader: the byte spans of a scene-graph file's top-level members.

`iter_raw_graphs` reads a `*_sceneGraphs.json` file (or a folder of them) in binary chunks; a numpy
scanner (`_scan`) finds each top-level `"image_id": {...}` member and orjson parses one member at a
time, so memory stays bounded whatever the file size. File-level defects raise here, after every
complete image before them (see `core/gqa/loader.py`, the public home of these names, for the error policy).
Per-image validation is the other half, in `core/gqa/loader.py`; this module never looks inside a graph, but it
rejects a member past the byte or nesting limit (`GraphLimits`) before any parser reads it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from hardneg.core.errors import InputError

# The public module's name, so the log lines read as they did before the loader was split in two.
log = logging.getLogger("hardneg.core.gqa.loader")

DEFAULT_CHUNK = 8 << 20  # bytes per read
_SCAN_BLOCK = 256 << 10  # bytes scanned at once: its arrays take ~3x this, and small blocks stay in cache
DEFAULT_MAX_MEMBER = 64 << 20  # bytes held of one member; past it the member is scanned to its end unheld
_KEY_PREFIX = 64 << 10  # bytes of an unheld member kept to read its image id
MAX_PARSEABLE_DEPTH = 200  # the parsers' own limits lie above: orjson writes 255 levels, json.loads ~1,000

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
_WS_TEXT = " \t\r\n"
_KEY_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class RawDefect:
    """In place of an image's raw value: the member's JSON is sound (its boundaries can be trusted), but
    its value cannot be: a duplicate key, which a parser resolves silently last-wins, or a value orjson
    refuses (NaN, an invalid or lone-surrogate string). `load_graphs` rejects the image with `reason`."""

    reason: str


@dataclass(frozen=True, slots=True)
class GraphLimits:
    """Per-image bounds checked at ingest, so that one image cannot cost more than a bounded multiple of a
    real one (real GQA graphs: ~16 objects, at most a few hundred, 5 levels of nesting, a few KB). An image
    past one is rejected with the limit's config key (`inputs.max_*`); the run goes on.

    The stream checks `max_graph_bytes` and `max_depth` before parsing (an oversized or deeply nested member is
    never handed to a parser); `core/gqa/loader.py` checks the counts once it is parsed."""

    max_graph_bytes: int = 1 << 20  # one image's JSON (its id and graph)
    max_depth: int = 32  # levels of nesting inside the graph; a GQA graph has 5
    max_objects: int = 1_000
    max_relations: int = 10_000  # listed in the graph, before duplicates are dropped
    max_attributes: int = 100  # on one object

    @classmethod
    def of(cls, inputs: Any) -> GraphLimits:
        """The limits a config's `inputs` section sets (its keys are the field names)."""
        return cls(**{f.name: getattr(inputs, f.name) for f in fields(cls)})

    def __post_init__(self) -> None:
        if self.max_depth > MAX_PARSEABLE_DEPTH:
            raise ValueError(f"max_depth must be at most {MAX_PARSEABLE_DEPTH}, got {self.max_depth}")


DEFAULT_LIMITS = GraphLimits()


def over_limit(found: str, limit: int, key: str) -> str:
    """A reject reason: what was found ("1,200 objects"), the limit and the config key that sets it."""
    return f"{found}, above the limit of {limit:,} (inputs.{key})"


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


def _segment_peaks(depth: np.ndarray, cuts: np.ndarray) -> tuple[list[int], int]:
    """The deepest nesting in each run of `depth` that ends at a cut (the cut included), and in the rest
    after the last cut: each member's depth, in one vectorised pass and without recursion."""
    if not len(cuts):
        return [], int(depth.max()) if len(depth) else 0
    starts = np.concatenate(([0], cuts[:-1] + 1))
    rest = depth[cuts[-1] + 1 :]
    return np.maximum.reduceat(depth[: cuts[-1] + 1], starts).tolist(), int(rest.max()) if len(rest) else 0


def _member_key(data: bytes | memoryview) -> str | None:
    """A member's image id, read without parsing its value; None when it does not read as `"id":` (the
    full parse then reports the broken syntax)."""
    text = bytes(data).decode("utf-8", "surrogateescape")
    start = len(text) - len(text.lstrip(_WS_TEXT))
    try:
        key, end = _KEY_DECODER.raw_decode(text, start)
    except ValueError:
        return None
    return key if type(key) is str and text[end:].lstrip(_WS_TEXT).startswith(":") else None


def _describe_start(byte: int) -> str:
    return {ord("["): "an array", ord('"'): "a string"}.get(byte, f"{chr(byte)!r}")


def _byte_offset(data: bytes, char_pos: int) -> int:
    """orjson reports character positions; turn one into a byte offset (error path only)."""
    return len(data.decode("utf-8", "replace")[:char_pos].encode("utf-8"))


class _FileStream:
    """Splits one file into (image_id, raw_value) members; see the module docstring for errors."""

    def __init__(self, path: Path, chunk_size: int, max_member: int, limits: GraphLimits) -> None:
        self.path = path
        self.chunk_size = chunk_size
        self.max_member = max_member
        self.limits = limits

    def _error(self, offset: int, what: str) -> InputError:
        return InputError(f"{self.path}, byte {offset}: {what}")

    def _blocks(self, f: BinaryIO) -> Iterator[bytes]:
        # One reused read buffer: `f.read(n)` would allocate n bytes per call and briefly hold two.
        buf = bytearray(self.chunk_size)
        view = memoryview(buf)
        while n := f.readinto(buf):
            for i in range(0, n, _SCAN_BLOCK):
                yield bytes(view[i : min(i + _SCAN_BLOCK, n)])

    def _member(self, data: bytes | memoryview, start: int, peak: int) -> tuple[str, Any]:
        """`_parse_member`, unless the member is past the byte or depth limit: then the image is rejected
        unparsed (only its id is read), so no parser meets it. `peak`: its deepest scanner depth."""
        limits, why = self.limits, None
        if len(data) > limits.max_graph_bytes:
            why = over_limit(f"{len(data):,} bytes of JSON", limits.max_graph_bytes, "max_graph_bytes")
        elif peak - 1 > limits.max_depth:  # depth 1 is the top-level object, around the graph
            why = over_limit(f"graph nested too deeply: {peak - 1} levels", limits.max_depth, "max_depth")
        if why is not None and (key := _member_key(data)) is not None:
            return key, RawDefect(why)
        return self._parse_member(data, start)

    def _unheld(self, prefix: bytes, size: int, start: int) -> tuple[str, Any]:
        """A member too long to hold, rejected by its id (read from its first bytes) with its size."""
        key = _member_key(prefix)
        if key is None:
            raise self._error(start, f"a member of {size:,} bytes whose image id cannot be read")
        if size > self.limits.max_graph_bytes:  # always, with the default limits: the key the user can change
            return key, RawDefect(over_limit(f"{size:,} bytes of JSON", self.limits.max_graph_bytes, "max_graph_bytes"))
        return key, RawDefect(f"{size:,} bytes of JSON, above the {self.max_member:,} a member may be held")

    def _parse_member(self, data: bytes | memoryview, start: int) -> tuple[str, Any]:
        # Wrapping the member in braces lets orjson check the key, the colon and the value at once.
        doc = b"".join((b"{", data, b"}"))
        try:
            obj = orjson.loads(doc)
        except orjson.JSONDecodeError as e:
            return self._parse_leniently(doc, e, start)
        if len(obj) != 1:  # only an empty member (a stray comma) gets here
            raise self._error(start, "empty member (stray comma)")
        ((key, value),) = obj.items()
        # A duplicate key drops a key-value pair, so the value re-serialised holds fewer colons. Cheap:
        # one dumps and two memchr counts; the exact check runs only on a mismatch (an escaped colon).
        if doc.count(b":") != orjson.dumps(obj).count(b":") and (dup := _duplicate_key(doc)):
            return key, RawDefect(dup)
        return key, value

    def _parse_leniently(self, doc: bytes, e: orjson.JSONDecodeError, start: int) -> tuple[str, Any]:
        """orjson refused the member: when Python's parser reads it (after mapping invalid UTF-8 to lone
        surrogates), its syntax is sound and only a value is bad, so only this image is rejected;
        otherwise the file is broken here."""
        try:
            obj = json.loads(doc.decode("utf-8", "surrogateescape"))
        except (ValueError, RecursionError):
            offset = start + max(_byte_offset(doc, e.pos) - 1, 0)
            raise self._error(offset, f"invalid JSON ({e.msg})") from None
        if len(obj) != 1:
            raise self._error(start, "empty member (stray comma)")
        ((key, _),) = obj.items()
        return key, RawDefect(f"unreadable value ({e.msg})")

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        st = _ScanState()
        parts: list[bytes] = []  # bytes of the current member read in earlier chunks
        held = 0  # len of those bytes
        member_start = -1  # file offset of the current member's first byte
        offset = 0  # file offset of the current chunk
        started = ended = False
        members = 0
        peak = 0  # the deepest nesting of the current member read in earlier chunks
        # A member past `max_member` bytes is not held: the scanner follows it to its end (its brackets and
        # strings, the quotes escaped or not), and it is rejected by its id with its size. One that never ends
        # (an unbalanced quote) runs to the end of the file, which is then reported as truncated there.
        skipping, skipped, prefix = False, 0, b""
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
                cuts = np.flatnonzero((scls[:stop] == _COMMA) & (depth[:stop] == 1))
                if len(ends):
                    end_pos = int(spos[stop])
                    if chunk[end_pos] != ord("}"):
                        raise self._error(offset + end_pos, "']' closes the top-level object")
                    cuts = np.append(cuts, stop)
                bounds = spos[cuts].tolist()
                peaks, rest_peak = _segment_peaks(depth, cuts)
                prev = member_start - offset  # negative while the member began in an earlier chunk
                view = memoryview(chunk)
                for i, p in enumerate(bounds):
                    member_peak, peak = max(peak, peaks[i]), 0
                    if skipping:
                        yield self._unheld(prefix, skipped + p - max(prev, 0), member_start)
                        skipping, skipped, prefix = False, 0, b""
                        members += 1
                        member_start = offset + p + 1
                        prev = p + 1
                        continue
                    if parts:
                        parts.append(chunk[:p])
                        data: bytes | memoryview = b"".join(parts)
                        parts, held = [], 0
                    else:
                        data = view[prev:p]
                    is_end = len(ends) > 0 and i == len(bounds) - 1
                    if not (is_end and members == 0 and not bytes(data).strip(_WS)):  # `{}`: no images
                        yield self._member(data, member_start, member_peak)
                        members += 1
                    del data  # hold no reference to this chunk while the next one is read
                    member_start = offset + p + 1
                    prev = p + 1
                del view
                peak = max(peak, rest_peak)
                if len(ends):
                    ended = True
                    rest = chunk[bounds[-1] + 1 :]
                    if rest.strip(_WS):
                        pos = bounds[-1] + 1 + len(rest) - len(rest.lstrip(_WS))
                        raise self._error(offset + pos, "trailing data")
                else:
                    tail = chunk[max(prev, 0) :]
                    if skipping:
                        skipped += len(tail)
                    else:
                        parts.append(tail)
                        held += len(tail)
                        if held > self.max_member:  # from here on only counted, never held
                            prefix = b"".join(parts[:2])[:_KEY_PREFIX]
                            skipping, skipped, parts, held = True, held, [], 0
                offset += len(chunk)
        if not started:
            raise self._error(offset, "no JSON object (empty file)")
        if not ended:
            data = b"".join(parts)
            # The image before the cut is complete when its value's closing bracket was read; a
            # scalar value might have lost digits, so it is not yielded.
            if st.depth == 1 and not st.in_string and data.rstrip(_WS).endswith((b"}", b"]")):
                yield self._member(data, member_start, peak)
            where = "inside a string" if st.in_string else f"at nesting depth {st.depth}"
            raise self._error(
                offset, f"truncated file: it ends {where}, in the image that starts at byte {member_start}"
            )


def _duplicate_key(doc: bytes) -> str | None:
    """The first repeated key in any object of `doc`, as a reject reason; None when there is none."""
    found: list[str] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen and not found:
                objects = all(isinstance(v, dict) for _, v in pairs)  # an id -> object mapping
                found.append(f"duplicate object id {k!r}" if objects else f"duplicate key {k!r} in one JSON object")
            seen.add(k)
        return dict(pairs)

    try:
        json.loads(doc, object_pairs_hook=pairs_hook)
    except RecursionError:
        return "graph nested too deeply to check for duplicate keys"
    return f"{found[0]} (JSON would keep only the last)" if found else None


def graph_files(path: str | Path) -> list[Path]:
    """The file itself, or a folder's `*sceneGraphs*.json` files sorted by name."""
    p = Path(path)
    if p.is_dir():
        files = sorted(q for q in p.glob("*sceneGraphs*.json") if q.is_file())
        if not files:
            raise InputError(f"{p}: folder holds no *sceneGraphs*.json file")
        return files
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such scene-graph file or folder")
    return [p]


def iter_raw_graphs(
    path: str | Path,
    chunk_size: int = DEFAULT_CHUNK,
    *,
    max_member_bytes: int = DEFAULT_MAX_MEMBER,
    limits: GraphLimits = DEFAULT_LIMITS,
) -> Iterator[tuple[str, Any]]:
    """Yield `(image_id, raw_value)` in file order, streaming; `raw_value` is unvalidated.

    `path` is a `*_sceneGraphs.json` file, or a folder: then every `*sceneGraphs*.json` in it, sorted
    by name. A broken file yields every complete image before the break, then raises `InputError`
    with the file and byte offset. A duplicated image id is yielded twice (orjson.loads of the whole
    file would keep the last); `load_graphs` rejects the repeat. An image whose JSON is sound but whose
    value is not (a duplicate key inside it, a value orjson refuses) yields a `RawDefect`, and so does
    one past `limits.max_graph_bytes` or `limits.max_depth`, unparsed.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive number of bytes, got {chunk_size}")
    for file in graph_files(path):
        log.info("reading scene graphs from %s", file)
        yield from _FileStream(file, chunk_size, max_member_bytes, limits)
