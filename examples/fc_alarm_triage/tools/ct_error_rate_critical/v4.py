"""ct_error_rate_critical: is the station's pick error rate over the last 15 min at least
{critical_pick_error_pct}%? obs_pick_error_high v3's check (sum(errors) / sum(attempts) for the
alarmed station, in percent) over 15 minutes, compared with `>=` and this node's threshold,
bound instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_pick_error_high", 3).bind(
    op=">=",
    threshold="critical_pick_error_pct",
    measures={"errors": {"minutes": 15}, "attempts": {"minutes": 15}},
)
run = tool(SPEC)
