"""obs_within_return_window: was the order delivered at most {return_window_days} days before
the customer asked? (a spec: the age in days of the order's latest delivery at or before the
request; no delivery on record is false)"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "days": Measure(
            server="shop",
            table="deliveries",
            where={"order_id": "$order_id"},
            column="delivered_at",
            time_column="delivered_at",
            reduce="age",
            age_unit="days",
            missing="false",
        ),
    },
    value="days",
    op="<=",
    threshold="return_window_days",
    unit=" days",
)
run = tool(SPEC)
