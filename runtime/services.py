"""What a compiled SOP graph calls at run time: executors, parameters, MCP, the invocation log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sopgraph.graphs.executors import Executor, ExecutorChain, Router, ToolContext
from sopgraph.graphs.model import Node, Sop, Verdict
from sopgraph.nodes.tool_node import ToolExecutor
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry


@dataclass
class Services:
    """Everything a node needs besides the state. One per SOP per process or batch; the
    compiled graph sees it through ``graphs.executors.NodeServices``."""

    sop: Sop
    sop_dir: Path
    registry: Registry
    params: ParamStore
    chain: ExecutorChain
    log: InvocationLog | None = None
    mcp: Any = None  # nodes.mcp.McpPool
    router: Router | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_sop(
        cls,
        sop: Sop,
        sop_dir: Path,
        *,
        log: InvocationLog,
        executors: Callable[[Registry, InvocationLog], list[Executor]],
        mcp: Any = None,
        router: Router | None = None,
    ) -> Services:
        """The services of one SOP: its tool library, its parameters and the executor chain
        that ``executors`` builds over them. The session and the Studio graphs both wire
        through here."""
        registry = Registry(sop_dir / "tools")
        return cls(
            sop=sop,
            sop_dir=sop_dir,
            registry=registry,
            params=ParamStore(sop, sop_dir),
            chain=ExecutorChain(executors(registry, log)),
            log=log,
            mcp=mcp,
            router=router,
        )

    def context(
        self, node: Node, state: dict[str, Any], run_id: str, parents: list[str]
    ) -> ToolContext:
        inp = state.get("input") or {}
        params = self.params.for_input(inp)
        verdicts = state.get("verdicts") or {}
        return ToolContext(
            node_id=node.id,
            text=self.sop.render_text(node, params),
            params=params,
            parents={p: Verdict.model_validate(verdicts[p]) for p in parents if p in verdicts},
            input=inp,
            run_id=run_id,
            mcp=self.mcp,
            node=node,
        )

    def has_tool(self, name: str) -> bool:
        return self.registry.has(name)

    def action_executor(self) -> Executor:
        return ToolExecutor(self.registry, self.log)
