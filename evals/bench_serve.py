"""Serving benchmark: many concurrent SOP runs through a sopgraph server, with latency percentiles.

Each bench starts its server on a free loopback port (or uses a given URL), sends ``n`` runs
with at most ``concurrency`` in flight, and reports completed, failed, p50_ms and p99_ms. A run
is completed when the server answered and the run's status is ``done``. ``BENCHES`` holds one
function per server; ``sopgraph bench serve --json`` prints them all. By default the runs are
alarm triages over the simulated world (built under the home folder if absent), gated actions
approved by policy so that every run can complete.

Run ``sopgraph bench serve --json`` (``--runs``, ``--concurrency``; default 50 and 50).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.ports import free_port
from sopgraph.runtime.latency import percentile

REPO = Path(__file__).resolve().parent.parent
TRIAGE_SOP = EXAMPLES / "fc_alarm_triage"
DEFAULT_SOP = TRIAGE_SOP
# Share of the default triage inputs whose alarm reaches a gated action (approved by policy).
GATED_SHARE = 0.2

# One run: takes an input, returns None when the run completed, else why it did not.
RunCall = Callable[[dict[str, Any]], Awaitable[str | None]]


class ServeBench(BaseModel):
    """One server's result."""

    server: str
    sop_id: str
    n: int
    concurrency: int
    completed: int
    failed: int
    p50_ms: float
    p99_ms: float
    wall_s: float
    warmup_ms: float | None = None
    # Live MCP sub-server processes under the server after the runs, by module: one each when
    # the server keeps its sessions open across runs (None: the server was not ours to inspect).
    mcp_processes: dict[str, int] | None = None
    errors: list[str] = []


def triage_inputs(home: Path, n: int, gated_share: float = GATED_SHARE) -> list[dict[str, Any]]:
    """``n`` alarm-triage run inputs from the world under ``home`` (built there if absent).

    Scenarios in file order, ``gated_share`` of them alarms whose triage reaches a gated action.
    """
    from sopgraph.evals.fc_triage.build import build_world
    from sopgraph.evals.fc_triage.dataset import load_scenarios

    paths = build_world(home, progress=sys.stderr.isatty())
    gated_ids = {i for i, node in load_sop(TRIAGE_SOP).nodes.items() if node.approval == "required"}
    scenarios = load_scenarios(paths.scenarios)
    gated = [s for s in scenarios if gated_ids & set(s.actions)]
    plain = [s for s in scenarios if not gated_ids & set(s.actions)]
    k = min(len(gated), round(n * gated_share))
    return [s.input for s in gated[:k] + plain[: n - k]]


def default_inputs(sop_dir: Path, home: Path | None = None, n: int = 50) -> list[dict[str, Any]]:
    """Inputs for an SOP folder: alarms of the triage world, or the service example's cases."""
    if sop_dir.resolve() == TRIAGE_SOP.resolve():
        return triage_inputs(home or home_dir(), n)
    cases = sop_dir / "cases.json"
    if not cases.exists():
        raise ValueError(f"{sop_dir}: no cases.json; pass the run inputs explicitly")
    return [{"case_id": cid} for cid in json.loads(cases.read_text())["cases"]]


def server_home(stack: ExitStack | AsyncExitStack, data_home: Path) -> Path:
    """A scratch ``SOPGRAPH_HOME`` for a server, linking the data folders of ``data_home``.

    The SOP's MCP servers read the world through the links, while the server's checkpoints,
    invocation log and scratch files stay out of the user's home and go with the bench.
    """
    home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sopgraph-bench-")))
    if data_home.is_dir():
        for entry in data_home.iterdir():
            if entry.is_dir():
                (home / entry.name).symlink_to(entry.resolve(), target_is_directory=True)
    return home


def mcp_processes(root_pid: int) -> dict[str, int] | None:
    """Live ``python -m sopgraph.mcp_servers.<module>`` processes descending from ``root_pid``, by module."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    children: dict[int, list[int]] = {}
    argv: dict[int, list[str]] = {}
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv[int(d.name)] = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        children.setdefault(ppid, []).append(int(d.name))
    found: dict[str, int] = {}
    todo = list(children.get(root_pid, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        args = argv.get(pid, [])
        for flag, module in zip(args, args[1:], strict=False):
            if flag == "-m" and module.startswith("sopgraph.mcp_servers."):
                name = module.removeprefix("sopgraph.mcp_servers.")
                found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))


async def timed_runs(
    call: RunCall, inputs: list[dict[str, Any]], n: int, concurrency: int
) -> tuple[list[float], list[str], float]:
    """Send ``n`` runs (inputs cycled) with at most ``concurrency`` in flight.

    Returns the latencies (ms) of all runs, the failure reasons and the wall time (s).
    """
    gate = asyncio.Semaphore(concurrency)

    async def one(inp: dict[str, Any]) -> tuple[float, str | None]:
        async with gate:
            start = time.perf_counter()
            try:
                why = await call(inp)
            except Exception as exc:  # noqa: BLE001 - a failed run is a data point, not a crash
                why = f"{type(exc).__name__}: {exc}"
            return (time.perf_counter() - start) * 1000, why

    start = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in islice(cycle(inputs), n)))
    wall = time.perf_counter() - start
    return [ms for ms, _ in done], [why for _, why in done if why is not None], wall


def _summary(
    server: str,
    sop_id: str,
    n: int,
    concurrency: int,
    timed: tuple[list[float], list[str], float],
    warmup_ms: float | None,
    processes: dict[str, int] | None,
) -> dict[str, Any]:
    latencies, failures, wall = timed
    return ServeBench(
        server=server,
        sop_id=sop_id,
        n=n,
        concurrency=concurrency,
        completed=n - len(failures),
        failed=len(failures),
        p50_ms=round(percentile(latencies, 50), 1),
        p99_ms=round(percentile(latencies, 99), 1),
        wall_s=round(wall, 3),
        warmup_ms=None if warmup_ms is None else round(warmup_ms, 1),
        mcp_processes=processes,
        errors=sorted(set(failures))[:5],
    ).model_dump()


async def wait_listening(proc: subprocess.Popen, port: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {proc.stderr.read()}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not listen on port {port}") from None
            await asyncio.sleep(0.1)


@asynccontextmanager
async def mcp_server(sop_dir: Path, home: Path) -> AsyncIterator[tuple[str, int, str]]:
    """``sopgraph mcp serve --transport http`` serving ``sop_dir``; yields its URL, pid and the
    bearer token it accepts (a fresh one, in a tokens file in ``home``)."""
    port = free_port()
    env = {**os.environ, "SOPGRAPH_SOPS": str(sop_dir), "SOPGRAPH_HOME": str(home)}
    token = secrets.token_urlsafe(32)
    tokens = home / "bench-mcp-tokens"
    tokens.write_text(f"bench {token}\n")
    tokens.chmod(0o600)
    proc = subprocess.Popen(
        # --approval client: the benchmark, as the operator, lets its client approve by policy
        [sys.executable, "-m", "sopgraph", "mcp", "serve", "--transport", "http",
         "--port", str(port), "--approval", "client", "--tokens", str(tokens)],
        env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        await wait_listening(proc, port)
        yield f"http://127.0.0.1:{port}/mcp", proc.pid, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


async def _warm_then_time(
    call: RunCall, inputs: list[dict[str, Any]], n: int, concurrency: int
) -> tuple[float, tuple[list[float], list[str], float]]:
    """One warm-up run, not counted (it opens the SOP and its MCP servers), then the timed runs."""
    start = time.perf_counter()
    warm = await call(inputs[0])
    warmup_ms = (time.perf_counter() - start) * 1000
    if warm is not None and not warm.startswith("status"):
        raise RuntimeError(f"the warm-up run failed: {warm}")
    return warmup_ms, await timed_runs(call, inputs, n, concurrency)


def _resolve(sop: str | Path, inputs: list[dict[str, Any]] | None, home: Path | None, n: int):
    sop_path = Path(sop).resolve()
    sop_dir = sop_path if sop_path.is_dir() else sop_path.parent
    data_home = Path(home) if home is not None else home_dir()
    inputs = inputs if inputs is not None else default_inputs(sop_dir, data_home, n)
    if not inputs:
        raise ValueError(f"{sop_dir}: no run inputs")
    return sop_path, sop_dir, load_sop(sop_path).id, inputs, data_home


async def bench_mcp(
    n: int = 50,
    concurrency: int = 50,
    sop: str | Path = DEFAULT_SOP,
    inputs: list[dict[str, Any]] | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    clients: int = 1,
    approval: str = "approve",
    home: Path | None = None,
) -> dict[str, Any]:
    """``n`` concurrent ``run_sop`` calls to sopgraph's MCP server over streamable HTTP.

    The server is started for the bench (its SOP search path set to ``sop``, its home a scratch
    folder linking the data folders of ``home``, default the sopgraph home) unless ``url`` is
    given, with ``token``, a bearer token of that server. Calls are spread over ``clients`` MCP sessions. Gated actions follow ``approval``
    (default approve, so a run does not pause). One warm-up run, not counted, opens the SOP.

    Example:
        >>> await bench_mcp(n=10, concurrency=5)
        {'server': 'mcp', 'completed': 10, 'failed': 0, 'p50_ms': ..., 'p99_ms': ..., ...}
    """
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from sopgraph.mcp_servers.server_auth import bearer_client

    _, sop_dir, sop_id, inputs, data_home = _resolve(sop, inputs, home, n)
    pid = None
    async with AsyncExitStack() as stack:
        if url is None:
            scratch = server_home(stack, data_home)
            url, pid, token = await stack.enter_async_context(mcp_server(sop_dir, scratch))
        if token is None:
            raise ValueError(f"{url}: give the token of that server (token=...)")
        sessions = []
        for _ in range(max(1, clients)):  # one HTTP client per session, as the SDK makes
            http = await stack.enter_async_context(bearer_client(token))
            streams = streamable_http_client(url, http_client=http)
            read, write, _ = await stack.enter_async_context(streams)
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        pick = cycle(sessions)

        async def call(inp: dict[str, Any]) -> str | None:
            args = {"sop_id": sop_id, "input": inp, "approval": approval}
            result = await next(pick).call_tool("run_sop", args)
            if result.isError:
                return "error " + " ".join(getattr(c, "text", "") for c in result.content)
            status = result.structuredContent["status"]
            return None if status == "done" else f"status {status}"

        warmup_ms, timed = await _warm_then_time(call, inputs, n, concurrency)
        processes = None if pid is None else mcp_processes(pid)
    return _summary("mcp", sop_id, n, concurrency, timed, warmup_ms, processes)


async def bench_langgraph(
    n: int = 50,
    concurrency: int = 50,
    sop: str | Path = DEFAULT_SOP,
    inputs: list[dict[str, Any]] | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    clients: int = 1,
    approval: str = "approve",
    home: Path | None = None,
) -> dict[str, Any]:
    """``n`` concurrent runs through the LangGraph server (``langgraph dev``) via langgraph-sdk.

    Unless ``url`` is given, the server is started for the bench on the repository's
    ``langgraph.json``, with as many concurrent jobs as ``concurrency`` (``langgraph dev`` runs
    one at a time by default) and a scratch home linking the data folders of ``home``. An
    example SOP runs on its own graph, any other on the generic ``sop`` graph. Each run is
    stateless (``runs.wait`` without a thread); ``clients`` SDK clients share the load, each
    sending a bearer token (langgraph.json's auth): ``token``, one of the server at ``url``,
    else the token of the server started for the bench. The dev
    server's in-memory queue polls every 0.5 s, so each run costs at least that.

    Example:
        >>> await bench_langgraph(n=10, concurrency=5)
        {'server': 'langgraph', 'completed': 10, 'failed': 0, 'p50_ms': ..., ...}
    """
    from langgraph_sdk import get_client

    from sopgraph.evals.langgraph_dev import CONFIG, LangGraphDev

    sop_path, sop_dir, sop_id, inputs, data_home = _resolve(sop, inputs, home, n)
    graphs = json.loads(CONFIG.read_text())["graphs"]
    named = sop_dir.parent == EXAMPLES and sop_dir.name in graphs
    graph = sop_dir.name if named else "sop"
    run_config = {"configurable": {"sop": str(sop_path), "approval": approval}}
    server = None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with AsyncExitStack() as stack:
        if url is None:
            scratch = server_home(stack, data_home)
            server = LangGraphDev(
                workdir=scratch / "langgraph", jobs=max(1, concurrency),
                # the benchmark, as the operator, lets its client approve by policy
                env={"SOPGRAPH_HOME": str(scratch), "SOPGRAPH_APPROVAL": "client"},
            )  # fmt: skip
            await asyncio.to_thread(server.start)
            stack.callback(server.stop)
            url, headers = server.url, server.headers()
        pick = cycle([get_client(url=url, headers=headers) for _ in range(max(1, clients))])

        async def call(inp: dict[str, Any]) -> str | None:
            values = await next(pick).runs.wait(
                None, graph, input={"input": inp}, config=run_config
            )
            if not isinstance(values, dict):
                return f"error unexpected answer {values!r:.80}"
            if "__error__" in values:
                return f"error {values['__error__']}"
            if values.get("__interrupt__"):
                return "status interrupted"
            return "status unresolved" if values.get("unresolved") else None

        warmup_ms, timed = await _warm_then_time(call, inputs, n, concurrency)
        processes = None if server is None else mcp_processes(server.proc.pid)
    return _summary("langgraph", sop_id, n, concurrency, timed, warmup_ms, processes)


# One entry per server, all with the same signature.
BENCHES: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "mcp": bench_mcp,
    "langgraph": bench_langgraph,
}


async def bench_serve(
    n: int = 50,
    concurrency: int = 50,
    sop: str | Path = DEFAULT_SOP,
    inputs: list[dict[str, Any]] | None = None,
    **kw: Any,
) -> dict[str, dict[str, Any]]:
    """Every bench in ``BENCHES`` on the same inputs, one after the other (they would compete
    for the CPU). By default: ``n`` alarm triages of the world under the sopgraph home."""
    home = kw.pop("home", None)
    _, _, _, inputs, home = _resolve(sop, inputs, home, n)
    return {
        name: await bench(n=n, concurrency=concurrency, sop=sop, inputs=inputs, home=home, **kw)
        for name, bench in BENCHES.items()
    }
