"""A one-table SOP for the tool-maker's command tests: a toy SQL warehouse and labeled cases.

The node asks whether the belt averaged more than {fill_max_pct}% over the last 15 minutes;
the commands' input checks (one error line before any model call) run against it.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import dspy
import yaml
from dspy.dsp.utils.settings import DEFAULT_CONFIG

from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.record import Case

SERVER = Path(__file__).resolve().parent / "servers" / "toy_warehouse.py"
T = "2026-01-01T10:00:00Z"
NODE = "obs_belt_full"
HUMAN_MARKER = "HUMAN_TOOL_OF_THE_NODE_ITSELF"
OTHER_MARKER = "A_TOOL_OF_ANOTHER_NODE"
LABELS = {"S1": "true", "S2": "false", "S3": "false", "S4": "true", "S5": "no_data",
          "S6": "no_data", "S7": "true", "S8": "false"}  # fmt: skip
TRAIN = [Case(site=s, timestamp=T, input={"site": s, "timestamp": T}, expected=LABELS[s])
         for s in ("S1", "S2", "S3", "S4", "S5", "S6")]  # fmt: skip
HELD_OUT = [Case(site=s, timestamp=T, input={"site": s, "timestamp": T}, expected=LABELS[s])
            for s in ("S7", "S8")]  # fmt: skip


def make_toy_sop(root: Path, human_tool: bool = True) -> Path:
    """The SOP folder: sop.yaml, mcp.json, and human tools for the node and another node."""
    root.mkdir(parents=True, exist_ok=True)
    sop = {
        "id": "toy_belt",
        "params": {"fill_max_pct": 50},
        "entry": {"belt": [NODE]},
        "nodes": {
            NODE: {
                "kind": "observation",
                "text": "The belt averaged more than {fill_max_pct}% full over the last 15 minutes.",
                "data": ["warehouse.readings"],
                "next": {"true": ["rc_other"]},
            },
            "rc_other": {
                "kind": "root_cause",
                "text": "Another check of the belt.",
                "data": ["warehouse.readings"],
            },
        },
    }
    (root / "sop.yaml").write_text(yaml.safe_dump(sop, sort_keys=False))
    (root / "mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"warehouse": {"command": sys.executable, "args": [str(SERVER)]}}}
        )
    )
    reg = Registry(root / "tools", sop_id="toy_belt")
    if human_tool:
        body = '    # {marker}\n    return Verdict(value="true", explanation="{marker}")\n'
        head = "from sopgraph.graphs.model import Verdict\n\n\nasync def run(input, ctx):\n"
        reg.add_version(NODE, head + body.format(marker=HUMAN_MARKER), "human", activate=True)
        reg.add_version("rc_other", head + body.format(marker=OTHER_MARKER), "human", activate=True)
    return root


def reset_dspy() -> None:
    """DSPy's global settings back to their defaults (after a test that configured them)."""
    dspy.settings.configure(**copy.deepcopy(DEFAULT_CONFIG), inherit_config=False)
