"""Fixtures for tests that start `sopgraph mcp serve --transport http`: an operator's tokens file
and the server process, with MCP client sessions that present a token (or none)."""

from __future__ import annotations

import hashlib
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kill_resume import stop
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from sopgraph.mcp_servers.server_auth import bearer_client
from sopgraph.nodes.ports import free_port

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Tokens:
    """The tokens file the operator wrote, and each identity's token."""

    path: Path
    by_identity: dict[str, str]


@pytest.fixture
def tokens(tmp_path: Path) -> Tokens:
    """alice's token in clear, bob's as its SHA-256 (both forms the file takes)."""
    alice, bob = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    path = tmp_path / "mcp-tokens"
    path.write_text(
        "# identity  token\n"
        f"alice@example.com  {alice}\n"
        f"bob  sha256:{hashlib.sha256(bob.encode()).hexdigest()}\n"
    )
    path.chmod(0o600)
    return Tokens(path, {"alice@example.com": alice, "bob": bob})


@dataclass
class HttpServer:
    url: str
    proc: subprocess.Popen
    log: Path

    def stderr(self) -> str:
        return self.log.read_text()

    @asynccontextmanager
    async def session(self, token: str | None) -> AsyncIterator[ClientSession]:
        """An initialized MCP client session sending ``token`` as its bearer (None: no header)."""
        async with AsyncExitStack() as stack:
            http = None
            if token is not None:
                http = await stack.enter_async_context(bearer_client(token))
            streams = streamable_http_client(self.url, http_client=http)
            read, write, _ = await stack.enter_async_context(streams)
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            yield session

    def stop(self) -> None:
        stop(self.proc)


@pytest.fixture
def http_serve(tokens: Tokens, tmp_path: Path) -> Iterator[Callable[..., HttpServer]]:
    """``start(env, *args)``: a `sopgraph mcp serve --transport http --tokens <tokens>` process
    on a free loopback port, listening; every one started is stopped after the test."""
    started: list[HttpServer] = []

    def start(env: dict[str, str], *args: str) -> HttpServer:
        port = free_port()
        log = tmp_path / f"server-{len(started) + 1}.log"
        cmd = [sys.executable, "-m", "sopgraph", "mcp", "serve", "--transport", "http"]
        cmd += ["--port", str(port), "--tokens", str(tokens.path), *args]
        with log.open("w") as err:
            proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        server = HttpServer(f"http://127.0.0.1:{port}/mcp", proc, log)
        started.append(server)
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, server.stderr()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return server
            except OSError:
                assert time.time() < deadline, f"the HTTP server never listened\n{server.stderr()}"
                time.sleep(0.1)

    yield start
    for server in started:
        server.stop()
