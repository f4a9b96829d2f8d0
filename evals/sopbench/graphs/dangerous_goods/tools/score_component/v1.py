"""SOP-Bench dangerous goods 5.2-5.5: one severity score from the node's API, valid when 1 to 5.

The node names the MCP tool (``api.name``) and the task fields it takes (``data``). A tool
error or a missing score is ``false`` (the score is missing), so 5.6 can impute it.
"""

from sopgraph.graphs.model import Verdict

SERVER = "sopbench"


def _score(result) -> float | None:
    if isinstance(result, dict):
        for key, value in result.items():
            if key.endswith("score"):
                return _score(value)
        return None
    try:
        return float(result)
    except (TypeError, ValueError):
        return None


async def run(input: dict, ctx) -> Verdict:
    api = ctx.node.api.name
    args = {field: input.get(field) for field in ctx.node.data}
    try:
        result = await ctx.mcp.call(SERVER, api, args)
    except Exception as exc:  # noqa: BLE001 - a failed scoring API means a missing score (5.6)
        return Verdict(value=False, observed={"score": None}, explanation=f"{api} failed: {exc}")
    score = _score(result)
    valid = score is not None and 1 <= score <= 5
    return Verdict(
        value=valid,
        observed={"score": score if valid else None, "raw": score},
        threshold="1..5",
        explanation=f"{api} returned {result}",
    )
