"""The MCP servers a tool may call, as the tool-maker sees them and as the sandbox serves them.

Read once per pool with ``await Catalog.read(pool)``: each server's tools with their
descriptions and input schemas. The same catalog renders the prompt text, names the argument
that takes a query (for the spec compiler) and builds the sandbox's tool functions
(``"<server>.<tool>"`` -> the pool's call), so a candidate reaches exactly these tools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sopgraph.nodes.mcp import offered_tools
from sopgraph.nodes.sandbox import ToolFn


@dataclass(frozen=True)
class CatalogTool:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None  # MCP ``outputSchema``: a typed result

    def record_fields(self) -> dict[str, dict[str, Any]]:
        """The fields of the record this tool returns, as its ``outputSchema`` declares them
        (``{field: {"type", "enum"}}``, a ``$ref`` resolved once); none for an untyped result
        or one wrapped as ``{"result": ...}``."""
        schema = self.output_schema or {}
        props = schema.get("properties") or {}
        if schema.get("type") != "object" or not props or set(props) == {"result"}:
            return {}
        defs = schema.get("$defs") or {}
        out = {}
        for name, prop in props.items():
            ref = str(prop.get("$ref", ""))
            prop = defs.get(ref.rsplit("/", 1)[-1], prop) if ref else prop
            kind = prop.get("type")
            values = prop.get("enum") or ([prop["const"]] if "const" in prop else None)
            if kind in ("string", "number", "integer", "boolean") or values:
                out[name] = {"type": kind, "enum": values}
        return out

    @property
    def arguments(self) -> list[str]:
        return list((self.input_schema or {}).get("properties", {}))

    @property
    def required(self) -> list[str]:
        """The arguments the schema requires (none listed: none required)."""
        return list((self.input_schema or {}).get("required", []))

    def query_argument(self) -> str:
        """The first required string argument: where a query goes (``query``, ``sql``)."""
        props = (self.input_schema or {}).get("properties", {})
        required = self.required if "required" in (self.input_schema or {}) else list(props)
        for name in required:
            kinds = props.get(name, {}).get("type")
            if kinds == "string" or (isinstance(kinds, list) and "string" in kinds):
                return name
        return required[0] if required else "query"

    def time_argument(self) -> str | None:
        return next((a for a in self.arguments if a in ("time", "at", "timestamp")), None)


@dataclass
class Catalog:
    """Server -> its tools, for the servers of one SOP."""

    servers: dict[str, list[CatalogTool]] = field(default_factory=dict)
    pool: Any = None

    @classmethod
    async def read(cls, pool: Any) -> Catalog:
        """The servers' tools a decision may call (read-only deciding: a tool the tool-maker
        writes decides, so it is never shown a write tool)."""
        servers: dict[str, list[CatalogTool]] = {}
        for server in sorted(getattr(pool, "servers", None) or {}):
            listed = await pool.list_tools(server)
            readable = await offered_tools(pool, server)
            servers[server] = [
                CatalogTool(
                    server,
                    t.name,
                    (t.description or "").strip(),
                    dict(t.inputSchema or {}),
                    dict(t.outputSchema) if getattr(t, "outputSchema", None) else None,
                )
                for t in listed
                if readable is None or t.name in readable
            ]
        return cls(servers, pool)

    def names(self) -> dict[str, list[str]]:
        return {s: [t.name for t in tools] for s, tools in self.servers.items()}

    def tool(self, server: str, name: str) -> CatalogTool | None:
        return next((t for t in self.servers.get(server, []) if t.name == name), None)

    def render(self, servers: list[str] | None = None) -> str:
        """The servers' tools as prompt text: name, arguments and the first docstring lines."""
        lines = []
        for server, tools in self.servers.items():
            if servers and server not in servers:
                continue
            lines.append(f"server {server}:")
            for t in tools:
                first = " ".join(t.description.split("\n\n")[0].split())
                lines.append(f"  {t.name}({', '.join(t.arguments)}): {first}")
        return "\n".join(lines)

    def sandbox_tools(self) -> dict[str, ToolFn]:
        """``"<server>.<tool>"`` -> a function forwarding the arguments to the open pool."""

        def forward(server: str, tool: str) -> ToolFn:
            async def call(args: dict) -> Any:
                return await self.pool.call(server, tool, args)

            return call

        return {
            f"{s}.{t.name}": forward(s, t.name) for s, tools in self.servers.items() for t in tools
        }


def preview(value: Any, limit: int = 1200) -> Any:
    """``value`` when its JSON is short, else its first ``limit`` characters marked as cut."""
    text = json.dumps(value, default=str)
    return value if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"
