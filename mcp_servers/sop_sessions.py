"""The SOP sessions of one sopgraph MCP server process, and the run ids that name their runs.

A run id is ``<sop_id>:<thread_id>``: the SOP's id prefixes the LangGraph thread so that SOPs
sharing one checkpoint store never share a thread, and any server can find a run's SOP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.mcp_servers.sop_catalog import Catalog


class Hub:
    """The SOP sessions of one server process, opened on first use, closed with the server.

    Each session lives in its own task so that it is entered and exited in the same task
    (anyio's rule for the MCP clients and checkpointer it holds), whichever request opened it.
    """

    def __init__(self, catalog: Catalog, checkpoint: str | None = None):
        self.catalog = catalog
        self.checkpoint = checkpoint
        self._sessions: dict[str, asyncio.Future] = {}
        self._owners: list[asyncio.Task] = []
        self._stop: asyncio.Event | None = None
        self._users = 0
        self._models: Any = None

    @asynccontextmanager
    async def use(self) -> AsyncIterator[Hub]:
        """Hold the hub open; sessions close when the last holder leaves.

        Over streamable HTTP FastMCP's lifespan runs once per client session, so the HTTP
        entry point holds the hub for the whole process and clients come and go.
        """
        self._users += 1
        try:
            yield self
        finally:
            self._users -= 1
            if self._users == 0:
                await self.aclose()

    async def session(self, sop_id: str) -> Any:
        """The open ``runtime.runner.Session`` of ``sop_id``."""
        entry = self.catalog.get(sop_id)
        fut = self._sessions.get(sop_id)
        if fut is None:
            fut = asyncio.get_running_loop().create_future()
            self._sessions[sop_id] = fut
            if self._stop is None:
                self._stop = asyncio.Event()
            self._owners.append(asyncio.create_task(self._own(entry.path, fut)))
        try:
            return await asyncio.shield(fut)
        except Exception as exc:
            self._sessions.pop(sop_id, None)  # a later call may retry (e.g. a world built since)
            raise ToolError(f"cannot open SOP {sop_id}: {_one_line(exc)}") from None

    async def run_session(self, run_id: str) -> Any:
        """The session of the SOP a run belongs to; the run must exist."""
        sop_id, _ = split_run_id(run_id)
        if sop_id not in self.catalog.sops:
            raise ToolError(f"no run {run_id!r}: unknown SOP {sop_id!r}")
        session = await self.session(sop_id)
        snapshot = await session.graph.aget_state({"configurable": {"thread_id": run_id}})
        if not snapshot.values:
            journal = session.journal  # a run killed before its first checkpoint
            if journal is not None and journal.unfinished_invocation(run_id, "") is not None:
                raise ToolError(
                    f"run {run_id!r} was stopped before it finished; continue it with run_sop "
                    f"(sop_id {sop_id!r}, thread_id {run_id.partition(':')[2]!r}), which "
                    "repeats no finished node"
                )
            raise ToolError(f"no run {run_id!r}; start one with run_sop")
        return session

    def models(self) -> Any:
        """The configured models (``SOPGRAPH_MODEL``, as ``sopgraph run`` reads it), loaded on
        the first SOP opened: with one, a node whose tool is missing or fails falls back to the
        CodeAct sub-agent. Nothing starts here (a local model server starts on first use)."""
        if self._models is None:
            from sopgraph.nodes.architectures import load_models

            self._models = load_models()
        return self._models

    async def _own(self, sop_dir: Path, fut: asyncio.Future) -> None:
        from sopgraph.runtime.runner import Session

        try:
            models = self.models()
            async with Session(
                sop_dir, checkpoint=self.checkpoint, model=models.chat, lm=models.lm
            ) as session:
                fut.set_result(session)
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported to whoever awaits the session
            if not fut.done():
                fut.set_exception(exc)

    async def aclose(self) -> None:
        if self._stop is not None:
            self._stop.set()
        await asyncio.gather(*self._owners, return_exceptions=True)
        self._owners.clear()
        self._sessions.clear()
        self._stop = None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return " ".join(line.removeprefix("error: ") for line in text.splitlines())


def split_run_id(run_id: str) -> tuple[str, str]:
    sop_id, sep, thread = run_id.partition(":")
    if not sep or not sop_id or not thread:
        raise ToolError(
            f"run id {run_id!r} is not of the form '<sop_id>:<thread_id>'; use the run_id "
            "returned by run_sop"
        )
    return sop_id, thread
