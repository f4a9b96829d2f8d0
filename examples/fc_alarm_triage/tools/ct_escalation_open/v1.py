"""ct_escalation_open: was an escalation ticket for the site open at the time of the alarm?

Ops store conventions: times are UTC text 'YYYY-MM-DD HH:MM:SS'; `tickets.status` is the
status today, so "open at the time" is opened_at <= t < closed_at (closed_at NULL: still
open); escalations are tickets of category 'escalation'.
"""

from datetime import UTC, datetime

from sopgraph.graphs.model import Verdict


def _sql_time(ts: str) -> str:
    # The alarm's ISO time, written the way the ops store writes times, so text compares order.
    t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _lit(s: object) -> str:
    return "'" + str(s).replace("'", "''") + "'"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    at = _lit(_sql_time(timestamp))
    # A few tickets were closed before they were opened (entry errors); the interval test
    # leaves them never open rather than guessing which of the two times is wrong.
    sql = f"""
        SELECT ticket_id
        FROM tickets
        WHERE site = {_lit(site)} AND category = 'escalation'
          AND opened_at <= {at} AND (closed_at IS NULL OR closed_at > {at})
        ORDER BY opened_at"""
    rows = (await ctx.mcp.call("ops", "execute_query", {"sql": sql}))["rows"]
    open_ids = [r[0] for r in rows]
    return Verdict(
        value="true" if open_ids else "false",
        observed={"open_escalations": open_ids},
        explanation=(
            f"Escalation {', '.join(open_ids)} for {site} was open at the time of the alarm."
            if open_ids
            else f"No escalation for {site} was open at the time of the alarm."
        ),
    )
