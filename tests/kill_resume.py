"""The kill-and-resume scenario shared by the durability tests (SQLite and Postgres checkpoints).

A run is SIGKILLed while one of two parallel branches hangs in its tool, after the other branch
finished; resuming the thread must not re-run finished nodes. Two variants: the ``sopgraph run``
CLI process is killed and the same command resumes; or a ``sopgraph mcp serve`` HTTP server is
killed mid ``run_sop`` and a new server process continues the run on the same thread.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sop_factory import make_sop

from sopgraph.mcp_servers.server_auth import bearer_client
from sopgraph.tools.invocation_log import InvocationLog

# The HTTP servers here accept this one bearer token (the operator's tokens file, per server).
TOKEN = secrets.token_urlsafe(32)

NODES = {
    "first": {"kind": "observation", "text": "first", "next": {"true": ["slow", "quick"]}},
    "slow": {"kind": "root_cause", "text": "slow", "next": {"true": ["after"]}},
    "quick": {"kind": "root_cause", "text": "quick", "next": {"true": ["after"]}},
    "after": {"kind": "constraint", "text": "after", "next": {"true": ["act"]}},
    "act": {"kind": "action", "text": "act"},
}
# The first time it runs the slow tool hangs long enough to be killed; the second it returns.
SLOW = """
marker = os.path.join(os.environ["SOPGRAPH_HOME"], "slow_started")
first_time = not os.path.exists(marker)
open(marker, "a").write("x")
await asyncio.sleep(30 if first_time else 0.1)
return Verdict(value=True)
"""
OK = "return Verdict(value=True)"
TOOLS = {"first": OK, "slow": SLOW, "quick": OK, "after": OK}
REPO = Path(__file__).resolve().parents[1]


@dataclass
class KillResume:
    """What the scenario saw: finished tool runs after the kill and after the resume."""

    before: Counter  # node -> successful tool runs when the process was killed
    after: Counter  # the same once the resumed run ended
    result: dict[str, Any]  # the resumed run's --json output
    slow_starts: str  # one 'x' per start of the slow tool
    home: Path
    run_id: str = ""  # the run's thread in the checkpoint store (server variant: sop:thread)
    sub_servers: list[str] = field(default_factory=list)  # the killed server's child processes
    orphans: list[str] = field(default_factory=list)  # those still alive after the kill
    get_run: str = ""  # what get_run said of the killed run on the new server, before run_sop


def _cli(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "sopgraph", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill_mid_tool_then_resume(
    tmp_path: Path, sop_id: str, thread: str, extra_args: tuple[str, ...] = ()
) -> KillResume:
    """Run the scenario's SOP via ``sopgraph run`` (plus ``extra_args``), kill it, resume it."""
    home = tmp_path / "home"
    home.mkdir()
    root = make_sop(tmp_path / "sop", _sop(sop_id), TOOLS)
    args = ["run", str(root), "--input", '{"type": "alarm"}', "--thread", thread, "--json"]
    args += extra_args
    proc = _cli(home, *args)
    marker = home / "slow_started"
    deadline = time.time() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "the slow tool never started"
        time.sleep(0.05)
    time.sleep(0.5)  # let the sibling finish and its write be checkpointed
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _completed(home, thread)
    resumed = _cli(home, *args)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    result = json.loads(out)
    return KillResume(before, _completed(home, thread), result, marker.read_text(), home, thread)


def _sop(sop_id: str) -> dict[str, Any]:
    return {"id": sop_id, "entry": {"alarm": ["first"]}, "nodes": NODES}


def _completed(home: Path, run_id: str) -> Counter:
    """Node -> successful tool runs of ``run_id`` in the invocation log under ``home``."""
    log = InvocationLog(home / "invocations.sqlite")
    return Counter(r["node"] for r in log.query(run_id=run_id) if r["error"] is None)


# The server variant's SOP declares an MCP server (unused by its tools) so that the killed
# server process has a child: the scenario checks it does not outlive its parent.
SUB_SERVER = {
    "mcpServers": {
        "customer_service": {
            "command": "python",
            "args": [
                "-m",
                "sopgraph.mcp_servers.customer_service",
                "--cases",
                "{sop_dir}/cases.json",
            ],
        }
    }
}


async def kill_server_mid_tool_then_resume(
    tmp_path: Path, sop_id: str, thread: str, checkpoint: str
) -> KillResume:
    """Run the scenario's SOP through ``run_sop`` on a ``sopgraph mcp serve --transport http``
    process, SIGKILL that process mid-tool, continue the run with ``run_sop`` on the same
    thread id through a new server process sharing ``checkpoint`` and ``SOPGRAPH_HOME``."""
    home = tmp_path / "home"
    home.mkdir()
    root = make_sop(tmp_path / "sops" / sop_id, _sop(sop_id), TOOLS)
    (root / "mcp.json").write_text(json.dumps(SUB_SERVER))
    (root / "cases.json").write_text('{"defaults": {}, "cases": {}}')
    env = {**os.environ, "SOPGRAPH_HOME": str(home), "SOPGRAPH_SOPS": str(tmp_path / "sops")}
    args = {"sop_id": sop_id, "input": {"type": "alarm"}, "thread_id": thread}
    marker = home / "slow_started"

    first = _Server(env, checkpoint, tmp_path / "server-1.log")
    with first:
        call = asyncio.create_task(_run_sop(first.url, args))
        try:
            deadline = time.time() + 60
            while not marker.exists():
                assert not call.done(), f"run_sop ended before the slow tool: {call.result()}"
                assert first.proc.poll() is None, first.log()
                assert time.time() < deadline, "the slow tool never started"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # let the sibling finish and its write be checkpointed
            sub_servers = _descendants(first.proc.pid)
            assert not call.done(), "run_sop ended before the kill"
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait()
        finally:
            call.cancel()  # the client would wait for a response that will never come
            await asyncio.gather(call, return_exceptions=True)
        orphans = _survivors(sub_servers, timeout=10)
    run_id = f"{sop_id}:{thread}"
    before = _completed(home, run_id)
    with _Server(env, checkpoint, tmp_path / "server-2.log") as second:
        said = await _get_run(second.url, run_id)
        result = await _run_sop(second.url, args)
    return KillResume(
        before,
        _completed(home, run_id),
        result,
        marker.read_text(),
        home,
        run_id,
        [cmd for _, cmd in sub_servers],
        orphans,
        said,
    )


async def _run_sop(url: str, args: dict[str, Any]) -> dict[str, Any]:
    async with (
        bearer_client(TOKEN) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        result = await s.call_tool("run_sop", args)
    assert not result.isError, result.content
    return result.structuredContent


async def _get_run(url: str, run_id: str) -> str:
    """get_run's answer: the run's status, or the tool error's text."""
    async with (
        bearer_client(TOKEN) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        result = await s.call_tool("get_run", {"run_id": run_id})
    if result.isError:
        return " ".join(c.text for c in result.content if hasattr(c, "text"))
    return f"status {result.structuredContent['status']}"


class _Server:
    """A ``sopgraph mcp serve --transport http`` process on a free loopback port.

    Leaving the ``with`` stops it if it still runs (SIGTERM, then SIGKILL).
    """

    def __init__(self, env: dict[str, str], checkpoint: str, log: Path):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self._log = log
        cmd = [sys.executable, "-m", "sopgraph", "mcp", "serve", "--transport", "http"]
        cmd += ["--host", "127.0.0.1", "--port", str(self.port), "--checkpoint", checkpoint]
        tokens = log.with_suffix(".tokens")
        tokens.write_text(f"kill-resume-test {TOKEN}\n")
        tokens.chmod(0o600)
        cmd += ["--tokens", str(tokens)]
        with log.open("w") as out:
            self.proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=out, stderr=out)

    def log(self) -> str:
        return self._log.read_text()[-2000:]

    def __enter__(self) -> _Server:
        deadline = time.time() + 60
        while True:
            assert self.proc.poll() is None, self.log()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                assert time.time() < deadline, f"the server never listened\n{self.log()}"
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        stop(self.proc)


def stop(proc: subprocess.Popen) -> None:
    """Terminate ``proc`` if it still runs; kill it when it has not exited within 30 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _descendants(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of every live descendant of ``pid``, from /proc."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process just exited
        parent[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier}
        found += [(p, _cmdline(p)) for p in sorted(frontier)]
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def _survivors(procs: list[tuple[int, str]], timeout: float) -> list[str]:
    """Those of ``procs`` still alive after ``timeout`` s; they are killed before returning."""
    deadline = time.time() + timeout
    while True:
        # Same pid and command line: the process, not a newcomer reusing its pid.
        alive = [(p, cmd) for p, cmd in procs if cmd and _cmdline(p) == cmd]
        if not alive or time.time() > deadline:
            break
        time.sleep(0.1)
    for p, _ in alive:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return [cmd for _, cmd in alive]
