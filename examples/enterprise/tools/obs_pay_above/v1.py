"""Whether the employee's salary is above the amount; the server refuses pay the caller may not
read, and the refusal ends the node (graphs.executors.Refused), never a guess."""

from sopgraph.graphs.model import Verdict


async def run(input: dict, ctx) -> Verdict:
    rec = await ctx.mcp.call(
        "enterprise", "get_employee", {"emp_id": input["emp_id"], "fields": ["emp_id", "Salary"]}
    )
    pay, amount = rec.get("Salary"), input.get("amount")
    if pay is None or amount is None:
        return Verdict(value="no_data", explanation="no salary or no amount")
    return Verdict(value=pay > amount, observed=pay, threshold=amount)
