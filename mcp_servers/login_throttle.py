"""Wrong bearer tokens, counted and refused for a while: the throttle of the HTTP MCP servers
and of the console (the tokens themselves are checked in ``server_auth.py``).

After ``MAX_FAILURES`` wrong tokens within ``WINDOW_SECONDS`` from one client address, or
``GLOBAL_FAILURES`` from all of them, that address (or everyone) is refused, a right token too,
until ``LOCKOUT_SECONDS`` pass (``LoginThrottle``). On an MCP server ``TokenThrottle`` wraps the
whole ASGI app: it answers 429 with ``Retry-After`` during a lockout, and ``TokenTable
.verify_token`` counts each token the SDK's auth finds wrong against the request's address.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class Throttled(Exception):
    """Too many wrong tokens: from this client address, or (``everyone``) from all of them."""

    def __init__(self, retry_after: int, everyone: bool) -> None:
        super().__init__(f"throttled for {retry_after} s")
        self.retry_after = retry_after
        self.everyone = everyone

    def text(self, place: str = "on this console", refused: str = "logins") -> str:
        """One line saying why and for how long; ``place`` names where (``everyone``)."""
        who = place if self.everyone else "from your address"
        return (
            f"Too many wrong tokens were tried {who}; {refused} are refused for now, a right "
            f"token too: try again in {self.retry_after} seconds."
        )


@dataclass
class _Window:
    """The recent failures of one client address (or of all): their times, and the lockout."""

    failures: deque[float]
    last: float = 0.0
    locked_until: float = 0.0

    def fail(self, now: float, window: float, lockout: float) -> None:
        while self.failures and self.failures[0] <= now - window:
            self.failures.popleft()
        self.failures.append(now)
        self.last = now
        if len(self.failures) == self.failures.maxlen:
            self.locked_until = now + lockout
            self.failures.clear()


class LoginThrottle:
    """Failed token checks, counted per client address and for all of them, in memory.

    After ``max_failures`` wrong tokens within ``window`` seconds from one address, that address
    is locked out for ``lockout`` seconds (counted from the failure that locked it); after
    ``global_failures`` within ``window`` from all addresses together, everyone is. While locked
    out, a token is refused without being checked, a right one too, and the refusal counts as
    nothing. A right token does not clear the failures (one valid token would otherwise let its
    holder guess others at full speed). At most ``max_addresses`` addresses are tracked: stale
    ones go first, then the longest idle unlocked ones. Safe across threads and tasks: one lock
    around each check. ``clock`` is injectable for tests (a monotonic clock by default).
    """

    MAX_FAILURES = 5
    WINDOW_SECONDS = 60
    LOCKOUT_SECONDS = 60
    GLOBAL_FAILURES = 50
    MAX_ADDRESSES = 4096

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_failures: int = MAX_FAILURES,
        window: float = WINDOW_SECONDS,
        lockout: float = LOCKOUT_SECONDS,
        global_failures: int = GLOBAL_FAILURES,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.clock = clock
        self.max_failures, self.max_addresses = max_failures, max_addresses
        self.window, self.lockout = window, lockout
        self._lock = threading.Lock()
        self._addresses: OrderedDict[str, _Window] = OrderedDict()  # longest idle first
        self._everyone = _Window(deque(maxlen=global_failures))

    def check(self, address: str, verify: Callable[[], str | None]) -> str | None:
        """What ``verify()`` finds (an identity), None counted as a failure of ``address``;
        raises ``Throttled`` instead while ``address``, or everyone, is locked out."""
        with self._lock:
            now = self.clock()
            refused = self._refusal(address, now)
            if refused is not None:
                raise refused
            identity = verify()
            if identity is None:
                self._fail(address, now)
            return identity

    def refusal(self, address: str) -> Throttled | None:
        """The ``Throttled`` refusing ``address`` now (it, or everyone, is locked out), else
        None; counts nothing."""
        with self._lock:
            return self._refusal(address, self.clock())

    def _refusal(self, address: str, now: float) -> Throttled | None:
        for window, everyone in ((self._everyone, True), (self._addresses.get(address), False)):
            if window is not None and now < window.locked_until:
                return Throttled(max(1, math.ceil(window.locked_until - now)), everyone)
        return None

    def tracked(self) -> int:
        """How many client addresses are tracked now."""
        with self._lock:
            return len(self._addresses)

    def _fail(self, address: str, now: float) -> None:
        window = self._addresses.pop(address, None) or _Window(deque(maxlen=self.max_failures))
        self._addresses[address] = window
        window.fail(now, self.window, self.lockout)
        self._everyone.fail(now, self.window, self.lockout)
        stale = now - max(self.window, self.lockout)
        while self._addresses:
            oldest = next(iter(self._addresses.values()))
            if oldest.last > stale:
                break
            self._addresses.popitem(last=False)
        while len(self._addresses) > self.max_addresses:
            unlocked = (a for a, w in self._addresses.items() if w.locked_until <= now)
            self._addresses.pop(next(unlocked, next(iter(self._addresses))))


def client_address(scope: Scope) -> str:
    """The client's address as the socket gives it (behind a proxy: the proxy's)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


@dataclass
class _Attempt:
    """One HTTP request's token check, seen by ``TokenTable.verify_token``."""

    throttle: LoginThrottle
    address: str
    refused: Throttled | None = None


_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("sopgraph_token_attempt", default=None)


class TokenThrottle:
    """ASGI middleware around a whole MCP server app: wrong bearer tokens throttled by
    ``throttle`` per client address (``scope["client"]``) and for everyone.

    While the request's address, or everyone, is locked out it answers 429 with ``Retry-After``
    and a JSON body naming why, before anything behind it runs. Otherwise it lets the request
    through with the address in a context variable, so that the SDK's auth (``TokenTable
    .verify_token``) counts a wrong token against it in the same locked step that checks the
    lockout: parallel requests get no more guesses than sequential ones. A lockout reached by
    another request meanwhile turns that request's 401 into the same 429.
    """

    def __init__(self, app: ASGIApp, throttle: LoginThrottle | None = None) -> None:
        self.app = app
        self.throttle = throttle if throttle is not None else LoginThrottle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = client_address(scope)
        refused = self.throttle.refusal(address)
        if refused is not None:
            await _too_many(send, refused)
            return
        attempt = _Attempt(self.throttle, address)

        async def answer(message: Message) -> None:
            if attempt.refused is None:
                await send(message)
            elif message["type"] == "http.response.start":
                await _too_many(send, attempt.refused)
            # the refused request's own 401 body is dropped

        reset = _ATTEMPT.set(attempt)
        try:
            await self.app(scope, receive, answer)
        finally:
            _ATTEMPT.reset(reset)


async def _too_many(send: Send, refused: Throttled) -> None:
    payload = {
        "error": "too_many_failed_tokens",
        "error_description": refused.text("on this server", "requests"),
        "locked_out": "everyone" if refused.everyone else "address",
        "retry_after": refused.retry_after,
    }
    data = json.dumps(payload).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"retry-after", str(refused.retry_after).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": data})
