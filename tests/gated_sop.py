"""A small gated SOP for the LangGraph server's tests, served on its generic ``sop`` graph.

An observation reads the station's idle share from an MCP server (so a run opens the lazy MCP
pool in the server); past the threshold, a gated action whose approve and reject take
different edges, each to an ungated action.
"""

from __future__ import annotations

import json
from pathlib import Path

from sop_factory import make_sop

ECHO_SERVER = Path(__file__).resolve().parent / "servers" / "echo_metrics.py"
GATED = {
    "title": "Idle station, gated standby",
    "params": {"idle_pct_threshold": 25},
    "entry": {"station_idle": ["obs_idle"]},
    "nodes": {
        "obs_idle": {
            "kind": "observation",
            "text": "The station was idle more than {idle_pct_threshold}% of 15 minutes.",
            "next": {"true": ["act_standby"], "false": []},
        },
        "act_standby": {
            "kind": "action",
            "text": "Put the robot in standby.",
            "cost": "high",
            "approval": "required",
            "next": {"true": ["act_notify_dock"], "false": ["act_page_engineer"]},
        },
        "act_notify_dock": {"kind": "action", "text": "Tell the dock lead."},
        "act_page_engineer": {"kind": "action", "text": "Page the robotics engineer."},
    },
}
IDLE_TOOL = """
r = await ctx.mcp.call("metrics", "execute_range_query",
                       {"metric": "robotics.station_idle_pct", "site": ctx.input["site"]})
limit = ctx.params["idle_pct_threshold"]
return Verdict(value=r["value"] > limit, observed=r["value"], threshold=limit)
"""
# The input that reaches the gate (the echo server's idle share is past the threshold).
INPUT = {"type": "station_idle", "site": "BFI4"}


def gated_sop(root: Path, sop_id: str = "per_run_gated") -> Path:
    """The gated SOP ``sop_id`` in ``root/<sop_id>``, with its tool and its ``mcp.json``."""
    sop = make_sop(root / sop_id, {"id": sop_id, **GATED}, {"obs_idle": IDLE_TOOL})
    servers = {"metrics": {"command": "python", "args": [str(ECHO_SERVER)]}}
    (sop / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return sop
