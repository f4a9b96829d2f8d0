"""Test tool: the order exists when getOrder answers (it raises for an unknown order)."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    try:
        order = await ctx.mcp.call("sopbench", "getOrder", {"order_id": input["order_id"]})
    except Exception as exc:  # noqa: BLE001 - the simulator's "not found" is an MCP tool error
        return Verdict(value=False, explanation=str(exc))
    return Verdict(value=True, observed=order)
