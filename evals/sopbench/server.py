"""How every agent reaches a domain's tools: the generic SOP-Bench MCP server, started per run."""

from __future__ import annotations

import sys
from pathlib import Path

from sopgraph.nodes.mcp import ServerConfig

SERVER = "sopbench"  # the server name the compiled graphs' tools call


def server_config(domain: Path, distractors: list[str] | None = None) -> ServerConfig:
    """A stdio server for ``domain``'s tools, plus ``DOMAIN_PATH:TOOL`` distractors."""
    args = ["-m", "sopgraph.mcp_servers.sopbench_tools", "--domain", str(domain)]
    for item in distractors or []:
        args += ["--distractor", item]
    return ServerConfig(command=sys.executable, args=args)
