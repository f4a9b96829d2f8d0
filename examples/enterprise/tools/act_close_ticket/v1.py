"""Close the ticket with the resolution given (the server checks the requester may)."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    args = {"ticket_id": str(input["ticket_id"]), "resolution": input.get("resolution") or "closed"}
    ticket = await ctx.mcp.call("enterprise", "close_ticket", args)
    return Verdict(value="true", observed=ticket["status"])
