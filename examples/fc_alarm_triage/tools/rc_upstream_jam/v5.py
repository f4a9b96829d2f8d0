"""rc_upstream_jam: at least {upstream_jam_min} upstream jams in the last 30 min? obs_sorter_jams
v4's check (a resetting counter's increase over (t-30m, t] in `conveyance_5m`) on the upstream
counter `upstream_jam_events_total`, bound to this node's threshold instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_sorter_jams", 4).bind(
    threshold="upstream_jam_min", measures={"jams": {"column": "upstream_jam_events_total"}}
)
run = tool(SPEC)
