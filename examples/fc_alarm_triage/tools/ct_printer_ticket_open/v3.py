"""ct_printer_ticket_open: was a ticket for the alarmed station's printer open at the time of the
alarm? (a spec: the station's printer is `stations.printer_id`, its tickets carry it as
equipment_id; `tickets.status` is the status today, so "open at the time" is opened_at <= t <
closed_at, closed_at NULL while still open, and a ticket closed before it was opened (an entry
error) is never open; the count of such tickets above 0 is true. The SOP names no threshold, so
the verdict states none; a station not in the ops store is no_data. Ops store times are UTC
text 'YYYY-MM-DD HH:MM:SS'.)"""

from sopgraph.tools.spec import Check, Lookup, Measure, tool

SPEC = Check(
    lookups={
        "printer": Lookup(server="ops", table="stations", column="printer_id",
                          where={"site": "$site", "station": "$station"}),
    },
    measures={
        "open_tickets": Measure(
            server="ops", table="tickets", reduce="count",
            where={"site": "$site", "equipment_id": "$printer"},
            open_at=("opened_at", "closed_at"),
        ),
    },
    value="open_tickets", op=">", threshold=0, verdict_threshold=None, unit=" tickets",
)
run = tool(SPEC)
