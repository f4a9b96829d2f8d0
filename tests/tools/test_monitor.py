"""The drift monitor flags a changed tool version with evidence, and stays quiet on stable logs."""

from __future__ import annotations

import random

from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.monitor import exceed_p, review


def _log(tmp_path, drift_at: int | None, n: int = 600):
    log = InvocationLog(tmp_path / "inv.sqlite")
    rng = random.Random(3)
    for i in range(n):
        idle = rng.uniform(4, 60)
        if drift_at is not None and i >= drift_at:
            idle /= 100  # percent served as a fraction
        value = "true" if idle > 25 else "false"
        log.record(
            run_id=f"a{i}",
            node="obs_idle",
            tool="obs_idle",
            version=1,
            inputs={},
            output={"value": value, "observed": round(idle, 4)},
            latency_ms=1,
            error=None,
        )
        state = rng.choice(["running", "running", "fault"])
        log.record(
            run_id=f"a{i}",
            node="rc_fault",
            tool="rc_fault",
            version=1,
            inputs={},
            output={"value": "true" if state == "fault" else "false", "observed": {"state": state}},
            latency_ms=1,
            error=None,
        )
    log.close()
    return tmp_path / "inv.sqlite"


def test_a_stable_log_raises_no_flag(tmp_path):
    assert review(_log(tmp_path, None)).flags == []


def test_a_unit_change_is_flagged_on_the_right_tool_soon_after_onset(tmp_path):
    report = review(_log(tmp_path, 400))
    assert report.flags
    assert {f.tool for f in report.flags} == {"obs_idle"}
    first = report.flags[0]
    assert 400 <= first.since_run <= first.flagged_at_run < 420
    assert first.examples and first.examples[0]["observed"] < 1


def test_exceedance_bound():
    assert exceed_p(0, 8, 100) == 1.0
    assert exceed_p(8, 8, 100) < 1e-10
