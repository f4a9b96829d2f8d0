"""rc_label_stock_low: is the station's latest label stock reading below {label_stock_min_pct}%?

Robotics conventions: `label_stock_pct` is the roll remaining at the end of each 5-minute
interval (0-100). The latest reading is the last sample in (t-15m, t]: a reading older than that
belongs to an exporter outage (the SOP's 15-minute telemetry horizon), so it is reported as no
data rather than trusted as current.
"""

from sopgraph.graphs.model import Verdict


def _selector(metric: str, **labels: str) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{metric}{{{inner}}}"


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["label_stock_min_pct"]
    station = input["station"]
    query = f"last_over_time({_selector('label_stock_pct', site=site, station=station)}[15m])"
    res = await ctx.mcp.call("robotics", "execute_query", {"query": query, "time": timestamp})
    series = res["data"]["result"]
    if not series:
        return Verdict(
            value="no_data",
            observed=None,
            threshold=threshold,
            explanation=f"{site} {station} reported no label stock in the last 15 minutes.",
        )
    stock = float(series[0]["value"][1])
    low = stock < threshold
    return Verdict(
        value="true" if low else "false",
        observed=round(stock, 6),
        threshold=threshold,
        explanation=(
            f"{site} {station} label roll at {stock:.1f}% "
            f"({'below' if low else 'not below'} {threshold}%)."
        ),
    )
