"""Whether the requester's own remaining vacation leave covers the days asked for."""

from sopgraph.graphs.model import Verdict

FIELD = "Remaining Vacation Leaves"


async def run(input: dict, ctx) -> Verdict:
    me = await ctx.mcp.call("enterprise", "whoami", {})
    rec = await ctx.mcp.call("enterprise", "get_employee", {"emp_id": me["emp_id"], "fields": [FIELD]})
    left, days = rec.get(FIELD), input.get("days")
    if left is None or days is None:
        return Verdict(value="no_data", explanation="no leave balance or no days requested")
    return Verdict(value=left >= days, observed=left, threshold=days)
