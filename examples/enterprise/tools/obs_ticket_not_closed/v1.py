"""Whether the ticket is still open or resolved (not closed); a ticket the requester may not
see is refused by the server."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    ticket = await ctx.mcp.call("enterprise", "get_ticket", {"ticket_id": str(input["ticket_id"])})
    return Verdict(value=ticket["status"] != "closed", observed=ticket["status"])
