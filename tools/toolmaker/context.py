"""What the tool-maker and reflector may see, rendered as prompt text.

The paper's rule: the SOP and its graph, what the live MCP servers hold, training cases with
their labels. Never the labeler or its conventions, the world's generator, the node's own
hand-written tool, or a held-out case. Everything a prompt receives is built here from those
inputs only (``NodeBrief`` has no field for anything else), so one test can check it.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from sopgraph.graphs.model import Node, Sop
from sopgraph.graphs.topology import parents_of
from sopgraph.tools.toolmaker.catalog import Catalog


class NodeBrief(BaseModel):
    """The node as the tool-maker sees it: its text with parameters named, not substituted."""

    node_id: str
    kind: str
    text: str
    data_hints: list[str]
    graph: str
    parameters: str
    servers: str
    server_names: list[str]
    param_names: list[str]


def brief_for(sop: Sop, node: Node, params: dict[str, Any], catalog: Catalog) -> NodeBrief:
    """The node's brief: text, position in the graph, parameter names with one site's values."""
    parents = parents_of(sop).get(node.id, [])
    lines = []
    for pid in parents:
        p = sop.nodes[pid]
        edge = next((e for e, targets in _edges(p) if node.id in targets), "?")
        lines.append(f"parent {pid} ({p.kind}, reached on {edge}): {' '.join(p.text.split())}")
    for verdict, targets in _edges(node):
        for t in targets:
            child = sop.nodes.get(t)
            if child is not None:
                lines.append(f"on {verdict} -> {t} ({child.kind}): {' '.join(child.text.split())}")
    # Only the check's own parameters: forty others are noise to a small model.
    used = [name for name in params if "{" + name + "}" in node.text]
    param_lines = [f"{name} = {json.dumps(params[name])}" for name in used]
    hinted = [h.split(".", 1)[0] for h in node.data if "." in h]
    servers = [s for s in dict.fromkeys(hinted) if s in catalog.servers] or list(catalog.servers)
    return NodeBrief(
        node_id=node.id,
        kind=node.kind,
        text=" ".join(node.text.split()),
        data_hints=list(node.data),
        graph="\n".join(lines) or "(no parents or children)",
        parameters="\n".join(param_lines)
        or "(the check names no parameter: compare against a number)",
        servers=catalog.render(servers),
        server_names=servers,
        param_names=list(params),
    )


def _edges(node: Node) -> list[tuple[str, list[str]]]:
    n = node.next
    out = [("true", n.true), ("false", n.false), ("no_data", n.no_data), ("always", n.always)]
    return [(v, t) for v, t in out if t]


def check_text(brief: NodeBrief) -> str:
    hints = f" (data: {', '.join(brief.data_hints)})" if brief.data_hints else ""
    return f"{brief.node_id} [{brief.kind}]: {brief.text}{hints}"
