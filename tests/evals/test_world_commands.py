"""The honest-world commands as a user runs them: mutation table, drift timeline, shadow, monitor."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.tools.commands import promote_preview
from sopgraph.tools.registry import Registry
from sopgraph.tools.shadow import shadow_summary
from sopgraph.triage_world import TRIAGE_SOP


def _cli(home, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "sopgraph", *args], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_mutation_table_every_pair_flips(fc_home):  # noqa: F811
    proc = _cli(fc_home, "world", "mutations", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["split"] == "eval" and out["pairs"] >= 100
    assert out["pairs_ok"] == out["pairs"]


def test_shadow_of_a_fixed_version_differs_on_drifted_alarms_only(fc_home, tmp_path):  # noqa: F811
    proc = _cli(fc_home, "shadow", "--candidate", "rc_robot_fault:2", "--alarms", "240",
                "--out", str(tmp_path / "tl"), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    found = out["shadow"]["discrepancies"]
    onset = next(d["onset_alarm"] for d in out["drift"] if d["kind"] == "type")
    assert found and out["check"]["elsewhere"] == 0
    assert out["shadow"]["compared"]["rc_robot_fault"] >= len(found)
    assert all(d["run"] >= onset and d["node"] == "rc_robot_fault" for d in found)
    assert all(d["active"] == "false" and d["candidate"] == "true" for d in found)
    # the outcome feeds `tools promote`: its preview names the shadow run and its discrepancies
    summary = shadow_summary(TRIAGE_SOP, "rc_robot_fault", 2, home=fc_home)
    assert summary and f"{len(found)} discrepancies" in summary, summary
    reg = Registry(TRIAGE_SOP / "tools")
    assert f"shadow: {summary}" in promote_preview(reg, "rc_robot_fault", 2, summary)
    assert shadow_summary(TRIAGE_SOP, "rc_robot_fault", 1, home=fc_home) is None
    log = tmp_path / "tl" / "invocations.sqlite"
    mon = _cli(fc_home, "monitor", "--log", str(log), "--reference", "60", "--json")
    assert mon.returncode == 0, mon.stderr
    assert "flags" in json.loads(mon.stdout)


def test_monitor_without_a_log_is_one_error_line(fc_home, tmp_path):  # noqa: F811
    proc = _cli(fc_home, "monitor", "--timeline", str(tmp_path / "none"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and len(proc.stderr.strip().splitlines()) == 1


def test_shadow_candidate_spec_is_checked(fc_home):  # noqa: F811
    proc = _cli(fc_home, "shadow", "--candidate", "rc_robot_fault")
    assert proc.returncode == 2 and "NODE:VERSION" in proc.stderr


def test_shadow_runs_a_copy_of_the_sop_and_counts_what_it_compared(fc_home, tmp_path):  # noqa: F811
    # a copy holding a candidate the way the Check fallback registers one: inactive, model-written
    import shutil

    from sopgraph.tools.toolmaker.demos import canonical
    from sopgraph.tools.toolmaker.sampling import tool_file

    sop = tmp_path / "copy"
    shutil.copytree(TRIAGE_SOP, sop, ignore=shutil.ignore_patterns("__pycache__"))
    reg = Registry(sop / "tools")
    node = "obs_upstream_flow_low"
    same = canonical(reg.resolve(node).fn.spec.to_dict())  # the active Check, as a candidate
    version = reg.add_version(node, tool_file(node, "copy", same), "fallback:test", activate=False)
    proc = _cli(fc_home, "shadow", "--sop", str(sop), "--timeline", "clean", "--alarms", "120",
                "--candidate", f"{node}:{version}", "--out", str(tmp_path / "tl"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads((tmp_path / "tl" / "shadow.json").read_text())
    assert out["compared"][node] > 0 and out["discrepancies"] == []
    line = f"{node}:v{version}: {out['compared'][node]} runs reached it, 0 discrepancies"
    assert line in proc.stdout
    assert shadow_summary(sop, node, version, home=fc_home) is not None
    bad = _cli(fc_home, "shadow", "--sop", str(tmp_path / "none"), "--candidate", f"{node}:1")
    assert bad.returncode == 2 and "--sop" in bad.stderr and "no sop.yaml" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
