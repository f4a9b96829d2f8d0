"""One tool-making session over an SOP: its MCP servers open, its catalog read, its models set.

``MakeSession`` keeps the pool open across nodes (starting a stdio MCP server costs about half
a second); ``evals.toolmaker_eval.spec_deps`` builds each node's ``SpecDeps`` from it.

Example:
    >>> async with MakeSession(sop_dir, lm=lm, model="local") as s:  # doctest: +SKIP
    ...     record = await make_spec_tool(await spec_deps(s, "obs_station_idle"), train)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy

from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.tools.params import ParamStore
from sopgraph.tools.toolmaker.catalog import Catalog
from sopgraph.tools.toolmaker.pipeline import MakeError


class MakeSession:
    """Open MCP servers and models for making tools of one SOP.

    Args:
        sop_dir: the SOP folder (``sop.yaml``, ``mcp.json``, ``params/``, ``tools/``).
        lm: the DSPy LM of the tool-maker (default ``dspy.settings.lm``).
        judge_lm: the LM of the reflector (default ``lm``; a smaller output budget suits its
            short answers).
        pool: an open MCP pool to use (default: one over the SOP's servers, opened here).
    """

    def __init__(
        self,
        sop_dir: Path,
        *,
        lm: dspy.BaseLM | None = None,
        judge_lm: dspy.BaseLM | None = None,
        model: str = "model",
        pool: Any = None,
    ):
        self.sop_dir = Path(sop_dir)
        self.sop = load_sop(self.sop_dir)
        self.params = ParamStore(self.sop, self.sop_dir)
        self.lm, self.model = lm, model
        self.judge_lm = judge_lm or lm
        self._own_pool = pool is None
        self.pool = pool or McpPool(load_server_configs(self.sop_dir))
        self.catalog = Catalog()

    async def __aenter__(self) -> MakeSession:
        if self._own_pool:
            await self.pool.start()
        self.catalog = await Catalog.read(self.pool)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._own_pool:
            await self.pool.close()

    def node(self, node_id: str):
        node = self.sop.nodes.get(node_id)
        if node is None or node.is_action:
            known = ", ".join(n.id for n in self.sop.decision_nodes)
            raise MakeError(
                f"no decision node '{node_id}' in {self.sop.id}; decision nodes: {known}"
            )
        return node
