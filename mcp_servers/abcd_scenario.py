"""ABCD scenario MCP server: the customer profile and order of an ABCD conversation's scenario.

The ABCD SOPs' compiled tools read the data conditions (membership level, purchase date,
packaging, the Oracle's answer) here, keyed by the run input's ``scenario_id``. The file is a
list of ABCD conversations (``convo_id`` and ``scenario``, as ``abcd_sample.json``) or a
mapping ``{scenario_id: scenario}``. A scenario may add two fields ABCD keeps outside it:
``oracle`` ("yes"/"no", what [Ask the Oracle] returns) and ``today`` (ISO date, for return
windows).

Run::

    python -m sopgraph.mcp_servers.abcd_scenario --scenarios examples/abcd/data/scenarios.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Annotated, Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

SERVER_NAME = "abcd"
ScenarioId = Annotated[str, Field(description="The scenario (ABCD convo_id or case name).")]
_LOOKUP = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)


class ConfigError(Exception):
    """A scenarios file the user must fix; ``str()`` is one line."""


def load_scenarios(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such scenarios file; pass --scenarios FILE") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if isinstance(data, list):
        try:
            return {str(c["convo_id"]): c["scenario"] for c in data}
        except (KeyError, TypeError):
            raise ConfigError(
                f"{path}: a list must hold ABCD conversations with 'convo_id' and 'scenario'"
            ) from None
    if isinstance(data, dict):  # "$comment"-style keys document the file
        found = {str(k): v for k, v in data.items() if not str(k).startswith("$")}
        if all(isinstance(v, dict) for v in found.values()):
            return found
    raise ConfigError(f"{path}: expected a list of conversations or {{scenario_id: scenario}}")


def build_server(scenarios: dict[str, dict[str, Any]], source: str) -> FastMCP:
    """The server over ``scenarios``: customer, order and the Oracle's answer."""
    mcp = FastMCP(SERVER_NAME, instructions="ABCD customer-service scenarios (read-only).")

    def scenario(scenario_id: str) -> dict[str, Any]:
        found = scenarios.get(scenario_id)
        if found is None:
            raise ToolError(f"unknown scenario '{scenario_id}'; the scenarios are in {source}")
        return found

    @mcp.tool(annotations=_LOOKUP)
    def get_customer(scenario_id: ScenarioId) -> dict[str, Any]:
        """The customer's profile: name, email, username, phone, ``member_level``
        (gold, silver, bronze or guest)."""
        return dict(scenario(scenario_id).get("personal", {}))

    @mcp.tool(annotations=_LOOKUP)
    def get_order(scenario_id: ScenarioId) -> dict[str, Any]:
        """The order: order_id, ``purchase_date``, ``packaging`` (yes/no), payment method,
        address, the products, and ``today`` when the scenario gives it."""
        s = scenario(scenario_id)
        order = {**s.get("order", {}), "product": s.get("product", {})}
        if "today" in s:
            order["today"] = s["today"]
        return order

    @mcp.tool(annotations=_LOOKUP)
    def ask_the_oracle(scenario_id: ScenarioId) -> dict[str, Any]:
        """What [Ask the Oracle] answers for this scenario: ``oracle`` yes or no (absent: the
        scenario does not say)."""
        s = scenario(scenario_id)
        return {"oracle": s["oracle"]} if "oracle" in s else {}

    @mcp.tool(annotations=_LOOKUP)
    def get_scenario(scenario_id: ScenarioId) -> dict[str, Any]:
        """The whole scenario: flow, subflow, personal, order, product."""
        return scenario(scenario_id)

    return mcp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sopgraph.mcp_servers.abcd_scenario", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--scenarios", required=True, help="scenarios JSON file")
    args = parser.parse_args(argv)
    try:
        scenarios = load_scenarios(Path(args.scenarios))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    build_server(scenarios, args.scenarios).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
