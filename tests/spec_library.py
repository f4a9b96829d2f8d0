"""The triage library's spec tools, loaded as the registry loads them (its active versions)."""

from __future__ import annotations

from sopgraph.examples import EXAMPLES
from sopgraph.graphs.loader import load_sop
from sopgraph.tools.registry import Registry
from sopgraph.tools.spec import Check

TRIAGE = EXAMPLES / "fc_alarm_triage"


def library_checks() -> dict[str, Check]:
    """Node id -> the Check of its active tool, for every decision node whose tool is a spec."""
    sop = load_sop(TRIAGE)
    reg = Registry(TRIAGE / "tools")
    out = {}
    for node in sop.decision_nodes:
        spec = getattr(reg.resolve(node.tool_name).fn, "spec", None)
        if spec is not None:
            out[node.id] = spec
    return out
