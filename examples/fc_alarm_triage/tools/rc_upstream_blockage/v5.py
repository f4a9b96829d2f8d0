"""rc_upstream_blockage: is upstream conveyance blocked, its feed averaging below
{upstream_block_pct}% of plan over the last 15 min? The same check as obs_upstream_flow_low v4
(the mean of `conveyance_5m.upstream_rate_ratio` over (t-15m, t], in percent), bound to this
node's threshold instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_upstream_flow_low", 4).bind(threshold="upstream_block_pct")
run = tool(SPEC)
