"""ct_escalation_open: was an escalation ticket for the site open at the time of the alarm?
(a spec: escalations are `tickets` of category 'escalation'; `tickets.status` is the status
today, so "open at the time" is opened_at <= t < closed_at, closed_at NULL while still open,
and a ticket closed before it was opened (an entry error) is never open; the count of such
tickets above 0 is true, none is false. The SOP names no threshold, so the verdict states none.
Ops store times are UTC text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "open_escalations": Measure(
            server="ops", table="tickets", reduce="count",
            where={"site": "$site", "category": "escalation"},
            open_at=("opened_at", "closed_at"),
        ),
    },
    value="open_escalations", op=">", threshold=0, verdict_threshold=None, unit=" tickets",
)
run = tool(SPEC)
