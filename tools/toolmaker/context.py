"""What the tool-maker and reflector may see, rendered as prompt text.

The paper's rule: the SOP and its graph, traces against the live MCP servers, training cases
with their labels. Never the labeler or its conventions, the world's generator, the node's own
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
from sopgraph.tools.toolmaker.record import CaseResult, Trace

TRACE_CHARS = 1800  # per trace in a prompt: the small model's context is 4k tokens
FAILURES_SHOWN = 4

CONTRACT = """A tool is a Python file defining
    async def run(input: dict, ctx) -> Verdict
where `from sopgraph.graphs.model import Verdict` and Verdict(value="true"|"false"|"no_data",
observed=<number or None>, threshold=<number>, explanation=<one sentence>).
input: the alarm (site, station, timestamp, type); ctx.params: the site's parameters by name
(thresholds come from here, never literals); ctx.mcp: `await ctx.mcp.call(server, tool,
args)` returns the MCP tool's JSON result. "no_data" only when the data is missing.
Only the standard library (math, statistics, datetime, json, re) may be imported."""


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


def render_trace(trace: Trace, graded: bool = True) -> str:
    """One trace: the case, the code that ran, what MCP returned, the schema, the verdict."""
    case = trace.case
    out = [f"case site={case.site} time={case.timestamp} input={json.dumps(case.input)}"]
    for code in trace.code[-2:]:
        out.append("code:\n" + code.strip()[:700])
    for ex in trace.exchanges[-3:]:
        out.append(
            f"mcp {ex.server}.{ex.tool} args={json.dumps(ex.args, default=str)[:300]} -> "
            + (f"ERROR {ex.error}" if ex.error else json.dumps(ex.result, default=str)[:400])
        )
    if trace.schema_:
        fields = [
            f"{f.source}:{f.name} {f.dtype} n={f.count} nulls={f.nulls} range=[{f.min}, {f.max}]"
            for f in trace.schema_[:12]
        ]
        out.append("schema: " + "; ".join(fields))
    verdict = trace.verdict or f"none ({trace.error})"
    if graded and case.expected is not None:
        mark = "CORRECT" if trace.correct else "WRONG"
        out.append(f"sub-agent verdict: {verdict}; label: {case.expected} -> {mark}")
    else:
        out.append(f"sub-agent verdict: {verdict}")
    return "\n".join(out)[:TRACE_CHARS]


def render_traces(traces: list[Trace], graded: bool = True) -> str:
    if not traces:
        return "none"
    return "\n\n".join(f"trace {i + 1}:\n{render_trace(t, graded)}" for i, t in enumerate(traces))


def render_evidence(discovery: str, traces: list[Trace], graded: bool = True) -> str:
    """Data collection as prompt text: the servers' schema, then the sub-agent's traces."""
    if not discovery:
        return render_traces(traces, graded)
    return f"data catalog, read from the servers:\n{discovery}\n\n{render_traces(traces, graded)}"


def render_failures(results: list[CaseResult], limit: int = FAILURES_SHOWN) -> str:
    """Failing (input, expected, predicted) triples, with the queries the candidate made."""
    wrong = [r for r in results if not r.correct]
    if not wrong:
        return "none"
    out = [f"{len(wrong)} of {len(results)} cases wrong; the first {min(limit, len(wrong))}:"]
    for r in wrong[:limit]:
        c = r.case
        got = r.value if r.error is None else f"error: {r.error}"
        line = (
            f"- input site={c.site} time={c.timestamp} station={c.input.get('station')}: "
            f"expected {c.expected}, predicted {got} (observed {json.dumps(r.observed, default=str)})"
        )
        for ex in r.exchanges[:2]:
            result = f"ERROR {ex.error}" if ex.error else json.dumps(ex.result, default=str)[:300]
            line += f"\n    query {json.dumps(ex.args, default=str)[:300]} -> {result}"
        out.append(line)
    return "\n".join(out)
