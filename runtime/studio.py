"""The graphs that LangGraph Studio and ``langgraph dev`` serve (named in ``langgraph.json``).

One module-level graph per example SOP, plus the generic ``sop`` graph (``served_sop``): a
graph factory that builds the SOP named by ``configurable.sop`` (an example name or a path), on
the assistant or per run, and remembers each thread's SOP for the reads and resumes that name
none. They are compiled without a checkpointer, since the server brings its own, and gated
actions pause with ``interrupt``, so Studio shows them and resumes them with ``approve`` or
``reject``.

Example:
    $ langgraph dev --host 127.0.0.1 --port 2024 --no-browser --allow-blocking
    >>> client = langgraph_sdk.get_client(url="http://127.0.0.1:2024")
    >>> thread = (await client.threads.create())["thread_id"]
    >>> await client.runs.wait(thread, "sop", input={"input": {"type": "station_idle"}},
    ...                        config={"configurable": {"sop": "fc_alarm_triage"}})
    >>> (await client.threads.get_state(thread))["next"]  # the gated action waiting
    >>> await client.runs.wait(thread, "sop", command=Command(resume="approve"))
"""

from __future__ import annotations

import asyncio
import logging
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.compiler import compile_sop
from sopgraph.graphs.home import home_dir
from sopgraph.graphs.loader import SopError, load_sop
from sopgraph.graphs.state import RunState
from sopgraph.nodes.mcp import McpPool, ServerConfig, load_server_configs
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.runtime.services import Services
from sopgraph.tools.invocation_log import InvocationLog

if TYPE_CHECKING:
    from langgraph_sdk.runtime import ServerRuntime

log = logging.getLogger(__name__)
# Where the server's store keeps the SOP each thread of the generic graph runs.
THREAD_SOPS = ("sopgraph", "thread_sop")


class LoopPools:
    """An MCP pool per event loop, each started on its first call.

    A pool's sessions belong to the task (and so the loop) that opened them. The server may
    run graphs on more than one loop (``BG_JOB_ISOLATED_LOOPS``), so a loop never borrows
    another's sessions. A pool that failed to start is dropped, so the next call retries.
    """

    def __init__(self, servers: dict[str, ServerConfig]):
        self.servers = servers
        self._pools: dict[asyncio.AbstractEventLoop, McpPool] = {}

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self._pools.values())

    async def _pool(self) -> McpPool:
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._pools if lp.is_closed()]:
            del self._pools[old]
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = McpPool(self.servers)
        try:
            await pool.start()  # a no-op once started; re-raises a failed start
        except Exception:
            if self._pools.get(loop) is pool:
                del self._pools[loop]
            raise
        return pool

    async def call(self, server: str, tool: str, args: dict[str, Any] | None = None) -> Any:
        return await (await self._pool()).call(server, tool, args)

    async def list_tools(self, server: str) -> list[Any]:
        return await (await self._pool()).list_tools(server)

    async def decision_tools(self, server: str) -> frozenset[str]:
        return await (await self._pool()).decision_tools(server)


def resolve_sop(spec: str | Path) -> Path:
    """An example's name (``fc_alarm_triage``) or a path to an SOP folder or file."""
    if isinstance(spec, str) and (EXAMPLES / spec / "sop.yaml").is_file():
        return EXAMPLES / spec
    path = Path(spec).expanduser().resolve()
    if not path.exists():
        names = ", ".join(sorted(p.parent.name for p in EXAMPLES.glob("*/sop.yaml")))
        raise ValueError(f"no SOP at {spec!r}: set configurable.sop to a path or one of: {names}")
    return path


def build_graph(sop_path: str | Path) -> Pregel:
    """Compile the SOP at ``sop_path`` for the server: no checkpointer, MCP opened lazily."""
    sop_dir = resolve_sop(sop_path)
    sop_dir = sop_dir if sop_dir.is_dir() else sop_dir.parent
    sop = load_sop(sop_dir)
    services = Services.for_sop(
        sop,
        sop_dir,
        log=InvocationLog(home_dir() / "invocations.sqlite"),
        executors=lambda registry, log_: [ToolExecutor(registry, log_)],
        mcp=LoopPools(load_server_configs(sop_dir)),
    )
    return compile_sop(sop, services, checkpointer=None, name=sop.id)


def broken_graph(name: str, error: str) -> Pregel:
    """A one-node graph that fails every run with ``error``: one bad SOP keeps the server up."""

    def fail(state: RunState) -> dict[str, Any]:
        raise RuntimeError(f"graph {name!r} is unavailable: {error}")

    builder = StateGraph(RunState)
    builder.add_node("sop_error", fail)
    builder.add_edge(START, "sop_error")
    builder.add_edge("sop_error", END)
    return builder.compile(name=name)


def example_graph(name: str) -> Pregel:
    try:
        return build_graph(EXAMPLES / name)
    except (SopError, OSError, ValueError) as exc:
        log.warning("example SOP %s not loaded: %s", name, exc)
        return broken_graph(name, str(exc))


@lru_cache(maxsize=64)
def _cached_graph(sop_path: Path, mtime: float) -> Pregel:
    return build_graph(sop_path)


def sop(config: RunnableConfig) -> Pregel:
    """Graph factory: the SOP named by ``configurable.sop`` (without one, every run fails
    saying so).

    The server calls it for every run and state read, with the assistant's configuration
    merged with the run's; graphs are cached per SOP file and rebuilt when it changes.
    """
    spec = (config.get("configurable") or {}).get("sop")
    if not spec:  # running some default SOP instead would return its empty verdicts
        names = ", ".join(sorted(p.parent.name for p in EXAMPLES.glob("*/sop.yaml")))
        return broken_graph(
            "sop", f"set configurable.sop to an SOP path or one of: {names} (none was given)"
        )
    path = resolve_sop(spec)
    sop_file = path / "sop.yaml" if path.is_dir() else path
    return _cached_graph(path, sop_file.stat().st_mtime if sop_file.exists() else 0.0)


service_interruption = example_graph("service_interruption")
fc_alarm_triage = example_graph("fc_alarm_triage")


async def served_sop(config: RunnableConfig, runtime: ServerRuntime) -> Pregel:
    """The server's generic ``sop`` graph: ``sop`` for the SOP a run names, else its thread's.

    A state read, and a resume that names no SOP (Studio's Continue), reach the factory with
    the thread's configuration only, and the server keeps only the assistant's there, not a
    run's. Built without the SOP, the graph has none of the thread's nodes, so the paused
    action's ``next``, ``tasks`` and ``interrupts`` vanish and a resume fails. So a run that
    names its SOP records it in the server's store under the thread (the store lives with the
    threads: in Postgres when deployed), and a read prefers the record, which is what the
    thread last ran, over an assistant's default.
    """
    configurable = dict(config.get("configurable") or {})
    thread = configurable.get("thread_id")
    store = getattr(runtime, "store", None)
    if thread and store is not None:
        running = runtime.access_context == "threads.create_run"
        named = configurable.get("sop")
        if running and named:
            await store.aput(THREAD_SOPS, str(thread), {"sop": str(named)}, index=False)
        else:
            item = await store.aget(THREAD_SOPS, str(thread))
            if item is not None:
                configurable["sop"] = item.value["sop"]
    return sop({**config, "configurable": configurable})
