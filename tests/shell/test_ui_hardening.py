"""The console's lower findings from the adversarial review (issue 53), in process over Starlette's
test client: failed logins throttled per address and globally (429 with Retry-After, a right
token refused too until the window passes, the tracked addresses bounded), logout ending the
server's session even without the form's CSRF field, and the security headers on every
response (Starlette's own 404 and 405, and a 500).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sopgraph.mcp_servers import console as console_module
from sopgraph.mcp_servers.console import COOKIE, Console
from sopgraph.mcp_servers.login_throttle import LoginThrottle
from sopgraph.mcp_servers.server_auth import TokenTable

ALICE_TOKEN = "alice-token-" + "a" * 32
WRONG = "w" * 40


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _console(tmp_path: Path, throttle: LoginThrottle | None = None) -> Console:
    tokens = TokenTable.parse(f"alice@example.com {ALICE_TOKEN}", "tokens")
    extra = {"throttle": throttle} if throttle is not None else {}
    return Console(tmp_path / "checkpoints.sqlite", tokens, **extra)


def _client(app, address: str = "10.0.0.1", **kw) -> TestClient:
    return TestClient(app, client=(address, 40000), follow_redirects=False, **kw)


def _login(client: TestClient, token: str):
    return client.post("/login", data={"token": token, "next": "/"})


def test_wrong_tokens_from_one_address_are_throttled_until_the_window_passes(
    tmp_path: Path,
) -> None:
    clock = Clock()
    app = _console(tmp_path, LoginThrottle(clock=clock)).app()
    attacker, neighbour = _client(app, "10.0.0.1"), _client(app, "10.0.0.2")
    for _ in range(LoginThrottle.MAX_FAILURES):
        assert _login(attacker, WRONG).status_code == 401
    clock.now += 1
    for token in (WRONG, ALICE_TOKEN):  # during the lockout a right token is refused too
        refused = _login(attacker, token)
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == str(LoginThrottle.LOCKOUT_SECONDS - 1)
        assert "try again in 59 seconds" in refused.text and "set-cookie" not in refused.headers
        assert refused.headers["content-security-policy"].startswith("default-src 'none'")
    # a bearer header from the locked address is an attempt too: refused the same way
    bearer = attacker.get("/", headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
    assert bearer.status_code == 429 and bearer.headers["retry-after"] == "59"
    # another address is not locked out by this one
    assert _login(neighbour, ALICE_TOKEN).status_code == 303
    clock.now += LoginThrottle.LOCKOUT_SECONDS
    done = _login(attacker, ALICE_TOKEN)
    assert done.status_code == 303 and COOKIE in done.headers["set-cookie"]
    assert attacker.get("/").status_code == 200


def test_wrong_bearer_tokens_count_as_failed_logins(tmp_path: Path) -> None:
    clock = Clock()
    app = _console(tmp_path, LoginThrottle(clock=clock)).app()
    client = _client(app)
    for _ in range(LoginThrottle.MAX_FAILURES):
        assert client.get("/", headers={"Authorization": f"Bearer {WRONG}"}).status_code == 303
    assert _login(client, ALICE_TOKEN).status_code == 429


def test_a_flood_from_many_addresses_locks_the_login_for_everyone(tmp_path: Path) -> None:
    clock = Clock()
    app = _console(tmp_path, LoginThrottle(clock=clock)).app()
    per_address = LoginThrottle.MAX_FAILURES - 1  # each address stays under its own limit
    for n in range(-(-LoginThrottle.GLOBAL_FAILURES // per_address)):
        client = _client(app, f"10.1.{n // 250}.{n % 250}")
        for _ in range(per_address):
            assert _login(client, WRONG).status_code in (401, 429)
    fresh = _client(app, "192.0.2.7")
    refused = _login(fresh, ALICE_TOKEN)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "too many wrong tokens" in refused.text.lower()
    clock.now += LoginThrottle.WINDOW_SECONDS + 1
    assert _login(fresh, ALICE_TOKEN).status_code == 303


def test_the_tracked_addresses_are_bounded(tmp_path: Path) -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock, max_addresses=16, global_failures=10_000)
    app = _console(tmp_path, throttle).app()
    for n in range(200):
        assert _login(_client(app, f"10.2.0.{n}"), WRONG).status_code == 401
    assert throttle.tracked() <= 16
    # a locked address is kept while others come and go (the oldest unlocked ones go first)
    locked = _client(app, "10.3.0.1")
    for _ in range(LoginThrottle.MAX_FAILURES):
        _login(locked, WRONG)
    for n in range(100):
        _login(_client(app, f"10.4.0.{n}"), WRONG)
    assert throttle.tracked() <= 16
    assert _login(locked, ALICE_TOKEN).status_code == 429


def test_logout_without_the_csrf_field_still_ends_the_session_on_the_server(
    tmp_path: Path,
) -> None:
    app = _console(tmp_path).app()
    client = _client(app)
    login = _login(client, ALICE_TOKEN)
    sid = login.cookies[COOKIE]
    assert client.get("/").status_code == 200
    out = client.post("/logout")  # a stale page's form: no csrf field
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert f'{COOKIE}=""' in out.headers["set-cookie"]  # the browser's cookie is cleared
    # and the old session id is dead on the server, not just forgotten by the browser
    replay = _client(app, cookies={COOKIE: sid})
    page = replay.get("/")
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    assert replay.post("/runs/x/decision", data={"decision": "approve"}).status_code == 401


def test_every_response_carries_the_consoles_security_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    console = _console(tmp_path)
    client = _client(console.app(), raise_server_exceptions=False)
    auth = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    home = client.get("/", headers=auth)
    assert home.status_code == 200
    wanted = {name.lower(): home.headers[name] for name in console_module.SECURITY_HEADERS}
    assert wanted["content-security-policy"].startswith("default-src 'none'")

    def broken() -> list:
        raise RuntimeError("the store broke")

    missing = client.get("/no-such-page", headers=auth)
    wrong_method = client.put("/", headers=auth)
    anonymous_405 = client.delete("/logout")
    monkeypatch.setattr(console, "_list", broken)
    failed = client.get("/", headers=auth)
    for response in (missing, wrong_method, anonymous_405, failed):
        got = {name: response.headers.get(name) for name in wanted}
        assert got == wanted, (response.status_code, response.url)

    # and the error pages stay clear
    assert missing.status_code == 404 and "No such page" in missing.text
    assert wrong_method.status_code == 405 and "GET" in wrong_method.headers["allow"]
    assert "PUT is not allowed on &#x27;/&#x27;" in wrong_method.text
    assert anonymous_405.status_code == 405
    assert failed.status_code == 500 and "the store broke" not in failed.text
    assert "Server error" in failed.text


def test_a_store_that_is_no_checkpoint_store_is_one_message_not_a_500(tmp_path: Path) -> None:
    (tmp_path / "checkpoints.sqlite").write_bytes(b"")  # an empty file: no checkpoints table
    client = _client(_console(tmp_path).app())
    assert _login(client, ALICE_TOKEN).status_code == 303
    page = client.get("/")
    assert page.status_code == 200 and "is not a checkpoint store" in page.text
