"""rc_sorter_jam: at least {sorter_jam_min} sorter jams in the last 30 min? The same check as
obs_sorter_jams v4 (the increase of `conveyance_5m.sorter_jam_events_total` over (t-30m, t], a
counter that resets), bound to this node's threshold instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_sorter_jams", 4).bind(threshold="sorter_jam_min")
run = tool(SPEC)
