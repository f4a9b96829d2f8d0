"""Serving benchmark: many concurrent SOP runs through a sopgraph server, with latency percentiles.

Each bench starts its server on a free loopback port (or uses a given URL), sends ``n`` runs
with at most ``concurrency`` in flight, and reports completed, failed, p50_ms and p99_ms. A run
is completed when the server answered and the run's status is ``done``. ``BENCHES`` holds one
function per server; ``sopgraph bench serve --json`` prints them all.

Run ``python -m evals.bench_serve --n 50 --json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from itertools import cycle, islice
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphs.loader import load_sop

REPO = Path(__file__).resolve().parent.parent
# Until the alarm-triage SOP has its tools, the service-interruption SOP and its cases.
DEFAULT_SOP = REPO / "examples" / "service_interruption"

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
    errors: list[str] = []


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100): a latency some run actually had."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def default_inputs(sop_dir: Path) -> list[dict[str, Any]]:
    """Inputs for an SOP folder: one per case of its ``cases.json`` (the service example)."""
    cases = sop_dir / "cases.json"
    if not cases.exists():
        raise ValueError(f"{sop_dir}: no cases.json; pass the run inputs explicitly")
    return [{"case_id": cid} for cid in json.loads(cases.read_text())["cases"]]


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
    latencies: list[float],
    failures: list[str],
    wall: float,
    warmup_ms: float | None,
) -> dict[str, Any]:
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
        errors=sorted(set(failures))[:5],
    ).model_dump()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
async def mcp_server(sop_dir: Path, home: Path) -> AsyncIterator[str]:
    """``sopgraph mcp serve --transport http`` serving ``sop_dir``; yields its URL."""
    port = free_port()
    env = {**os.environ, "SOPGRAPH_SOPS": str(sop_dir), "SOPGRAPH_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sopgraph", "mcp", "serve", "--transport", "http",
         "--port", str(port)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        await wait_listening(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


async def bench_mcp(
    n: int = 50,
    concurrency: int = 50,
    sop: str | Path = DEFAULT_SOP,
    inputs: list[dict[str, Any]] | None = None,
    *,
    url: str | None = None,
    clients: int = 1,
    approval: str = "approve",
    home: Path | None = None,
) -> dict[str, Any]:
    """``n`` concurrent ``run_sop`` calls to sopgraph's MCP server over streamable HTTP.

    The server is started for the bench (its SOP search path set to ``sop``) unless ``url`` is
    given. Calls are spread over ``clients`` MCP sessions. Gated actions follow ``approval``
    (default approve, so a run does not pause). One warm-up run, not counted, opens the SOP.

    Example:
        >>> await bench_mcp(n=10, concurrency=5)
        {'server': 'mcp', 'completed': 10, 'failed': 0, 'p50_ms': ..., 'p99_ms': ..., ...}
    """
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    sop_dir = Path(sop) if Path(sop).is_dir() else Path(sop).parent
    sop_id = load_sop(sop_dir).id
    inputs = inputs if inputs is not None else default_inputs(sop_dir)
    async with AsyncExitStack() as stack:
        if url is None:
            if home is None:
                home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
            url = await stack.enter_async_context(mcp_server(sop_dir, home))
        sessions = []
        for _ in range(max(1, clients)):
            read, write, _ = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions.append(session)
        pick = cycle(sessions)

        async def call(inp: dict[str, Any]) -> str | None:
            args = {"sop_id": sop_id, "input": inp, "approval": approval}
            result = await next(pick).call_tool("run_sop", args)
            if result.isError:
                return " ".join(getattr(c, "text", "") for c in result.content)
            status = result.structuredContent["status"]
            return None if status == "done" else f"status {status}"

        start = time.perf_counter()
        warm = await call(inputs[0])
        warmup_ms = (time.perf_counter() - start) * 1000
        if warm is not None and warm.startswith("Error"):
            raise RuntimeError(f"the warm-up run failed: {warm}")
        latencies, failures, wall = await timed_runs(call, inputs, n, concurrency)
    return _summary("mcp", sop_id, n, concurrency, latencies, failures, wall, warmup_ms)


async def bench_langgraph(
    n: int = 50,
    concurrency: int = 50,
    sop: str | Path = DEFAULT_SOP,
    inputs: list[dict[str, Any]] | None = None,
    *,
    url: str | None = None,
    clients: int = 1,
    approval: str = "approve",
    home: Path | None = None,
) -> dict[str, Any]:
    """``n`` concurrent runs through the LangGraph server (``langgraph dev``) via langgraph-sdk.

    The server is started for the bench with as many concurrent jobs as ``concurrency``
    (``langgraph dev`` runs one at a time by default) unless ``url`` is given. An example SOP
    runs on its own graph of ``langgraph.json``, any other on the generic ``sop`` graph. Each
    run is stateless (``runs.wait`` without a thread); ``clients`` SDK clients share the load.
    The dev server's in-memory queue polls every 0.5 s, so each run costs at least that.

    Example:
        >>> await bench_langgraph(n=10, concurrency=5)
        {'server': 'langgraph', 'completed': 10, 'failed': 0, 'p50_ms': ..., ...}
    """
    from langgraph_sdk import get_client

    from graphs.studio import EXAMPLES
    from sopgraph.langgraph_dev import LangGraphDev, repo_config

    sop_path = Path(sop).resolve()
    sop_dir = sop_path if sop_path.is_dir() else sop_path.parent
    sop_id = load_sop(sop_path).id
    inputs = inputs if inputs is not None else default_inputs(sop_dir)
    config = repo_config()
    named = sop_dir.parent == EXAMPLES and sop_dir.name in config["graphs"]
    graph = sop_dir.name if named else "sop"
    run_config = {"configurable": {"sop": str(sop_path), "approval": approval}}
    async with AsyncExitStack() as stack:
        if url is None:
            if home is None:
                home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
            server = LangGraphDev(
                config, workdir=home / "langgraph", jobs=max(1, concurrency),
                env={"SOPGRAPH_HOME": str(home)},
            )  # fmt: skip
            await asyncio.to_thread(server.start)
            stack.callback(server.stop)
            url = server.url
        pick = cycle([get_client(url=url) for _ in range(max(1, clients))])

        async def call(inp: dict[str, Any]) -> str | None:
            values = await next(pick).runs.wait(
                None, graph, input={"input": inp}, config=run_config
            )
            if not isinstance(values, dict):
                return f"unexpected answer {values!r:.80}"
            if "__error__" in values:
                return f"error {values['__error__']}"
            if values.get("__interrupt__"):
                return "status interrupted"
            return "status unresolved" if values.get("unresolved") else None

        start = time.perf_counter()
        warm = await call(inputs[0])
        warmup_ms = (time.perf_counter() - start) * 1000
        if warm is not None and warm.startswith("error"):
            raise RuntimeError(f"the warm-up run failed: {warm}")
        latencies, failures, wall = await timed_runs(call, inputs, n, concurrency)
    return _summary("langgraph", sop_id, n, concurrency, latencies, failures, wall, warmup_ms)


# One entry per server, all with the same signature.
BENCHES: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
    "mcp": bench_mcp,
    "langgraph": bench_langgraph,
}


async def bench_serve(n: int = 50, concurrency: int = 50, **kw: Any) -> dict[str, dict[str, Any]]:
    """Every bench in ``BENCHES``, one after the other (they would compete for the CPU)."""
    return {
        name: await bench(n=n, concurrency=concurrency, **kw) for name, bench in BENCHES.items()
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--concurrency", type=int, default=50)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    results = asyncio.run(bench_serve(args.n, args.concurrency))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, r in results.items():
            print(
                f"{name}: completed {r['completed']}/{r['n']}, failed {r['failed']}, "
                f"p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, wall {r['wall_s']} s"
            )
    return 0 if all(r["failed"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
