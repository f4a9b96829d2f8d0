"""A graph for an SOP whose outcome is a decision over gathered data, written as a folder.

The shape: the run input's entry calls each data tool whose arguments the input holds (one
observation node each, the record its observation), one decision node applies the rule the
rule tool-maker made (``rule_maker.py``) to the input and those records, and one answer
action per stated value of each output field (titled ``field: value``), reached by a
``next.when`` on the decision's observation. Every node's text says where it came from.

Example:
    >>> write_graph(out, "made_claims", "Claims", [Gather("desk", "get_claim",
    ...             ["claim_id"], "Claim lookup")], made, {"payout": ["yes", "no"]})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.rule_maker import MadeRule

DECIDE = "rc_decide"
FETCH = "fetch_record"

FETCH_FILE = '''"""Call the node's API on server {server!r} with the input fields its data names; the
record is the observation. A call the server answers with an error is data too ("not found"
may be what the procedure decides on): the observation is ``{{"<api>_error": message}}``
(sopgraph's fetch template, written for graphs that gather data)."""

from sopgraph.graphs.model import Verdict
from sopgraph.nodes.mcp import McpError, McpRefused

SERVER = {server!r}


async def run(input: dict, ctx) -> Verdict:
    api = ctx.node.api.name
    args = {{field: input.get(field) for field in ctx.node.data}}
    try:
        record = await ctx.mcp.call(SERVER, api, args)
    except McpRefused:
        raise
    except McpError as exc:
        return Verdict(value="no_data", observed=failed(api, exc), explanation=str(exc)[:300])
    if not isinstance(record, dict) or not record:
        return Verdict(value="no_data", observed=record, explanation=f"{{api}} returned no record")
    return Verdict(value=True, observed=record, explanation=f"{{api}} returned {{len(record)}} fields")


def failed(api: str, exc: Exception) -> dict:
    return {{f"{{api}}_error": str(exc).removeprefix(f"{server}.{{api}} failed: ")[:300]}}
'''


def failed_record(server: str, api: str, exc: Exception) -> dict[str, str]:
    """A failed call's observation, as the fetch template writes it."""
    return {f"{api}_error": str(exc).removeprefix(f"{server}.{api} failed: ")[:300]}


@dataclass
class Gather:
    server: str
    tool: str
    args: list[str]  # input fields, passed under their own names
    description: str = ""

    @property
    def node(self) -> str:
        return "obs_" + re.sub(r"[^A-Za-z0-9_]", "_", self.tool)


def answer_node(column: str, value: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", f"{column} {value}".lower()).strip("_")
    return f"answer_{slug}"[:80]


def sop_dict(
    sop_id: str, title: str, gathers: list[Gather], allowed: dict[str, list[str]], source: str
) -> dict:
    """The SOP as the loader reads it."""
    decide_next = {
        "when": [
            {"if": {"var": col, "op": "eq", "value": v}, "then": [answer_node(col, v)]}
            for col, values in allowed.items()
            for v in values
        ]
    }
    nodes: dict[str, dict] = {}
    for g in gathers:
        nodes[g.node] = {
            "kind": "observation",
            "text": (g.description or f"The record {g.tool} returns.").strip()[:400],
            "api": {"name": g.tool},
            "data": g.args,
            "tool": FETCH,
            "next": {"always": [DECIDE]},
        }
    nodes[DECIDE] = {
        "kind": "root_cause",
        "text": f"The procedure's decision ({', '.join(allowed)}) over the input and the "
        f"records gathered, as {source} states it.",
        "tool": DECIDE,
        "next": decide_next,
    }
    for col, values in allowed.items():
        for v in values:
            nodes[answer_node(col, v)] = {"kind": "action", "title": f"{col}: {v}"}
    entry = [g.node for g in gathers] or [DECIDE]
    return {"id": sop_id, "title": title, "version": 1, "entry": {"task": entry}, "nodes": nodes}


def write_graph(
    out: Path,
    sop_id: str,
    title: str,
    gathers: list[Gather],
    made: MadeRule,
    allowed: dict[str, list[str]],
    source: str,
    author: str,
) -> Path:
    """The graph folder: ``sop.yaml``, the fetch tool (one per server, shared by the
    observation nodes) and the made rule as ``rc_decide``'s active version."""
    missing = [c for c, values in allowed.items() if not values]
    if missing:
        raise ValueError(
            f"{', '.join(missing)}: the document states no values for this output, so no answer "
            "node can be written; list its values in the SOP (a definitions list, a table, or "
            "quoted values)"
        )
    servers = sorted({g.server for g in gathers})
    if len(servers) > 1:
        raise ValueError(f"the data tools come from {servers}: one server is supported")
    out.mkdir(parents=True, exist_ok=True)
    header = f"# Made by sopgraph from {source}: the rule by the rule tool-maker ({author}).\n"
    body = yaml.safe_dump(
        sop_dict(sop_id, title, gathers, allowed, source), sort_keys=False, allow_unicode=True
    )
    (out / "sop.yaml").write_text(header + body, encoding="utf-8")
    registry = Registry(out / "tools", sop_id)
    if gathers:
        registry.add_version(FETCH, FETCH_FILE.format(server=servers[0]), "human", activate=True)
    registry.add_version(
        DECIDE, made.source, author, activate=True, reason="made by the rule tool-maker",
        tokens=sum(made.tokens.values()), seconds=made.seconds,
        record_json=json.dumps(made.record(), indent=2),
    )  # fmt: skip
    return out
