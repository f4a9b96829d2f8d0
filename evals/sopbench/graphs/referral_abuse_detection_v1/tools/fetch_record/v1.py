"""Call the node's SOP-Bench API with the task fields it takes; the record is the observation."""

from sopgraph.graphs.model import Verdict

SERVER = "sopbench"


async def run(input: dict, ctx) -> Verdict:
    api = ctx.node.api.name
    args = {field: input.get(field) for field in ctx.node.data}
    record = await ctx.mcp.call(SERVER, api, args)
    if not isinstance(record, dict) or not record:
        return Verdict(value="no_data", observed=record, explanation=f"{api} returned no record")
    return Verdict(value=True, observed=record, explanation=f"{api} returned {len(record)} fields")
