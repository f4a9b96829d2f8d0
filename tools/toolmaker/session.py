"""One tool-making session over an SOP: its MCP servers open, its catalog read, its models set.

``MakeSession`` builds each node's ``MakeDeps`` (the brief the tool-maker sees, the sandbox
validation, the collector) and keeps the pool open across nodes: starting a stdio MCP server
costs about half a second.

Example:
    >>> async with MakeSession(sop_dir, chat=chat, lm=lm, model="local") as s:  # doctest: +SKIP
    ...     record = await make_tool(s.deps("obs_station_idle"), train)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy
from langchain_core.language_models import BaseChatModel

from sopgraph.graphs.loader import load_sop
from sopgraph.nodes.codeact import CodeActExecutor
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.prompts.verdict import VerdictExtractor
from sopgraph.tools.params import ParamStore
from sopgraph.tools.registry import Registry, RegistryError
from sopgraph.tools.toolmaker.catalog import Catalog
from sopgraph.tools.toolmaker.context import brief_for
from sopgraph.tools.toolmaker.maker import ToolMaker
from sopgraph.tools.toolmaker.pipeline import MakeDeps, MakeError
from sopgraph.tools.toolmaker.reflector import Reflector


class MakeSession:
    """Open MCP servers and models for making tools of one SOP.

    Args:
        sop_dir: the SOP folder (``sop.yaml``, ``mcp.json``, ``params/``, ``tools/``).
        chat: the chat model of the CodeAct data collector (None: no +D configurations).
        lm: the DSPy LM of the tool-maker (default ``dspy.settings.lm``).
        judge_lm: the LM of the reflector, the judges and the collector's verdict reader
            (default ``lm``; a smaller output budget suits their short answers).
        form: ``spec`` or ``code`` (see ``maker.ToolMaker``).
        collector_turns: the data collector's turn budget (default the sub-agent's).
    """

    def __init__(
        self,
        sop_dir: Path,
        *,
        chat: BaseChatModel | None = None,
        lm: dspy.BaseLM | None = None,
        judge_lm: dspy.BaseLM | None = None,
        model: str = "model",
        form: str = "spec",
        pool: Any = None,
        collector_turns: int | None = None,
    ):
        self.sop_dir = Path(sop_dir)
        self.sop = load_sop(self.sop_dir)
        self.params = ParamStore(self.sop, self.sop_dir)
        self.chat, self.lm, self.model, self.form = chat, lm, model, form
        self.judge_lm = judge_lm or lm
        self.collector_turns = collector_turns
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

    def example_tool(self, node_id: str) -> str:
        """A hand-written tool of ANOTHER node, as a format example (never the node's own);
        a free-Python one, since the code form writes Python."""
        registry = Registry(self.sop_dir / "tools")
        for entry in registry.list():
            if entry.node_id == node_id or entry.active is None:
                continue
            try:
                text = registry.resolve(entry.node_id).path.read_text(encoding="utf-8")
            except (RegistryError, OSError):
                continue
            if "async def run" in text:  # free Python, not a spec: the code form's example
                return text
        return ""

    def deps(self, node_id: str, key: str | None = None) -> MakeDeps:
        """What a make of ``node_id`` runs with; the brief shows the parameters of ``key`` (a
        value of the SOP's ``params_by`` field; default: the first with a parameter file)."""
        node = self.node(node_id)
        keys = self.params.keys()
        params = self.params.for_key(key or (keys[0] if keys else None))
        brief = brief_for(self.sop, node, params, self.catalog)
        collector = None
        if self.chat is not None:
            collector = CodeActExecutor(
                model=self.chat, extractor=VerdictExtractor(lm=self.judge_lm)
            )
            if self.collector_turns:
                collector.max_turns = self.collector_turns
        return MakeDeps(
            sop=self.sop,
            node=node,
            brief=brief,
            catalog=self.catalog,
            params_for=self.params.for_input,
            maker=ToolMaker(
                form=self.form,
                lm=self.lm,
                example=self.example_tool(node_id) if self.form == "code" else "",
            ),
            reflector=Reflector(lm=self.judge_lm),
            collector=collector,
            model=self.model,
        )
