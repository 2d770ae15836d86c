"""Ids as file names: the one place where an id from the input becomes part of a path.

GQA names its images by id (`<images>/<image_id>.jpg`), so an id is read as a file name exactly as
given, and one that could leave the folder, hide a control character or overflow a file name is not
usable: ingest rejects its image with `id_problem`'s reason (the run goes on). Files the run itself
writes (candidate images, the dataset's copies under `data/`) are named by `safe_name`, which maps every
id, usable or not, to a short plain name; the records always keep the real id, and a page shows it as
`shown_id` writes it.
"""

from __future__ import annotations

import hashlib
import re

MAX_ID_BYTES = 200  # UTF-8; `<id>.jpg` and our suffixes stay well under the usual 255-byte file name limit
PLAIN_MAX = 64
_PLAIN = re.compile(rf"[a-z0-9_-]{{1,{PLAIN_MAX}}}")  # safe everywhere, case-insensitive file systems too
_NOT_PLAIN = re.compile(r"[^a-z0-9_-]+")
PREFIX_MAX = 40  # readable part of a hashed name
HASH_HEX = 16  # 64 bits of SHA-1


def id_problem(image_id: object, what: str = "image id") -> str | None:
    """Why `image_id` cannot name a file `<folder>/<image_id>.jpg`, or None when it can: empty, longer
    than MAX_ID_BYTES, a path separator, `.` or `..`, or a control or invisible character. `what` names
    it in the reason (a run's `name` is checked the same way)."""
    if not isinstance(image_id, str):
        return f"{what} must be a string, got {type(image_id).__name__}"
    if not image_id:
        return f"{what} is empty"
    try:
        size = len(image_id.encode("utf-8"))
    except UnicodeEncodeError:
        return f"{what} is not valid Unicode (it holds a lone surrogate)"
    if size > MAX_ID_BYTES:
        return f"{what} is {size} bytes long (at most {MAX_ID_BYTES})"
    if "/" in image_id or "\\" in image_id:
        return f"{what} contains a path separator"
    if image_id in (".", ".."):
        return f"{what} {image_id!r} names a folder, not a file"
    if not image_id.isprintable():
        bad = next(c for c in image_id if not c.isprintable())
        return f"{what} contains the control or invisible character U+{ord(bad):04X}"
    return None


def safe_name(image_id: str) -> str:
    """A file-name stem for any id: the id itself when it is plain (`[a-z0-9_-]`, at most 64 characters),
    else a readable plain prefix of it, a `.` and 16 hex digits of its SHA-1 ("img_7.3f9c..."). At most 64
    ASCII characters. Two ids never share a name (up to a 64-bit hash collision): plain names hold no `.`,
    hashed ones exactly one, and names differ in more than case, so case-insensitive file systems agree."""
    if _PLAIN.fullmatch(image_id):
        return image_id
    prefix = _NOT_PLAIN.sub("_", image_id.lower())[:PREFIX_MAX].strip("_") or "id"
    digest = hashlib.sha1(image_id.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]
    return f"{prefix}.{digest}"


def printable_id(image_id: str) -> str:
    """`image_id` as it can be written to JSON: unchanged unless it holds lone surrogates (which UTF-8
    cannot encode), then with those escaped as `\\udXXX`; only reject records use this."""
    try:
        image_id.encode("utf-8")
    except UnicodeEncodeError:
        return image_id.encode("utf-8", "backslashreplace").decode("utf-8")
    return image_id


def shown_id(image_id: str) -> str:
    """`image_id` as a page shows it: every control or invisible character (and lone surrogate) escaped
    as Python writes it (`\\x00`, `\\u202e`), so a rejected id is seen as it was, never as a blank or a
    reordered line; a printable id is unchanged (the page still HTML-escapes it)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in image_id)
