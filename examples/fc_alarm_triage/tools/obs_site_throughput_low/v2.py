"""obs_site_throughput_low: did the site induct more than {throughput_drop_pct}% fewer units in
the last hour than the hour before?

Robotics conventions: `units_inducted` is a per-station count per 5-minute interval, so an
hour's units are `sum_over_time(...[1h])` over (t-1h, t], summed over the site's stations. One
range query evaluated at t - 1h and t gives both hours. A station whose exporter is down
contributes nothing for the intervals it missed; no samples at all in either hour is no data.
An hour before with samples but no units (a site stop) leaves nothing to drop from: false.

v2: v1 answered no_data when the hour before had samples and zero units.
"""

from datetime import timedelta

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import Window, as_number, instant, selector

_HOUR = timedelta(hours=1)


async def run(input: dict, ctx) -> Verdict:
    site, timestamp = input["site"], input["timestamp"]
    threshold = ctx.params["throughput_drop_pct"]
    t = instant(timestamp)
    w = Window.ending(t, 60)
    query = f"sum_over_time({selector('units_inducted', site=site)}[{w.promql}])"
    res = await ctx.mcp.call(
        "robotics",
        "execute_range_query",
        {
            "query": query,
            "start": (t - _HOUR).isoformat(),
            "end": t.isoformat(),
            "step": str(int(_HOUR.total_seconds())),
            "page_size": 1000,
        },
    )
    if res.get("truncated"):
        raise RuntimeError(f"robotics returned a truncated result for {query}")
    totals: dict[float, float] = {}
    for series in res["data"]["result"]:
        for at, value in series["values"]:
            totals[float(at)] = totals.get(float(at), 0.0) + as_number(value)
    last = totals.get(t.timestamp())
    previous = totals.get((t - _HOUR).timestamp())
    if last is None or previous is None:
        return Verdict(
            value="no_data",
            observed={"last_hour": last, "previous_hour": previous},
            threshold=threshold,
            explanation=f"{site} has no unit samples in one of the last two hours.",
        )
    if previous <= 0:
        return Verdict(
            value="false",
            observed={"last_hour": last, "previous_hour": previous},
            threshold=threshold,
            explanation=f"{site} inducted no units in the hour before: no drop to measure.",
        )
    drop = (previous - last) / previous * 100
    low = drop > threshold
    return Verdict(
        value="true" if low else "false",
        observed={"drop_pct": round(drop, 4), "last_hour": last, "previous_hour": previous},
        threshold=threshold,
        explanation=(
            f"{site} inducted {last:.0f} units in the last hour vs {previous:.0f} the hour "
            f"before: {drop:.1f}% drop ({'above' if low else 'not above'} {threshold}%)."
        ),
    )
