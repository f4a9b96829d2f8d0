"""The local run console (``sopgraph ui``): a small web app over a checkpoint store that lists
the runs, shows one run's path on its SOP with every verdict, and answers the approvals waiting.

It checks callers as sopgraph's HTTP MCP server does: every request needs a token from the
operator's tokens file (``server_auth``), given once on the login page (the console then keeps a
session cookie, HttpOnly and SameSite=Strict, never the token) or as ``Authorization: Bearer``
on each request. An answer goes through ``Session.resume`` with the console's approval policy
(``ask``: approve or reject; ``reject``: reject only, as ``mcp serve --approval reject``), and
the trail records the token's identity as the approver. A form POST made with the session
cookie must carry the session's CSRF token and, when the browser sends one, a same-origin
``Origin``. Every value read from a run is escaped (``console_pages``).

Wrong tokens are throttled (``login_throttle.LoginThrottle``, as on the HTTP MCP server): after
``MAX_FAILURES`` within ``WINDOW_SECONDS`` from one client address, or ``GLOBAL_FAILURES`` from
all of them, every token from that address (or from anyone) is answered 429 with
``Retry-After`` until ``LOCKOUT_SECONDS`` pass, a right one included, so the lockout says
nothing about the tokens tried. Logging out always ends the
session on the server. Every response, Starlette's own 404, 405 and 500 included, carries the
console's security headers (``SECURITY_HEADERS``: a CSP that allows no script, no framing).

Example:
    >>> app = Console(Path(".sopgraph/checkpoints.sqlite"), load_tokens("tokens")).app()
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sopgraph.mcp_servers import console_pages as pages
from sopgraph.mcp_servers.login_throttle import LoginThrottle, Throttled, client_address
from sopgraph.mcp_servers.server_auth import TokenTable
from sopgraph.runtime.runs import RunRecord, RunsError, list_runs, read_run, store_name

CONSOLE_APPROVALS = ("ask", "reject")
COOKIE = "sopgraph_console"
SESSION_SECONDS = 12 * 3600
MAX_FORM_BYTES = 16 * 1024  # a login or an answer; nothing bigger is read
LIST_LIMIT = 200
SECURITY_HEADERS = {
    # no script at all; the SVG and the styles are inline
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' "
    "data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # same-origin, not no-referrer: with no-referrer a browser sends 'Origin: null' on POST
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class _SecurityHeaders:
    """ASGI middleware: ``SECURITY_HEADERS`` on every HTTP response of the app it wraps."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            await send(message)

        await self.app(scope, receive, secured)


@dataclass
class _Login:
    identity: str
    csrf: str
    expires: float


@dataclass
class _Caller:
    identity: str
    login: _Login | None = None  # None: a bearer header, which a cross-site form cannot send


@dataclass
class Console:
    """The console over the runs of ``store``, its callers checked against ``tokens``.

    ``sops``: when given, only the runs of these SOPs (files or folders) are shown and answered.
    ``approval``: the policy answers go through (``CONSOLE_APPROVALS``).
    """

    store: Path | str  # a SQLite file or a postgres:// URL
    tokens: TokenTable
    sops: list[Path] = field(default_factory=list)
    approval: str = "ask"
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    _logins: dict[str, _Login] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)
    _models: Any = None

    def __post_init__(self) -> None:
        if self.approval not in CONSOLE_APPROVALS:
            raise ValueError(f"approval must be one of {', '.join(CONSOLE_APPROVALS)}")
        allowed: set[Path] = set()
        for sop in self.sops:
            sop = sop.resolve()
            allowed |= {sop, sop.parent} if sop.is_file() else {sop, sop / "sop.yaml"}
        self._allowed = allowed

    def app(self) -> Starlette:
        """The Starlette app: pages at ``/`` and ``/runs/{thread_id}``, the forms' POSTs."""
        routes = [
            Route("/", self.runs_page),
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/runs/{thread_id:path}/decision", self.decide, methods=["POST"]),
            Route("/runs/{thread_id:path}", self.run_page),
        ]
        handlers = {
            HTTPException: _http_error,
            Throttled: _throttled,
            Exception: _server_error,  # Starlette answers it outside the middleware
        }
        middleware = [Middleware(_SecurityHeaders)]
        return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)

    # -- who is calling ------------------------------------------------------------------------

    def _caller(self, request: Request) -> _Caller | None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":  # raises Throttled after too many wrong tokens
            identity = self.throttle.check(_address(request), lambda: self._identity(value))
            return _Caller(identity) if identity else None
        login = self._logins.get(request.cookies.get(COOKIE, ""))
        if login is None:
            return None
        if login.expires < time.time():
            self._logins.pop(request.cookies.get(COOKIE, ""), None)
            return None
        return _Caller(login.identity, login)

    def _identity(self, token: str) -> str | None:
        return self.tokens.identity(token.strip())

    def _same_origin(self, request: Request) -> bool:
        """Whether the browser's ``Origin`` (when it sends one) is this console's own."""
        origin = request.headers.get("origin")
        if origin is None:
            return True  # not a browser's cross-site POST (those carry Origin); the token decides
        return origin == f"{request.url.scheme}://{request.headers.get('host', '')}"

    async def _form(self, request: Request) -> dict[str, str] | None:
        if int(request.headers.get("content-length") or 0) > MAX_FORM_BYTES:
            return None
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return None
        parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}

    def _guarded(self, caller: _Caller, request: Request, form: dict[str, str]) -> bool:
        """A cookie's POST needs its session's CSRF token and a same-origin browser."""
        if caller.login is None:
            return True
        sent = form.get("csrf", "")
        return self._same_origin(request) and hmac.compare_digest(sent, caller.login.csrf)

    # -- pages ---------------------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        return _html(pages.login_page(_next(request.query_params.get("next"))))

    async def login(self, request: Request) -> Response:
        form = await self._form(request)
        if form is None or not self._same_origin(request):
            return _html(
                pages.message_page("Not logged in", "the form came from another site"), 403
            )
        target = _next(form.get("next"))
        token = form.get("token", "")
        try:
            identity = self.throttle.check(_address(request), lambda: self._identity(token))
        except Throttled as exc:
            return _html(pages.login_page(target, exc.text()), 429, _retry(exc))
        if identity is None:
            page = pages.login_page(target, "That token is not in the console's tokens file.")
            return _html(page, 401)
        sid = secrets.token_urlsafe(32)
        self._logins[sid] = _Login(
            identity, secrets.token_urlsafe(32), time.time() + SESSION_SECONDS
        )
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, sid, max_age=SESSION_SECONDS, httponly=True, samesite="strict", path="/"
        )
        return response

    async def logout(self, request: Request) -> Response:
        """Ends the cookie's session on the server, with or without the form's CSRF token: a
        stale page's logout must not leave the session alive, and a forced logout harms no one
        (the SameSite=Strict cookie is not sent on another site's POST anyway)."""
        self._logins.pop(request.cookies.get(COOKIE, ""), None)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def runs_page(self, request: Request) -> Response:
        caller = self._caller(request)
        if caller is None:
            return _to_login(request)
        try:
            runs = await run_in_threadpool(self._list)
        except RunsError as exc:
            return _html(pages.message_page("No runs", str(exc), caller_view(caller)), 200)
        waiting = [r for r in runs if r.status == "interrupted"]
        records = [await run_in_threadpool(read_run, self.store, r.thread_id) for r in waiting]
        where = store_name(self.store)
        return _html(pages.runs_page(where, runs, records, caller_view(caller), self.approval))

    async def run_page(self, request: Request) -> Response:
        caller = self._caller(request)
        if caller is None:
            return _to_login(request)
        thread_id = request.path_params["thread_id"]
        record = await self._record(thread_id)
        if record is None:
            text = f"no run {thread_id!r} in {store_name(self.store)}"
            return _html(pages.message_page("No such run", text, caller_view(caller)), 404)
        answered = request.query_params.get("answered")
        drawing = await run_in_threadpool(pages.drawing, record)
        view = caller_view(caller)
        return _html(pages.run_page(record, drawing, view, self.approval, answered))

    async def decide(self, request: Request) -> Response:
        caller = self._caller(request)
        if caller is None:
            return _html(pages.message_page("Not logged in", "log in with a token first"), 401)
        form = await self._form(request)
        if form is None or not self._guarded(caller, request, form):
            text = "the form is stale or came from another site; reload the run's page"
            return _html(pages.message_page("Refused", text, caller_view(caller)), 403)
        thread_id = request.path_params["thread_id"]
        decision = form.get("decision", "")
        view = caller_view(caller)
        if decision not in ("approve", "reject"):
            text = f"decision must be 'approve' or 'reject', got {decision[:40]!r}"
            return _html(pages.message_page("Refused", text, view), 400)
        record = await self._record(thread_id)
        if record is None:
            return _html(pages.message_page("No such run", f"no run {thread_id!r}", view), 404)
        lock = self._locks.setdefault(thread_id, asyncio.Lock())
        gate = (form.get("interrupt") or "")[:200], (form.get("node") or "")[:200]
        async with lock:
            problem = await self._resume(record, decision, caller.identity, *gate)
        if problem is not None:
            return _html(pages.message_page("Not answered", problem, view, thread_id), 409)
        return RedirectResponse(f"/runs/{quote(thread_id, safe='')}?answered={decision}", 303)

    # -- the store and the runtime -------------------------------------------------------------

    def _shown(self, run: Any) -> bool:
        if not self._allowed:
            return True
        return run.sop_path is not None and Path(run.sop_path) in self._allowed

    def _list(self) -> list[Any]:
        if isinstance(self.store, Path) and not self.store.exists():
            return []
        runs = list_runs(self.store, limit=None if self._allowed else LIST_LIMIT)
        return [r for r in runs if self._shown(r)][:LIST_LIMIT]

    async def _record(self, thread_id: str) -> RunRecord | None:
        try:
            record = await run_in_threadpool(read_run, self.store, thread_id)
        except RunsError:
            return None
        return record if self._shown(record) else None

    async def _resume(
        self, record: RunRecord, decision: str, identity: str, interrupt: str, node: str
    ) -> str | None:
        """Answer the gated action ``interrupt`` (at ``node``) of ``record`` as ``identity``;
        why not, in one line, or None. The form names the gate it showed: an answer naming none
        is refused, as is one for a gate another answer took or the run has left."""
        from sopgraph.runtime.runner import InputError, Session

        if not interrupt:
            return "the answer names no gated action; reload the run's page and answer there"
        if not record.sop_path or not Path(record.sop_path).exists():
            return (
                f"run {record.thread_id!r}: its SOP {record.sop_path or '(not recorded)'} is not "
                "on this machine; answer it with `sopgraph resume SOP --thread ID --decision ...`"
            )
        models = self.models()
        try:
            session = Session(
                record.sop_path, checkpoint=str(self.store), model=models.chat, lm=models.lm
            )
            async with session:
                await session.resume(
                    record.thread_id,
                    decision,
                    interrupt_id=interrupt or None,
                    node=node or None,
                    approver=identity,
                    approval=self.approval,
                )
        except InputError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - the page says it in one line; stderr keeps all
            traceback.print_exc(file=sys.stderr)
            return f"the run could not be resumed: {type(exc).__name__}: {exc}"
        return None

    def models(self) -> Any:
        """The configured models (``SOPGRAPH_MODEL``), as the MCP server's ``Hub`` loads them."""
        if self._models is None:
            from sopgraph.nodes.architectures import load_models

            self._models = load_models()
        return self._models


def caller_view(caller: _Caller) -> pages.CallerView:
    return pages.CallerView(caller.identity, caller.login.csrf if caller.login else "")


def _next(target: str | None) -> str:
    """A local path to go to after logging in: never another site (``//host``, a scheme)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else "/"


def _to_login(request: Request) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(here, safe='')}", status_code=303)


def _address(request: Request) -> str:
    """The client's address as the socket gives it (behind a proxy: the proxy's)."""
    return client_address(request.scope)


def _retry(exc: Throttled) -> dict[str, str]:
    return {"Retry-After": str(exc.retry_after)}


def _html(text: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return HTMLResponse(text, status_code=status, headers=headers)


async def _throttled(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Throttled)
    return _html(pages.message_page("Too many wrong tokens", exc.text()), 429, _retry(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such path, a method a route does not take) as pages."""
    assert isinstance(exc, HTTPException)
    path = request.url.path[:200]
    if exc.status_code == 404:
        title, text = "No such page", f"the console has no page {path!r}; its runs are at /"
    elif exc.status_code == 405:
        title, text = "Not allowed", f"{request.method} is not allowed on {path!r}"
    else:
        title, text = "Refused", str(exc.detail)
    return _html(pages.message_page(title, text), exc.status_code, dict(exc.headers or {}))


async def _server_error(request: Request, exc: Exception) -> Response:
    """A fault in the console: one line on the page (the traceback goes to stderr, from
    Starlette), with the security headers, since this answer skips the middleware."""
    text = "the console failed on this request; its stderr has the details"
    return _html(pages.message_page("Server error", text), 500, SECURITY_HEADERS)
