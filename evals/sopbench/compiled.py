"""sopgraph's way on SOP-Bench: the SOP as a decision graph of compiled tools, no LLM tokens.

Each graph in ``graphs/<domain>/`` was written from the domain's ``sop.txt``; its tools call
the benchmark's simulator through the generic MCP server. Leaves are ``answer_*`` action nodes
whose title is ``column: value``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sopgraph.evals.sopbench.agent_result import AgentResult
from sopgraph.evals.sopbench.domain import Domain, Task
from sopgraph.evals.sopbench.server import SERVER, server_config
from sopgraph.nodes.mcp import McpPool

GRAPHS = Path(__file__).parent / "graphs"
ANSWER_PREFIX = "answer_"


def graph_dir(domain_name: str, root: Path | None = None) -> Path | None:
    """The compiled graph written for a domain (under ``root``, default ours), if there is one."""
    d = (root or GRAPHS) / domain_name
    return d if (d / "sop.yaml").is_file() else None


def answers_of(sop: Any, actions: list[dict[str, Any]]) -> dict[str, str]:
    """``column -> value`` from the answer leaves a run reached (titles ``column: value``)."""
    out: dict[str, str] = {}
    for action in actions:
        node = sop.nodes.get(action["node"])
        if node is not None and node.id.startswith(ANSWER_PREFIX) and ":" in node.title:
            column, _, value = node.title.partition(":")
            out[column.strip()] = value.strip()
    return out


class CompiledGraphAgent:
    """Runs one task through the domain's compiled graph; open it with ``async with``."""

    name = "sopgraph"

    def __init__(self, domain: Domain, graph: Path, distractors: list[str] | None = None):
        self.domain = domain
        self.graph = graph
        self.pool = McpPool({SERVER: server_config(domain.path, distractors)})
        self.session: Any = None

    async def __aenter__(self) -> CompiledGraphAgent:
        from sopgraph.runtime.runner import Session

        self.session = Session(
            self.graph, checkpoint="memory", approval="approve", mcp_pool=self.pool
        )
        await self.session.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.__aexit__(*exc)

    async def solve(self, task: Task) -> AgentResult:
        start = time.perf_counter()
        result = await self.session.run({"type": "task", **task.inputs}, thread_id=task.task_id)
        answer = answers_of(self.session.sop, result.actions)
        missing = [c for c in self.domain.output_columns if c not in answer]
        error = None
        if result.status != "done":
            error = f"run {result.status}: {result.unresolved}"
        elif missing:
            error = f"no answer leaf for {missing}"
        return AgentResult(
            answer=None if missing else answer,
            final_text="; ".join(f"{k}: {v}" for k, v in answer.items()),
            error=error,
            tokens=result.tokens,
            seconds=time.perf_counter() - start,
            steps=[
                {"node": s["node"], "verdict": s.get("verdict"), "observed": s.get("observed")}
                for s in result.trail
            ],
        )
