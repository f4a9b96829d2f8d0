"""Wrong bearer tokens on `sopgraph mcp serve --transport http` are throttled (``login_throttle
.TokenThrottle`` over the console's ``LoginThrottle``): against a real server process, five wrong
tokens from one address are 401 each, then every request from it is 429 with Retry-After, a
right token too, and parallel guesses get no more tries than sequential ones; in process, over
Starlette's test client with a clock moved by hand, the lockout is per address, 50 failures from
everyone lock everyone out, a right token does not clear the count, and the lockout ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from mcp_servers.test_http_security import HEADERS, INITIALIZE, env  # noqa: F401 - env: a fixture
from starlette.testclient import TestClient

from sopgraph.mcp_servers.login_throttle import LoginThrottle
from sopgraph.mcp_servers.server_auth import TokenTable
from sopgraph.mcp_servers.sop_catalog import Catalog
from sopgraph.mcp_servers.sop_sessions import Hub
from sopgraph.mcp_servers.sopgraph_server import create_server

RIGHT = "alice-token-" + "a" * 32
WRONG = "w" * 43
LIMIT = LoginThrottle.MAX_FAILURES


def _bearer(token: str | None) -> dict[str, str]:
    return {**HEADERS, **({"authorization": f"Bearer {token}"} if token else {})}


def _assert_locked_out(r: httpx.Response, who: str = "address") -> None:
    assert r.status_code == 429, r.text
    assert 1 <= int(r.headers["retry-after"]) <= LoginThrottle.LOCKOUT_SECONDS
    body = r.json()
    assert (body["error"], body["locked_out"]) == ("too_many_failed_tokens", who), body
    assert body["retry_after"] == int(r.headers["retry-after"])
    assert "Too many wrong tokens" in body["error_description"]
    assert "www-authenticate" not in r.headers


async def test_five_wrong_tokens_lock_the_address_out_of_a_real_server(env, http_serve, tokens):  # noqa: F811
    server = http_serve(env)
    right = tokens.by_identity["alice@example.com"]
    async with httpx.AsyncClient() as http:

        async def post(token: str | None) -> httpx.Response:
            return await http.post(server.url, json=INITIALIZE, headers=_bearer(token))

        for n in range(LIMIT):
            r = await post(f"{WRONG}{n}")
            assert r.status_code == 401, r.text
            assert r.headers["www-authenticate"].startswith("Bearer ")
            if n == 1:  # a right token between the wrong ones does not clear their count
                assert (await post(right)).status_code == 200
        for token in (WRONG, right, None):  # locked out: a right token and no token too
            _assert_locked_out(await post(token))
    with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the 429 in a task group
        async with server.session(right):
            pass
    server.stop()
    assert "Traceback" not in server.stderr(), server.stderr()


async def test_parallel_wrong_tokens_get_no_more_tries_than_sequential_ones(
    env,  # noqa: F811
    http_serve,
    tokens,
):
    server = http_serve(env)
    limits = httpx.Limits(max_connections=40)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        answers = await asyncio.gather(
            *(
                http.post(server.url, json=INITIALIZE, headers=_bearer(f"{WRONG}{n}"))
                for n in range(30)
            )
        )
    codes = sorted(r.status_code for r in answers)
    assert codes == [401] * LIMIT + [429] * (30 - LIMIT), codes


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def throttle(clock: Clock) -> LoginThrottle:
    return LoginThrottle(clock=clock)


@pytest.fixture
def connect(tmp_path: Path, throttle: LoginThrottle) -> Iterator[Callable[[str], TestClient]]:
    """``connect(address)``: a test client calling from ``address``, each over its own copy of
    the server's whole HTTP app (an empty catalog; the SDK's session manager runs once per app)
    and all of them over one ``throttle``, as the clients of one server process are."""
    tokens = TokenTable.parse(f"alice@example.com {RIGHT}", "tokens")
    with ExitStack() as stack:

        def connect(address: str) -> TestClient:
            hub = Hub(Catalog(), str(tmp_path / "checkpoints.sqlite"))
            app = create_server(hub, tokens=tokens, throttle=throttle).streamable_http_app()
            client = TestClient(app, "http://127.0.0.1:8000", client=(address, 40000))
            return stack.enter_context(client)

        yield connect


def _post(client: TestClient, token: str | None) -> httpx.Response:
    return client.post("/mcp", json=INITIALIZE, headers=_bearer(token))


def test_the_lockout_is_per_address_and_ends(connect, clock: Clock) -> None:
    attacker, neighbour = connect("10.0.0.1"), connect("10.0.0.2")
    for _ in range(LIMIT):
        assert _post(attacker, WRONG).status_code == 401
    clock.now += 1
    refused = _post(attacker, RIGHT)
    _assert_locked_out(refused)
    assert refused.headers["retry-after"] == str(LoginThrottle.LOCKOUT_SECONDS - 1)
    assert "from your address" in refused.json()["error_description"]
    assert _post(neighbour, RIGHT).status_code == 200  # another address is not locked out
    assert _post(neighbour, WRONG).status_code == 401
    clock.now += LoginThrottle.LOCKOUT_SECONDS
    assert _post(attacker, RIGHT).status_code == 200


def test_a_right_token_does_not_clear_the_count(connect) -> None:
    client = connect("10.0.0.3")
    for _ in range(LIMIT - 1):
        assert _post(client, WRONG).status_code == 401
    assert _post(client, RIGHT).status_code == 200
    assert _post(client, WRONG).status_code == 401  # the fifth wrong one: locked out now
    _assert_locked_out(_post(client, RIGHT))


def test_a_flood_from_many_addresses_locks_everyone_out(connect, clock: Clock) -> None:
    per_address = LIMIT - 1  # each address stays under its own limit
    for n in range(-(-LoginThrottle.GLOBAL_FAILURES // per_address)):
        client = connect(f"10.1.0.{n}")
        for _ in range(per_address):
            assert _post(client, WRONG).status_code in (401, 429)
    fresh = connect("192.0.2.7")
    refused = _post(fresh, RIGHT)
    _assert_locked_out(refused, "everyone")
    assert "on this server" in refused.json()["error_description"]
    clock.now += LoginThrottle.WINDOW_SECONDS + 1
    assert _post(fresh, RIGHT).status_code == 200


def test_a_lockout_reached_meanwhile_turns_the_401_into_a_429(connect, throttle) -> None:
    """The pre-check at the door passes, another request locks the address out before this
    one's token is checked: ``verify_token`` refuses it unchecked and the answer is 429."""
    client = connect("10.0.0.4")
    for _ in range(LIMIT):
        assert _post(client, WRONG).status_code == 401
    throttle.refusal = lambda address: None  # the door lets it through, as in a race
    _assert_locked_out(_post(client, RIGHT))


def test_the_enterprise_server_throttles_wrong_tokens_too(tmp_path: Path) -> None:
    """The enterprise demo server over HTTP sits in the same ``TokenThrottle``: five wrong tokens
    from one address, then 429 for the right one as well (it had no throttle: issue 53)."""
    from sopgraph.mcp_servers.enterprise import DEFAULT_POLICY
    from sopgraph.mcp_servers.enterprise import create_server as enterprise_server
    from sopgraph.mcp_servers.enterprise_policy import load_policy
    from sopgraph.mcp_servers.enterprise_store import DEFAULT_DATA, load_company

    company = load_company(DEFAULT_DATA)
    policy = load_policy(DEFAULT_POLICY)
    employee = next(iter(company.employees))
    tokens = TokenTable.parse(f"{employee} {RIGHT}", "tokens")
    server = enterprise_server(company, policy, tokens=tokens, audit=tmp_path / "audit.jsonl")
    with TestClient(server.streamable_http_app(), "http://127.0.0.1:8000") as client:
        for _ in range(LIMIT):
            assert _post(client, WRONG).status_code == 401
        _assert_locked_out(_post(client, RIGHT))
