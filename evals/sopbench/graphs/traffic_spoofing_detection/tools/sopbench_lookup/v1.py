"""Call the node's SOP-Bench API with the task fields it takes; the node's predicates test ``result``.

``api.name`` is the MCP tool and ``data`` the task fields passed to it. The verdict is ``true``
when the API answered, and ``value`` is ``true`` for "SUSPICIOUS" answers so that plain
verdict edges can test them.
"""

from sopgraph.graphs.model import Verdict

SERVER = "sopbench"


async def run(input: dict, ctx) -> Verdict:
    api = ctx.node.api.name
    args = {field: input.get(field) for field in ctx.node.data}
    result = await ctx.mcp.call(SERVER, api, args)
    text = str(result).strip()
    return Verdict(
        value=text.upper() == "SUSPICIOUS",
        observed={"result": text},
        explanation=f"{api} returned {text!r}",
    )
