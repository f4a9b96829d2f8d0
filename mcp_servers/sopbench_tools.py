"""A generic MCP server for one SOP-Bench domain: its ``toolspecs.json`` served by its ``tools.py``.

The simulator is third-party code, so it is imported here, in the server's own process, never
in sopgraph's. It prints to stdout, which would corrupt the stdio protocol: the protocol keeps
the real stdout and everything else printed goes to stderr. ``--distractor DOMAIN:TOOL``
(repeatable) adds another domain's tool to the offered set, served by that domain's simulator,
for the registry-bloat ablation.

Run: ``python -m sopgraph.mcp_servers.sopbench_tools --domain /path/to/dangerous_goods``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

# The simulator answers from the task's own row and changes nothing, so every tool is a lookup
# (a decision may call it: read-only deciding, docs/mcp-servers.md).
_LOOKUP = types.ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)


class Simulator:
    """A domain's ``*Manager`` instance and the specs it serves (loaded on first use)."""

    def __init__(self, domain: Path):
        self.domain = domain
        self.specs = {s["toolSpec"]["name"]: s["toolSpec"] for s in _specs(domain)}
        self._manager: Any = None

    @property
    def manager(self) -> Any:
        if self._manager is None:
            spec = importlib.util.spec_from_file_location(
                f"sopbench_sim_{self.domain.name}", self.domain / "tools.py"
            )
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            (cls,) = [
                c
                for name, c in vars(module).items()
                if inspect.isclass(c)
                and name.endswith("Manager")
                and c.__module__ == module.__name__
            ]
            self._manager = cls()
        return self._manager

    def call(self, name: str, args: dict[str, Any]) -> Any:
        method = getattr(self.manager, name, None)
        if callable(method) and not name.startswith("_"):
            return method(**args)
        return self.manager.process_tool_call(name, args)


def _specs(domain: Path) -> list[dict[str, Any]]:
    raw = json.loads((domain / "toolspecs.json").read_text(encoding="utf-8"))
    return raw.get("tools", raw) if isinstance(raw, dict) else raw


def to_json(value: Any) -> Any:
    """Simulator results hold pandas/numpy scalars: make them plain JSON values."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    if isinstance(value, float) and value != value:  # NaN
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _coerce_one(value: Any, kind: Any) -> Any:
    if not isinstance(value, str) or not isinstance(kind, str):
        return value
    text = value.strip()
    try:
        if kind == "integer" and float(text).is_integer():
            return int(float(text))
        if kind == "number":
            return float(text)
        if kind == "boolean" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if kind == "array":
            parsed = (
                json.loads(text)
                if text.startswith("[")
                else [v.strip() for v in text.split(",") if v.strip()]
            )
            return parsed if isinstance(parsed, list) else value
    except ValueError:
        return value
    return value


def coerce(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Text that reads as the declared type becomes that type ("1.5" for a number, "a,b" for an
    array); anything else is left for validation to report."""
    props = schema.get("properties") or {}
    return {k: _coerce_one(v, (props.get(k) or {}).get("type")) for k, v in arguments.items()}


def build_server(domain: Path, distractors: list[str] | None = None) -> Server:
    """The server: the domain's tools, then each ``DOMAIN_PATH:TOOL`` distractor."""
    main = Simulator(domain)
    offered: dict[str, tuple[Simulator, dict[str, Any]]] = {
        name: (main, spec) for name, spec in main.specs.items()
    }
    others: dict[str, Simulator] = {}
    for item in distractors or []:
        path, _, tool = item.rpartition(":")
        sim = others.setdefault(path, Simulator(Path(path)))
        if tool not in sim.specs:
            raise SystemExit(f"error: distractor {tool!r} is not a tool of {path}")
        offered.setdefault(tool, (sim, sim.specs[tool]))
    main.manager  # noqa: B018 - load the simulator now: a broken one fails at start, not mid-run
    server = Server(f"sopbench-{domain.name}")

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(
                name=name,
                description=spec.get("description", ""),
                inputSchema=(spec.get("inputSchema") or {}).get("json") or {"type": "object"},
                annotations=_LOOKUP,
            )
            for name, (_, spec) in offered.items()
        ]

    # validated here, after coercion: task fields arrive as CSV text ("1.5" for a number)
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if name not in offered:
            raise ValueError(f"unknown tool {name!r}")
        sim, spec = offered[name]
        schema = (spec.get("inputSchema") or {}).get("json") or {"type": "object"}
        arguments = coerce(arguments or {}, schema)
        try:
            jsonschema.validate(arguments, schema)
        except jsonschema.ValidationError as exc:
            raise ValueError(f"input validation error: {exc.message}") from None
        # the simulators print progress: keep it off the protocol stream
        with contextlib.redirect_stdout(sys.stderr):
            result = to_json(sim.call(name, arguments or {}))
        text = result if isinstance(result, str) else json.dumps(result)
        return [types.TextContent(type="text", text=text)]

    return server


async def serve(server: Server, protocol: io.TextIOWrapper) -> None:
    protocol_out = anyio.wrap_file(protocol)
    async with stdio_server(stdout=protocol_out) as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sopgraph.mcp_servers.sopbench_tools")
    p.add_argument("--domain", type=Path, required=True, help="SOP-Bench domain folder")
    p.add_argument(
        "--distractor", action="append", default=[], help="DOMAIN_PATH:TOOL to add (bloat)"
    )
    args = p.parse_args(argv)
    if not (args.domain / "toolspecs.json").is_file():
        print(
            f"error: {args.domain}: no toolspecs.json; give a SOP-Bench domain folder",
            file=sys.stderr,
        )
        return 2
    protocol = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8")
    sys.stdout = sys.stderr  # anything else printed (simulator imports and calls) goes to stderr
    try:
        server = build_server(args.domain, args.distractor)
    except Exception as exc:  # noqa: BLE001 - third-party simulator: report, do not trace back
        print(
            f"error: {args.domain}/tools.py: the simulator failed to load: {exc}", file=sys.stderr
        )
        return 2
    anyio.run(serve, server, protocol)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
