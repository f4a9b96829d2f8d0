"""The measuring commands of the alarm-triage job, run as a user runs them: eval, bench, demo."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fc_world import fc_home, fc_world  # noqa: F401

from sopgraph.evals.fc_triage.dataset import load_scenarios
from sopgraph.evals.triage_eval import compare, eval_triage, summarize
from sopgraph.triage_world import TRIAGE_SOP


def _cli(home, *args, model: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOPGRAPH_HOME": str(home)}
    env.pop("SOPGRAPH_MODEL", None)
    if model:
        env["SOPGRAPH_MODEL"] = model
    return subprocess.run(
        [sys.executable, "-m", "sopgraph", *args],
        env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


async def test_compiled_tools_match_ground_truth(fc_world, fc_home, monkeypatch):  # noqa: F811
    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    scenarios = load_scenarios(fc_world.scenarios, split="eval")[:60]
    outcomes = await eval_triage(TRIAGE_SOP, scenarios)
    summary = summarize(outcomes, "direct")
    assert summary["n"] == 60
    assert summary["accuracy"] == 1.0, summary["failures"]
    assert summary["llm_tokens_per_alarm"] == 0
    # the comparison is not vacuous: a run against another alarm's truth is wrong
    other = next(s for s in scenarios if s.root_causes)
    differs = next(s for s in scenarios if set(s.root_causes) != set(other.root_causes))
    wrong = differs.model_copy(update={"root_causes": other.root_causes})
    good = next(o for o in outcomes if o.alarm_id == differs.alarm_id)
    assert good.correct
    assert not compare(wrong, _result_of(good), good.ms).correct


def _result_of(outcome):
    from sopgraph.graphs.model import Verdict
    from sopgraph.runtime.runner import RunResult

    kinds = {n: ("root_cause" if n in outcome.root_causes else "other") for n in outcome.path}
    return RunResult(
        thread_id="t", sop_id="s", status="done",
        verdicts={n: Verdict(value="true") for n in outcome.root_causes},
        trail=[{"node": n, "kind": kinds[n]} for n in outcome.path],
        actions=[{"node": a, "approved": True} for a in outcome.actions],
    )  # fmt: skip


def test_eval_triage_json(fc_home):  # noqa: F811
    proc = _cli(fc_home, "eval", "triage", "--alarms", "25", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("n", "accuracy", "observation_acc", "root_cause_acc", "action_acc"):
        assert key in out
    assert out["n"] == 25 and out["accuracy"] == 1.0 and out["llm_tokens_per_alarm"] == 0
    assert out["split"] == "eval"  # held out by default
    assert 0 <= out["baseline_majority_accuracy"] < out["accuracy"]


def test_codeact_needs_a_model(fc_home):  # noqa: F811
    proc = _cli(fc_home, "eval", "triage", "--arch", "codeact", "--alarms", "2", "--json")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: --arch codeact needs a model")
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_eval_tools_json(fc_home):  # noqa: F811
    proc = _cli(fc_home, "eval", "tools", "--split", "eval", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["nodes"] == 44 and out["passed"] == 44
    assert out["unit_problem_nodes"] == 0, [r["unit_problems"] for r in out["results"]]
    assert {r["node"] for r in out["results"]} >= {"obs_station_idle", "ct_downstage_precondition"}


def test_bench_triage_json(fc_home):  # noqa: F811
    proc = _cli(fc_home, "bench", "triage", "--alarms", "8", "--concurrency", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for key in ("p50_ms", "p99_ms", "alarms_per_s", "lower_bound_p50_ms", "overhead_ratio",
                "llm_tokens_per_alarm"):  # fmt: skip
        assert key in out
    assert out["alarms"] == 8 and out["llm_tokens_per_alarm"] == 0
    assert 0 < out["lower_bound_p50_ms"] < out["p50_ms"]  # the floor is below the full path
    assert out["p99_ms"] >= out["p50_ms"]
    assert out["targets"]["p99_over_p50"]["value"] == out["p99_over_p50"]


def test_bench_triage_repeat_reports_how_often_targets_were_met(fc_home, capsys):  # noqa: F811
    from sopgraph.commands.bench import _print_repeated

    proc = _cli(fc_home, "bench", "triage", "--alarms", "8", "--concurrency", "4",
                "--workers", "0", "--repeat", "2", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["runs"]) == 2 and out["summary"]["runs"] == 2
    ratios = [r["overhead_ratio"] for r in out["runs"]]
    assert out["summary"]["spread"]["overhead_ratio"]["min"] == min(ratios)
    met = out["summary"]["targets_met_in_runs"]
    assert met["all_met"] == sum(r["targets"]["all_met"] for r in out["runs"])
    _print_repeated(out["summary"], out["runs"])  # the text the same runs print without --json
    text = capsys.readouterr().out
    assert text.count("all met: ") == 2 and "targets met in runs: " in text


def test_demo_prints_table_and_writes_report(fc_home, tmp_path):  # noqa: F811
    report = tmp_path / "demo.html"
    proc = _cli(fc_home, "demo", "--alarms", "6", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    assert "match ground truth: 6/6" in proc.stdout
    assert "root causes" in proc.stdout  # the table: one line per alarm at the pipe's 80 columns
    html = report.read_text()
    assert html.count("<section class=alarm") == 6
    assert "observed" in html and "threshold" in html


def test_bench_triage_repeat_keeps_finished_runs_when_one_fails(fc_home, monkeypatch, capsys):  # noqa: F811
    import argparse

    from sopgraph.commands import bench as bench_command
    from sopgraph.evals import bench_triage as bench

    monkeypatch.setenv("SOPGRAPH_HOME", str(fc_home))
    calls = []

    async def one_then_fail(sop, scenarios, **kw):
        calls.append(len(scenarios))
        if len(calls) > 1:
            raise RuntimeError("server died")
        figures = {"overhead_ratio": 2.5, "p99_over_p50": 3.0, "durable": {"vs_memory": 0.9}}
        return figures | {"targets": bench.check_targets(figures)}

    monkeypatch.setattr(bench, "bench_triage", one_then_fail)
    args = argparse.Namespace(checkpoint="memory", arch="direct", alarms=4, concurrency=2,
                              workers=0, repeat=3, json=True)  # fmt: skip
    with pytest.raises(RuntimeError, match="server died"):
        bench_command.cmd_bench_triage(args)
    assert calls == [4, 4]
    out = capsys.readouterr()
    assert "stopped after 1 of 3 runs" in out.err
    printed = json.loads(out.out)
    assert (
        printed["summary"]["runs"] == 1
        and printed["summary"]["targets_met_in_runs"]["all_met"] == 1
    )
