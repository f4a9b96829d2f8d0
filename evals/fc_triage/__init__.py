"""The simulated fulfillment-center outbound dock: a world to triage alarms against.

``build_world`` simulates the sites, writes the three backends the MCP servers serve
(robotics DuckDB, conveyance DuckDB, ops SQLite), raises the alarms and labels the ground
truth (1,500 scenarios; 100-200 cases per decision node). ``conventions.md`` lists what
the SOP text leaves unstated.
"""

from typing import Any

from sopgraph.evals.fc_triage.dataset import LabeledCase, Scenario, load_cases, load_scenarios

__all__ = ["LabeledCase", "Scenario", "WorldPaths", "build_world", "load_cases", "load_scenarios"]


def __getattr__(name: str) -> Any:
    # the builder needs numpy and DuckDB (the [bench] extra); the labeled cases, which
    # `sopgraph tools make` reads for any SOP, do not
    if name in ("WorldPaths", "build_world"):
        from sopgraph.evals.fc_triage import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
