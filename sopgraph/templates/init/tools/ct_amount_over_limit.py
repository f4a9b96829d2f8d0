"""ct_amount_over_limit: is the order's amount above {max_auto_refund}? (a spec: the order's
amount; no such order is no_data)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "amount": Measure(
            server="shop",
            table="orders",
            column="amount",
            reduce="max",
            where={"order_id": "$order_id"},
        ),
    },
    value="amount",
    op=">",
    threshold="max_auto_refund",
)
run = tool(SPEC)
