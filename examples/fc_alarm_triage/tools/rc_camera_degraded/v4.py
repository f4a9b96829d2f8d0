"""rc_camera_degraded: did the station's camera fail more than {camera_fail_pct_threshold}% of
its reads over the last 30 min? obs_camera_fail_high v3's check (the mean of
`camera_read_fail_pct` for the alarmed station) over 30 minutes, with this node's threshold,
bound instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_camera_fail_high", 3).bind(
    threshold="camera_fail_pct_threshold", measures={"fail": {"minutes": 30}}
)
run = tool(SPEC)
