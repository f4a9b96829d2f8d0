"""Compiled tool of the service-interruption SOP: one customer-service API for the run's case.

The node's ``when`` predicates test the fields of the returned outcome, so the verdict
itself is always true.
"""

from sopgraph.graphs.model import Verdict

SERVER = "customer_service"
API = "check_area_outages"


async def run(input: dict, ctx) -> Verdict:
    observed = await ctx.mcp.call(SERVER, API, {"case_id": input["case_id"]})
    return Verdict(value="true", observed=observed, explanation=f"{API} returned {observed}")
