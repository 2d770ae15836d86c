"""`hardneg review RUN`: the human-filter web app (FastAPI, plain HTML/JS, no build step, offline).

Only this run's records and images are served: image URLs name a sample id, and the file is found from
the record, never from the request. Every client error is a 4xx JSON `{"error": message}`; a bug is a
500 with a generic message (logged), never a traceback. Bound to a loopback address, the app also
refuses requests whose Host header is not that address (DNS rebinding), and POSTs must be JSON (so a
web page cannot submit a form to it) of at most MAX_BODY bytes, counted as they arrive (a chunked body
too): past it, a 413 and the connection closes.

Writes need the server's token (random per start, in the URL `hardneg review` prints; the page sends it
as `X-Review-Token`): without it a POST is refused with 403, so another local process or page cannot
label. Reads stay open. A label names the (item, annotator) version and the view its page was given: an
old version or another item's view is refused with 409, so a stale tab never overwrites what another tab
saved and a label lands only on the item on screen. With `--audit N` the app serves only the audit's
random sample, blind: no item view carries a score, risk or reason.
"""

from __future__ import annotations

import logging
import re
import secrets
import socket
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from hardneg.core.errors import HardnegError
from hardneg.filters.human.agreement import pairwise
from hardneg.filters.human.apply import Label, decide_all, summary
from hardneg.filters.human.audit import audit_order
from hardneg.filters.human.labels import ALL_LABELS, GUIDELINES, annotator_name, labels_for
from hardneg.filters.human.store import ReviewStore, StaleVersion
from hardneg.review.items import Item, ReviewData, negative_types
from hardneg.review.rundata import RunData

log = logging.getLogger(__name__)

STATIC = {"app.js": "text/javascript", "app.css": "text/css", "index.html": "text/html"}
MAX_BODY = 16 * 1024  # bytes; a decision is a few dozen
MAX_ID = 2**63 - 1  # SQLite's INTEGER
_ID = re.compile(r"[0-9]{1,19}")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
TOKEN_HEADER = "x-review-token"
STALE = "someone labelled this since you opened it; reload (another tab of yours, or an undo there)"


class ClientError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def parse_id(raw: Any) -> int:
    """A sample id from a request (int, or digits); anything else is 'not in this run' (404)."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str) and _ID.fullmatch(raw):
        value = int(raw)
    else:
        raise ClientError(404, f"no item {_short(raw)} in this run")
    if not 0 <= value <= MAX_ID:
        raise ClientError(404, f"no item {_short(raw)} in this run")
    return value


def parse_annotator(raw: Any) -> str:
    try:
        return annotator_name(raw)
    except ValueError as e:
        raise ClientError(400, str(e)) from None


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    """The body, refused (413) as soon as it passes `limit`: a chunked body declares no length, so it is
    counted as it arrives, never read whole first. The 413 closes the connection: the rest is never read."""
    raw = bytearray()
    try:
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                raise ClientError(413, f"body too large (at most {limit} bytes)")
    except ClientDisconnect:  # the client went away, or uvicorn already answered a broken chunk with a 400
        raise ClientError(400, "the request body was cut short") from None
    return bytes(raw)


def parse_version(raw: Any) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw <= MAX_ID:
        raise ClientError(400, "send the item's version as shown (the `version` of GET /api/items/ID)")
    return raw


def create_app(
    run_dir: str | Path,
    *,
    token: str,
    allowed_hosts: set[str] | None = None,
    adjudicators: tuple[str, ...] = (),
    audit: bool = False,
) -> FastAPI:
    """The app for one run folder. `token`: what every write must send; `allowed_hosts`: accepted Host
    headers (None = any); `adjudicators`: names recorded in the store as adjudicators (kept for good);
    `audit`: serve only the audit's sample (`filters/human/audit.py`), in random order, without scores."""
    try:
        names = [parse_annotator(n) for n in adjudicators]
    except ClientError as e:
        raise HardnegError(f"--adjudicator: {e.message}") from None
    run = RunData(run_dir)
    store = ReviewStore(run.root)
    sample = store.audit() if audit else None
    if audit and sample is None:
        raise HardnegError(f"{run.root} has no audit yet: draw one with `hardneg review RUN --audit N`")
    data = ReviewData(run, audit_order(sample) if sample is not None else None)
    if names:
        store.add_adjudicators(names)
    app = FastAPI(title="hardneg review", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(ClientError)
    async def _client_error(_: Request, e: ClientError) -> JSONResponse:
        return _json(e.status, {"error": e.message}, {"Connection": "close"} if e.status == 413 else None)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, e: StarletteHTTPException) -> JSONResponse:
        if e.status_code == 404:
            return _json(404, {"error": f"no such page: {_short(request.url.path)}"})
        if e.status_code == 405:
            return _json(405, {"error": f"method {request.method} not allowed here"})
        return _json(e.status_code, {"error": str(e.detail)})

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, e: RequestValidationError) -> JSONResponse:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(x) for x in first.get("loc", ()))
        return _json(400, {"error": f"bad request: {where}: {first.get('msg', 'invalid')}"})

    @app.exception_handler(Exception)
    async def _bug(_: Request, e: Exception) -> JSONResponse:
        log.exception("review app: unexpected error")
        return _json(500, {"error": "internal error (see the server log)"})

    @app.middleware("http")
    async def _guard(request: Request, call_next: Any) -> Response:
        if allowed_hosts is not None and request.headers.get("host", "") not in allowed_hosts:
            return _json(400, {"error": "unexpected Host header; open the URL the server printed"})
        response = await call_next(request)
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    def item(raw_id: Any) -> Item:
        it = data.by_id.get(parse_id(raw_id))
        if it is None:
            raise ClientError(404, f"no item {_short(raw_id)} in this run")
        return it

    def decisions() -> dict[int, Label]:
        return decide_all(store)

    async def body(request: Request) -> dict[str, Any]:
        """A write's JSON body, once the token is right (checked first: a stranger learns nothing more)."""
        given = request.headers.get(TOKEN_HEADER, "").encode("utf-8", "replace")
        if not secrets.compare_digest(given, token.encode()):
            raise ClientError(403, "writes need this server's token: open the URL `hardneg review` printed")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise ClientError(415, "send the body as application/json")
        try:
            declared = int(request.headers.get("content-length", "0"))
        except ValueError:
            raise ClientError(400, "bad Content-Length") from None
        if declared > MAX_BODY:
            raise ClientError(413, f"body too large (at most {MAX_BODY} bytes)")
        raw = await read_body(request)
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ClientError(400, "body is not valid JSON") from None
        if not isinstance(parsed, dict):
            raise ClientError(400, "body must be a JSON object")
        return parsed

    def static(name: str) -> Response:
        text = resources.files("hardneg.review").joinpath("static", name).read_bytes()
        return Response(text, media_type=STATIC[name], headers={"Cache-Control": "no-cache"})

    @app.get("/")
    def index() -> Response:
        return static("index.html")

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)

    @app.get("/static/{name}")
    def static_file(name: str) -> Response:
        if name not in STATIC:
            raise ClientError(404, f"no static file {_short(name)}")
        return static(name)

    @app.get("/api/meta")
    def meta() -> dict[str, Any]:
        return {
            "run": run.root.name,
            "facets": data.facets(),
            "negative_types": negative_types(),
            "labels": {
                k: [{"label": lab, "text": t, "key": key} for lab, (t, key) in labels_for(k).items()]
                for k in ("positive", "negative")
            },
            "guidelines": GUIDELINES,
            "items": len(data.items),
            "default_items": sum(it.default for it in data.items),
            "adjudicators": sorted(store.adjudicators()),
            "audit": None if sample is None else {"seed": sample.seed, "items": len(data.items)},
        }

    def _opt_int(v: str | None, what: str) -> int | None:
        if v in (None, ""):
            return None
        if not re.fullmatch(r"[0-9]{1,3}", v):  # type: ignore[arg-type]
            raise ClientError(400, f"{what} must be a small integer, got {_short(v)}")
        return int(v)  # type: ignore[arg-type]

    def _opt_choice(v: str | None, allowed: list[Any], what: str) -> str | None:
        if v in (None, ""):
            return None
        if v not in allowed:
            raise ClientError(400, f"unknown {what} {_short(v)}; one of {', '.join(map(str, allowed))}")
        return v

    @app.get("/api/queue")
    def queue(
        annotator: str | None = None,
        scope: str = "default",
        kind: str | None = None,
        type: str | None = None,
        negative_type: str | None = None,
        level: str | None = None,
        split: str | None = None,
        pending: str = "1",
        offset: str = "0",
        limit: str = "200",
    ) -> dict[str, Any]:
        who = parse_annotator(annotator)
        if scope not in ("default", "all"):
            raise ClientError(400, "scope is 'default' (what the paper sent to humans) or 'all'")
        f = data.facets()
        chosen = data.select(
            scope=scope,
            kind=_opt_choice(kind, f["kind"], "kind"),
            tuple_type=_opt_choice(type, f["type"], "type"),
            negative_type=_opt_choice(negative_type, f["negative_type"], "negative_type"),
            level=_opt_int(level, "level"),
            split=_opt_choice(split, f["split"], "split"),
        )
        if not re.fullmatch(r"[0-9]{1,9}", offset) or not re.fullmatch(r"[0-9]{1,4}", limit):
            raise ClientError(400, "offset and limit must be non-negative integers (limit at most 9999)")
        off, lim = int(offset), min(int(limit), 1000)
        mine = store.current(who)
        tied = {i for i, lab in decisions().items() if lab.tied}
        chosen = sorted(chosen, key=lambda it: it.id not in tied)  # ties first, for an adjudicator; stable
        todo = [it for it in chosen if it.id not in mine]
        listed = todo if pending != "0" else chosen
        return {
            "ids": [str(it.id) for it in listed[off : off + lim]],
            "total": len(chosen),
            "done": len(chosen) - len(todo),
            "pending": len(todo),
            "tied": sum(it.id in tied for it in chosen),
            "offset": off,
        }

    @app.get("/api/items/{item_id}")
    def get_item(item_id: str, annotator: str | None = None) -> dict[str, Any]:
        """The item, the caller's label and the version a label on this view must name."""
        it = item(item_id)
        who = parse_annotator(annotator) if annotator else None
        view = data.view(it, store.label_of(it.id, who) if who else None)
        lab = decisions().get(it.id)
        view["version"] = store.version(it.id, who) if who else None
        view["tied"] = lab is not None and lab.tied
        return view

    def _image(path: Path | None, it: Item) -> Response:
        if path is None:
            raise ClientError(404, f"item {it.id} has no image in this run")
        return FileResponse(path, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=300"})

    @app.get("/api/items/{item_id}/image")
    def item_image(item_id: str) -> Response:
        it = item(item_id)
        return _image(data.image_file(it), it)

    @app.get("/api/items/{item_id}/source")
    def item_source(item_id: str) -> Response:
        it = item(item_id)
        return _image(data.source_file(it), it)

    @app.post("/api/decisions")
    async def post_decision(request: Request) -> dict[str, Any]:
        b = await body(request)
        it = item(b.get("item_id"))
        who = parse_annotator(b.get("annotator"))
        label = b.get("label")
        allowed = labels_for(it.kind)
        if not isinstance(label, str) or label not in allowed:
            kind = "a positive" if it.kind == "positive" else "a negative"
            hint = "not a label for this item" if isinstance(label, str) and label in ALL_LABELS else "unknown label"
            raise ClientError(400, f"{hint} {_short(label)}: {kind} takes {', '.join(allowed)}")
        version = parse_version(b.get("version"))
        shown = b.get("view")
        if not isinstance(shown, str):
            raise ClientError(400, "send the view of the item on screen (the `view` of GET /api/items/ID)")
        if shown != data.view(it, None)["view"]:
            raise ClientError(409, f"this label names item {it.id}, but the page showed another item; reload")
        try:
            d = await run_in_threadpool(store.record, it.id, who, label, version)
        except StaleVersion:
            raise ClientError(409, STALE) from None
        out = {"seq": d.seq, "item_id": str(d.item_id), "annotator": d.annotator, "label": d.label, "at": d.at}
        return {**out, "version": version + 1}

    @app.post("/api/undo")
    async def post_undo(request: Request) -> dict[str, Any]:
        b = await body(request)
        who = parse_annotator(b.get("annotator"))
        target = item(b["item_id"]).id if b.get("item_id") is not None else None
        d = await run_in_threadpool(store.undo, who, target)
        if d is None:
            return {"undone": None}
        return {
            "undone": {"seq": d.seq, "item_id": str(d.item_id), "label": d.label},
            "now": store.label_of(d.item_id, who),
        }

    @app.get("/api/agreement")
    def agreement() -> dict[str, Any]:
        labels = decisions()
        s = summary(labels)
        pairs = pairwise({i: lab.votes for i, lab in labels.items()})
        return {"pairs": pairs, "by_annotator": s["by_annotator"], "by_label": s["by_label"], "tied": s["tied"]}

    return app


class ReviewServer:
    """uvicorn on a socket bound here, so a free port is known before the first request."""

    def __init__(
        self,
        run_dir: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        adjudicators: tuple[str, ...] = (),
        audit: bool = False,
    ):
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            raise HardnegError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
        self.sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
        self.port = self.sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        self.token = secrets.token_urlsafe(18)  # per start: a URL from an earlier start cannot write
        self.page_url = f"{self.url}?token={self.token}"  # what a person opens (the page reads the token)
        hosts = None
        if host in _LOOPBACK or host.startswith("127."):
            hosts = {f"{h}:{self.port}" for h in (shown, "localhost", "127.0.0.1", "[::1]")}
        try:
            app = create_app(run_dir, token=self.token, allowed_hosts=hosts, adjudicators=adjudicators, audit=audit)
        except BaseException:
            self.sock.close()
            raise
        config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        self.server.run(sockets=[self.sock])

    def start(self) -> None:
        """Serve from a background thread (tests); returns once the server accepts connections."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("review server failed to start")
            threading.Event().wait(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()
