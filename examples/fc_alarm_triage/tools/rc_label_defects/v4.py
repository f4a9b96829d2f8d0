"""rc_label_defects: did more than {label_fail_pct_threshold}% of the station's labels fail over
the last 30 min? obs_label_fail_high v3's check (the mean of `label_print_fail_pct` for the
alarmed station) over 30 minutes instead of 15, bound instead of copied."""

from sopgraph.tools.spec import spec_of, tool

SPEC = spec_of("obs_label_fail_high", 3).bind(measures={"fail": {"minutes": 30}})
run = tool(SPEC)
