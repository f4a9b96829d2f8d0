"""obs_site_throughput_low: did the site induct more than {throughput_drop_pct}% fewer units in
the last hour than the hour before?

Robotics conventions: `units_inducted` is a per-station count per 5-minute interval, so an
hour's units are `sum_over_time(...[1h])` over (t-1h, t], summed over the site's stations; the
hour before is the same query at t - 1h. A station whose exporter is down contributes nothing
for the intervals it missed; no samples at all in either hour is no data. An hour before with
samples but no units (a site stop) leaves nothing to drop from: false. A spec: the drop
(previous - last) / previous in percent.
"""

from sopgraph.tools.spec import Check, Measure, tool

SPEC = Check(
    measures={
        "last": Measure(
            server="robotics", metric="units_inducted", minutes=60, reduce="sum",
            match={"site": "$site"}, across="sum",
        ),
        "previous": Measure(
            server="robotics", metric="units_inducted", minutes=60, reduce="sum",
            match={"site": "$site"}, across="sum", offset_minutes=60,
        ),
    },
    value="(previous - last) / previous", scale=100, op=">", threshold="throughput_drop_pct",
    unit="%", zero_division="false",
)
run = tool(SPEC)
