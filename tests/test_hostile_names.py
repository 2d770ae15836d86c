"""Hostile ids and request bodies: a rejected image id never becomes a path (the report lists it, escaped,
instead of failing), every file the run names after an id under `data/` carries its safe name, and the
review server refuses an oversized chunked body while reading it. Before this was fixed: the report's
rejects section failed with "embedded null byte" / "File name too long", `data/` held
`<img src=x onerror=alert(5)>.jpg`, and the server read a 300 MB chunked POST whole before refusing it."""

from __future__ import annotations

import html
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

from hardneg.core.config import load_config
from hardneg.core.demo.world import build_demo_world
from hardneg.core.ids import safe_name, shown_id
from hardneg.flows.pipeline import run_local
from hardneg.review.report.page import build_report
from hardneg.review.rundata import RunData
from hardneg.review.server import MAX_BODY, ReviewServer

NUL_ID = "nul\x00id"
LONG_ID = "7" * 300  # over the 255-byte file name limit of most file systems
MARKUP_ID = "<img src=x onerror=alert(5)>"  # a usable id (no separator, printable) that is no file name of ours


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6-scene demo world whose first images are renamed NUL_ID, LONG_ID (both rejected at ingest) and
    MARKUP_ID (kept), run without image edits."""
    base = tmp_path_factory.mktemp("hostile")
    world = base / "world"
    build_demo_world(world, n_scenes=6, seed=0)
    graphs = orjson.loads((world / "demo_sceneGraphs.json").read_bytes())
    renamed = {}
    for i, (image_id, g) in enumerate(graphs.items()):
        new = (NUL_ID, LONG_ID, MARKUP_ID)[i] if i < 3 else image_id
        renamed[new] = g
        if new == MARKUP_ID:
            (world / "images" / f"{image_id}.jpg").rename(world / "images" / f"{MARKUP_ID}.jpg")
    (world / "graphs.json").write_bytes(orjson.dumps(renamed))
    inputs = {"scene_graphs": str(world / "graphs.json"), "images": str(world / "images")}
    run_local(load_config(None, {"inputs": inputs, "images": {"enabled": False}}), base / "run")
    return base / "run"


def test_the_report_lists_rejected_ids_without_building_their_paths(hostile_run: Path):
    rejected = {r["image_id"] for r in RunData(hostile_run).iter_rejects() if r["stage"] == "ingest"}
    assert {NUL_ID, LONG_ID} <= rejected
    run = RunData(hostile_run)
    assert run.source_image(NUL_ID) is None and run.source_image(LONG_ID) is None
    assert run.source_image(MARKUP_ID) is not None  # a usable id still finds its GQA image

    build_report(hostile_run)
    page = "".join(f.read_text() for f in (hostile_run / "report").glob("rejects*.html"))  # every page
    assert "This section failed" not in page
    assert html.escape(shown_id(NUL_ID)) in page and "nul\\x00id" in page and "\x00" not in page
    assert LONG_ID in page


ID_KEYS = ("image_id", "source_image_id")


def _records(root: Path, kind: str) -> list[dict[str, Any]]:
    return [r for f in (root / "splits").glob(f"*/{kind}.json") for r in orjson.loads(f.read_bytes())]


def _image_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "data").rglob("*") if p.is_file() and p.parent.name == "images")


def test_dataset_files_carry_safe_names(hostile_run: Path):
    ids = {r[k] for kind in ("positive", "negative") for r in _records(hostile_run, kind) for k in ID_KEYS if k in r}
    names = {p.name for p in _image_files(hostile_run)}
    assert names and names <= {f"{safe_name(i)}.jpg" for i in ids}  # every file is named by a safe name
    assert f"{safe_name(MARKUP_ID)}.jpg" in names and f"{MARKUP_ID}.jpg" not in names
    table = pd.read_parquet(hostile_run / "data" / "positives" / "train" / "metadata.parquet")
    rows = table[table["image_id"] == MARKUP_ID]
    assert len(rows) > 0, "the markup id's image gave no train positive: pick another demo image"
    folder = hostile_run / "data" / "positives" / "train"
    assert all(f == f"images/{safe_name(MARKUP_ID)}.jpg" and (folder / f).is_file() for f in rows["file_name"])
    coco = orjson.loads((hostile_run / "splits" / "train" / "coco.json").read_bytes())
    assert all((hostile_run / i["file_name"]).is_file() for i in coco["images"])


# ---- the review server's body limit --------------------------------------------------------------------


class BodyCounter:
    """ASGI middleware counting the request-body bytes the app takes from the server."""

    def __init__(self, app: Any) -> None:
        self.app, self.read = app, 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def counted() -> dict[str, Any]:
            message = await receive()
            self.read += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


@pytest.fixture
def server(hostile_run: Path) -> Iterator[tuple[ReviewServer, BodyCounter]]:
    srv = ReviewServer(hostile_run)
    counter = BodyCounter(srv.server.config.app)
    srv.server.config.app = counter
    srv.start()
    yield srv, counter
    srv.stop()


def _head(srv: ReviewServer) -> bytes:
    return (
        f"POST /api/decisions HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Type: application/json\r\n"
        f"X-Review-Token: {srv.token}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()


def _status(sock: socket.socket) -> int:
    """The status code of the response on `sock` (read until the status line is complete)."""
    data = b""
    while b"\r\n" not in data:
        got = sock.recv(4096)
        if not got:
            break
        data += got
    return int(data.split(b" ", 2)[1])


def test_a_chunked_body_over_the_limit_is_refused_while_it_is_read(server):
    srv, counter = server
    chunk, chunks = b"x" * 1024, 8 * 1024  # 8 MB in 1 KB chunks, no Content-Length to refuse it by
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:

        def send() -> None:
            try:
                sock.sendall(_head(srv))
                for _ in range(chunks):
                    sock.sendall(b"400\r\n" + chunk + b"\r\n")
                sock.sendall(b"0\r\n\r\n")
            except OSError:  # the server answered and closed: the rest is never read
                pass

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        assert _status(sock) == 413
    sender.join(10)
    # the app stopped at the limit: what it took is the limit plus what the server had buffered (<= 64 KB)
    assert MAX_BODY < counter.read <= MAX_BODY + 128 * 1024, counter.read


@pytest.mark.parametrize("size_line", [b"zz", b"1" * 100_000])
def test_a_bad_or_endless_chunk_header_is_a_400(server, size_line: bytes):
    srv, counter = server
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(_head(srv) + b"2\r\n{}\r\n" + size_line)
        if len(size_line) < 100:
            sock.sendall(b"\r\n")
        assert _status(sock) == 400
    assert counter.read <= 2
