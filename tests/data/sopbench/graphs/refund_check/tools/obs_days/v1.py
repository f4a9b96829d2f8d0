"""Test tool: days since delivery, for the node's predicates."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    days = await ctx.mcp.call("sopbench", "daysSinceDelivery", {"order_id": input["order_id"]})
    return Verdict(value=True, observed=days)
