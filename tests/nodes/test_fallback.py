"""Fallback to the CodeAct sub-agent and the three architectures, through whole SOP runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_chat import ScriptedAgentModel, ScriptedChatModel
from langchain_core.messages import AIMessage
from sop_factory import make_sop

from sopgraph.cli import main
from sopgraph.nodes.architectures import ArchitectureError, executors_for, load_models
from sopgraph.nodes.models import Settings, SettingsError
from sopgraph.runtime.runner import Session
from sopgraph.tools.registry import Registry

SERVER = Path(__file__).resolve().parents[1] / "servers" / "toy_metrics.py"
SOP = {
    "id": "fallback",
    "params": {"idle_pct_threshold": 25, "fault_min": 0},
    "entry": {"station_idle": ["obs_idle"]},
    "nodes": {
        "obs_idle": {
            "kind": "observation",
            "text": "The station was idle more than {idle_pct_threshold}% of the last 15 minutes.",
            "data": ["robotics.station_idle_pct"],
            "next": {"true": ["rc_fault"], "false": ["act_close"]},
        },
        "rc_fault": {
            "kind": "root_cause",
            "text": "The robot reported more than {fault_min} faults.",
            "data": ["robotics.fault_count"],
            "next": {"true": ["act_standby"], "false": ["act_close"]},
        },
        "act_close": {"kind": "action", "text": "Close the alarm."},
        "act_standby": {"kind": "action", "text": "Put the robot in standby."},
    },
}
TOOL = """
r = await ctx.mcp.call("robotics", "execute_query", {{"metric": "{metric}", "site": input["site"]}})
limit = ctx.params["{param}"]
return Verdict(value=r["value"] > limit, observed=r["value"], threshold=limit)
"""
TOOLS = {
    "obs_idle": TOOL.format(metric="station_idle_pct", param="idle_pct_threshold"),
    "rc_fault": TOOL.format(metric="fault_count", param="fault_min"),
}
ALARM = {"type": "station_idle", "site": "FC1", "timestamp": "2025-01-01T10:00:00Z"}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SOPGRAPH_MODEL", raising=False)


@pytest.fixture
def sop_dir(tmp_path) -> Path:
    root = make_sop(tmp_path / "sop", SOP, TOOLS)
    servers = {"robotics": {"command": sys.executable, "args": [str(SERVER), "--name", "robotics"]}}
    (root / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


def _step(result, node: str) -> dict:
    (step,) = [s for s in result.trail if s["node"] == node]
    return step


async def test_removed_tool_falls_back_to_codeact_and_the_run_completes(sop_dir):
    Registry(sop_dir / "tools").remove("obs_idle")
    async with Session(sop_dir, model=ScriptedAgentModel()) as s:
        result = await s.run(ALARM)

    assert result.status == "done"
    assert result.path == ["obs_idle", "rc_fault", "act_close"]  # 31.2 > 25, then 0 faults
    step = _step(result, "obs_idle")
    assert step["executor"] == "codeact" and step["verdict"] == "true"
    (attempt,) = step["attempts"]
    assert attempt["executor"] == "tool" and attempt["status"] == "unavailable"
    assert "no tool for node 'obs_idle'" in attempt["reason"]
    detail = step["detail"]
    assert detail["turns"] == 2 and detail["mcp_calls"][0]["result"]["value"] == 31.2
    assert "robotics_execute_query" in detail["code"][0]["code"]
    # the node with a tool still used it, and spent no tokens
    assert _step(result, "rc_fault")["executor"] == "tool" and "detail" not in _step(
        result, "rc_fault"
    )
    assert result.tokens["input_tokens"] == detail["input_tokens"] > 0
    assert result.tokens["total_tokens"] == detail["input_tokens"] + detail["output_tokens"]
    # the trace survives the checkpoint and the JSON the CLI prints
    assert json.loads(result.model_dump_json())["tokens"] == result.tokens


async def test_without_a_model_the_node_is_unresolved_with_a_clear_reason(sop_dir):
    Registry(sop_dir / "tools").remove("obs_idle")
    async with Session(sop_dir) as s:
        result = await s.run(ALARM)

    assert result.status == "unresolved" and result.path == ["obs_idle"]
    reason = result.unresolved["obs_idle"]
    assert "tool: no tool for node 'obs_idle'" in reason
    assert "codeact: no model configured for the CodeAct sub-agent: set SOPGRAPH_MODEL" in reason
    assert result.tokens["total_tokens"] == 0


async def test_a_raising_tool_falls_back_to_codeact(sop_dir):
    make_sop(sop_dir, SOP, {"obs_idle": "raise RuntimeError('metric store timed out')"})
    async with Session(sop_dir, model=ScriptedAgentModel()) as s:
        result = await s.run(ALARM)

    step = _step(result, "obs_idle")
    assert step["executor"] == "codeact" and step["verdict"] == "true"
    assert step["attempts"] == [
        {"executor": "tool", "status": "error", "reason": "RuntimeError: metric store timed out"}
    ]


@pytest.mark.parametrize("arch", ["direct", "subagent", "codeact"])
async def test_architectures_reach_the_same_verdicts_with_different_costs(sop_dir, arch):
    async with Session(sop_dir, arch=arch, model=ScriptedAgentModel()) as s:
        result = await s.run(ALARM)

    assert result.status == "done" and result.path == ["obs_idle", "rc_fault", "act_close"]
    executors = {_step(result, n)["executor"] for n in ("obs_idle", "rc_fault")}
    assert executors == {{"direct": "tool"}.get(arch, arch)}
    if arch == "direct":
        assert result.tokens["total_tokens"] == 0
    else:
        assert result.tokens["input_tokens"] > 0 and result.tokens["output_tokens"] > 0
    if arch == "subagent":
        detail = _step(result, "obs_idle")["detail"]
        assert detail["tool_verdict"]["observed"] == 31.2 and detail["agrees_with_tool"]
        assert _step(result, "obs_idle")["tool_version"] == 1 and detail["turns"] == 2


async def test_subagent_that_never_calls_the_tool_falls_back_to_codeact(sop_dir):
    def responder(messages):
        system = messages[0].content
        if "## Functions" not in system:
            return AIMessage("I am sure it is fine.")  # the sub-agent ignores run_<node>
        if any(str(m.content).startswith("Output:") for m in messages):
            return AIMessage("ANSWER: seen it.\nVERDICT: false")
        return AIMessage("```python\nprint(robotics_list_metrics())\n```")

    async with Session(sop_dir, arch="subagent", model=ScriptedChatModel(responder=responder)) as s:
        result = await s.run(ALARM)

    step = _step(result, "obs_idle")
    assert step["executor"] == "codeact" and step["verdict"] == "false"
    (attempt,) = step["attempts"]
    assert attempt["executor"] == "subagent" and attempt["status"] == "error"
    # run_obs_idle was forced (tool_choice): a model that answers in text instead is done
    reason = "SubAgentFailed: the model never called run_obs_idle in 1 model call"
    assert attempt["reason"] == reason


def test_executors_for_rejects_unknown_or_modelless_architectures(tmp_path):
    registry = Registry(tmp_path / "tools")
    # the judge only serves free-text nodes (no API, no data hint); the chain skips it otherwise
    assert [e.name for e in executors_for("direct", None, registry)] == ["tool", "judge", "codeact"]
    assert [e.name for e in executors_for("subagent", ScriptedAgentModel(), registry)] == [
        "subagent",
        "judge",
        "codeact",
    ]
    with pytest.raises(ArchitectureError, match="unknown architecture 'react'"):
        executors_for("react", ScriptedAgentModel(), registry)
    with pytest.raises(ArchitectureError, match="'codeact' needs a model: set SOPGRAPH_MODEL"):
        executors_for("codeact", None, registry)


def test_scripted_is_no_provider_of_the_product():
    with pytest.raises(SettingsError, match="'scripted' is not `provider:name`"):
        load_models(Settings(model="scripted"))
    assert load_models(Settings(model="")).chat is None


def _fake_models(monkeypatch):
    """The CLI's models, replaced by the rule-based test agent (a fixture, not a setting)."""
    from fake_chat import scripted_dspy_lm

    from sopgraph.nodes import architectures

    fake = architectures.Models(ScriptedAgentModel(), scripted_dspy_lm(), "fake")
    monkeypatch.setattr(architectures, "load_models", lambda settings=None: fake)


def test_cli_run_arch(sop_dir, monkeypatch, capsys):
    inp = json.dumps(ALARM)
    assert main(["run", str(sop_dir), "--arch", "codeact", "--input", inp]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --arch codeact needs a model: set SOPGRAPH_MODEL (`local` runs one here)"

    _fake_models(monkeypatch)
    assert main(["run", str(sop_dir), "--arch", "codeact", "--input", inp, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "done" and out["tokens"]["total_tokens"] > 0
    assert {s["executor"] for s in out["trail"] if s["kind"] != "action"} == {"codeact"}
