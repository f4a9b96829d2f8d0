"""A loopback front for an OpenAI-compatible model: starts the local server lazily, records and replays cassettes.

Every client (LangChain's ``ChatOpenAI``, DSPy through LiteLLM) talks to this front; it
forwards each request to the real endpoint, which for ``local`` is the llama.cpp server it
starts on the first request (so a run that needs no model never loads one).

Cassettes: with ``SOPGRAPH_CASSETTE=<file.jsonl>`` every exchange is keyed by the sha256 of
the request (method, path and canonical JSON body).

- ``SOPGRAPH_CASSETTE_MODE=replay`` (the default when a cassette is named): answers from the
  file only, never starts a model; a request the file lacks is answered with HTTP 400 and a
  message naming the cassette and the key, and is counted in ``misses``.
- ``SOPGRAPH_CASSETTE_MODE=record``: passes through to the live model and appends each
  exchange to the file (one JSON object a line).
- ``SOPGRAPH_CASSETTE_MODE=fill``: replays what the file has and records what it lacks (after
  a prompt change on one path, only that path's requests go to the model).
- ``SOPGRAPH_CASSETTE_PRUNE=1`` with ``replay``: at exit the file keeps only the exchanges the
  run asked for (``_cassette_prune``: after a fill, drop what the changed code no longer asks).

Example:
    >>> front = ModelProxy(upstream=lambda: "http://127.0.0.1:8000/v1")  # doctest: +SKIP
    >>> front.start().base_url  # doctest: +SKIP
    'http://127.0.0.1:40123/v1'
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sopgraph.nodes.models import _cassette_prune

if TYPE_CHECKING:
    from sopgraph.nodes.models._tool_format import ToolCallAdapter

CassetteMode = Literal["replay", "record", "fill"]
CASSETTE_MODES: tuple[CassetteMode, ...] = ("replay", "record", "fill")
UPSTREAM_TIMEOUT = 3600.0
"""The front never times a request out itself: each client sets its own, per role."""


class CassetteError(ValueError):
    """A cassette that cannot be read or a mode that is not ``replay``/``record``."""


def request_key(method: str, path: str, body: bytes) -> str:
    """The cassette key of a request: sha256 over method, path and the body as canonical JSON."""
    try:
        canonical = json.dumps(json.loads(body or b"null"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = body.decode("utf-8", "replace")
    text = f"{method.upper()} {path.rstrip('/')}\n{canonical}"
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Cassette:
    """Recorded exchanges of one file: key -> responses in the order they were recorded.

    A key asked again in replay gets its next recorded response (the last one repeats), so a
    run that asks the same thing twice replays what the model said each time.
    """

    path: Path
    mode: CassetteMode = "replay"
    entries: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _served: dict[str, int] = field(default_factory=dict)
    missed: int = 0  # replayed requests the file did not hold
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: Path | str, mode: str = "replay") -> Cassette:
        if mode not in CASSETTE_MODES:
            raise CassetteError(
                f"SOPGRAPH_CASSETTE_MODE={mode!r} is not one of {', '.join(CASSETTE_MODES)}"
            )
        cassette = cls(Path(path), mode)  # type: ignore[arg-type]
        if cassette.path.exists():
            cassette._load()
        elif mode == "replay":
            raise CassetteError(
                f"cassette {cassette.path} does not exist: record it with "
                "SOPGRAPH_CASSETTE_MODE=record against a live model"
            )
        return cassette

    def _load(self) -> None:
        for n, line in enumerate(self.path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                self.entries.setdefault(entry["key"], []).append(entry["response"])
            except (ValueError, KeyError, TypeError):
                raise CassetteError(
                    f"cassette {self.path}:{n} is not a recorded exchange "
                    '({"key", "request", "response"} JSON on one line)'
                ) from None

    def replay(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            recorded = self.entries.get(key)
            if not recorded:
                if self.mode == "replay":
                    self.missed += 1
                return None
            i = self._served.get(key, 0)
            self._served[key] = i + 1
            return recorded[min(i, len(recorded) - 1)]

    def record(self, key: str, request: Any, response: dict[str, Any]) -> None:
        line = json.dumps({"key": key, "request": request, "response": response}, sort_keys=True)
        with self._lock:
            self.entries.setdefault(key, []).append(response)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:  # other processes may record into the same file
                fcntl.flock(f, fcntl.LOCK_EX)
                f.write(line + "\n")
                fcntl.flock(f, fcntl.LOCK_UN)


def cassette_from_env() -> Cassette | None:
    """The cassette ``SOPGRAPH_CASSETTE``/``SOPGRAPH_CASSETTE_MODE`` name, or None."""
    path = os.environ.get("SOPGRAPH_CASSETTE", "").strip()
    if not path:
        return None
    cassette = Cassette.open(path, os.environ.get("SOPGRAPH_CASSETTE_MODE", "replay").strip())
    if _cassette_prune.wanted():
        if cassette.mode != "replay":
            raise CassetteError(
                f"SOPGRAPH_CASSETTE_PRUNE prunes a replayed cassette, and the mode is "
                f"{cassette.mode!r}: run again with SOPGRAPH_CASSETTE_MODE=replay"
            )
        _cassette_prune.track(cassette)
    return cassette


@dataclass
class Exchange:
    """One request the front answered, for figures and tests."""

    key: str
    path: str
    status: int
    seconds: float
    source: Literal["live", "cassette", "miss"]


@dataclass
class _Adaptation:
    """What the adapter makes of one request: the body to forward and the reply to return."""

    body: bytes | None = None
    reply: Callable[[Any], Any] | None = None

    def __call__(self, payload: Any) -> Any:
        return self.reply(payload) if self.reply is not None else payload


class ModelProxy:
    """The loopback front. ``upstream`` returns the real ``.../v1`` base URL, starting it if needed.

    Args:
        upstream: called on the first request that must reach the model (never in replay).
        cassette: record into or replay from this cassette; None passes everything through.
        label: names the model in miss messages.
        timeout: seconds a forwarded request may take, from its body; None waits for ever.
        serialize: forward one request at a time (a llama.cpp server computes one anyway), so
            ``timeout`` counts from when the model starts on a request, not from the queue.
        adapter: rewrites requests that offer tools for the model's tool-call format and turns
            its replies into ``tool_calls`` (``tool_format``); cassettes keep the client's
            request and the raw reply, and a replayed reply is parsed again.
    """

    def __init__(
        self,
        upstream: Callable[[], str] | None,
        cassette: Cassette | None = None,
        label: str = "model",
        *,
        timeout: Callable[[bytes], float] | None = None,
        serialize: bool = False,
        adapter: ToolCallAdapter | None = None,
    ) -> None:
        self._upstream = upstream
        self.adapter = adapter
        self._timeout = timeout
        self._serial = threading.Lock() if serialize else None
        self._upstream_url: str | None = None
        self._upstream_lock = threading.Lock()
        self.cassette = cassette
        self.label = label
        self.exchanges: list[Exchange] = []
        self.misses: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the front first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def live_started(self) -> bool:
        """Whether a request reached the real model (so its server was started)."""
        return self._upstream_url is not None

    def start(self) -> ModelProxy:
        if self._server is not None:
            return self
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                proxy._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                proxy._handle(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="sopgraph-model-front", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def upstream_url(self) -> str:
        with self._upstream_lock:
            if self._upstream_url is None:
                if self._upstream is None:
                    raise RuntimeError(f"no live endpoint for {self.label}")
                self._upstream_url = self._upstream().rstrip("/")
            return self._upstream_url

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        began = time.monotonic()
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        path = handler.path.split("?", 1)[0]
        sub = path[len("/v1") :] if path.startswith("/v1") else path
        key = request_key(method, sub, body)
        adapt = self._adaptation(method, sub, body)
        cassette = self.cassette
        if cassette is not None and cassette.mode == "fill":
            recorded = cassette.replay(key)
            if recorded is not None:
                self._reply(handler, recorded["status"], adapt(recorded["body"]))
                self._log(key, sub, recorded["status"], began, "cassette")
                return
        if cassette is not None and cassette.mode == "replay":
            recorded = cassette.replay(key)
            if recorded is None:
                message = (
                    f"cassette {cassette.path} has no recorded response for request {key[:12]} "
                    f"({method} {sub}): re-record it with SOPGRAPH_CASSETTE_MODE=record"
                )
                self.misses.append(message)
                self._reply(handler, 400, {"error": {"message": message, "type": "cassette_miss"}})
                self._log(key, sub, 400, began, "miss")
                return
            self._reply(handler, recorded["status"], adapt(recorded["body"]))
            self._log(key, sub, recorded["status"], began, "cassette")
            return
        upstream_body = adapt.body if adapt.body is not None else body
        timeout = self._timeout(body) if self._timeout and method == "POST" else UPSTREAM_TIMEOUT
        try:
            with self._serial or nullcontext():
                status, payload = self._forward(method, sub, upstream_body, handler, timeout)
        except TimeoutError:
            message = (
                f"{self.label} took longer than {timeout:.0f} s, the limit derived from the "
                "request's prompt length and max_tokens at the slowest measured speed"
            )
            self._reply(handler, 504, {"error": {"message": message, "type": "timeout"}})
            self._log(key, sub, 504, began, "live")
            return
        except Exception as exc:  # noqa: BLE001 - the client sees a 502 with the reason
            message = f"{self.label} is unreachable: {type(exc).__name__}: {exc}"
            self._reply(handler, 502, {"error": {"message": message[:500], "type": "upstream"}})
            self._log(key, sub, 502, began, "live")
            return
        if cassette is not None:  # errors the model's server answered are part of the run too
            try:
                request: Any = json.loads(body) if body else None
            except ValueError:
                request = body.decode("utf-8", "replace")
            cassette.record(key, {"method": method, "path": sub, "body": request},
                            {"status": status, "body": payload})  # fmt: skip
        self._reply(handler, status, adapt(payload) if status == 200 else payload)
        self._log(key, sub, status, began, "live")

    def _adaptation(self, method: str, sub: str, body: bytes) -> _Adaptation:
        if self.adapter is None or method != "POST":
            return _Adaptation()
        try:
            request = json.loads(body or b"null")
        except ValueError:
            return _Adaptation()
        if not self.adapter.applies(sub, request):
            return _Adaptation()
        adapter = self.adapter
        new_body = json.dumps(adapter.request(request)).encode()
        return _Adaptation(new_body, lambda reply: adapter.response(request, reply))

    def _forward(
        self, method: str, sub: str, body: bytes, handler: BaseHTTPRequestHandler, timeout: float
    ) -> tuple[int, Any]:
        url = self.upstream_url() + sub
        headers = {"Content-Type": "application/json"}
        if auth := handler.headers.get("Authorization"):
            headers["Authorization"] = auth
        request = urllib.request.Request(url, data=body or None, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw, status = response.read(), response.status
        except urllib.error.HTTPError as exc:
            raw, status = exc.read(), exc.code
        try:
            return status, json.loads(raw or b"null")
        except ValueError:
            return status, {"error": {"message": raw.decode("utf-8", "replace")[:2000]}}

    def _reply(self, handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass

    def _log(self, key: str, path: str, status: int, began: float, source: Any) -> None:
        self.exchanges.append(Exchange(key, path, status, time.monotonic() - began, source))
