"""The data collector's traces, and what the tool-maker's prompts may and may not contain."""

from __future__ import annotations

import json
import re

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from fake_chat import ScriptedChatModel
from fc_world import fc_home, fc_world  # noqa: F401
from langchain_core.messages import AIMessage
from toolmaker_sop import NODE, RIGHT, TRAIN, toy_session

from sopgraph.evals.toolmaker_eval import NODE_SET, node_cases
from sopgraph.examples import EXAMPLES
from sopgraph.tools.registry import Registry
from sopgraph.tools.toolmaker.collector import balanced_sample
from sopgraph.tools.toolmaker.context import render_evidence
from sopgraph.tools.toolmaker.discovery import discover
from sopgraph.tools.toolmaker.pipeline import make_tool
from sopgraph.tools.toolmaker.record import Trace
from sopgraph.tools.toolmaker.session import MakeSession

shared_loop = pytest.mark.asyncio(loop_scope="module")
QUERY = "SELECT t, fill_pct FROM readings WHERE site = 'S1' ORDER BY t"


def sub_agent() -> ScriptedChatModel:
    """Queries the warehouse, then always answers `true` (right only on `true` cases)."""

    def reply(messages):
        if len(messages) <= 2:
            return AIMessage(f'```python\nprint(warehouse_execute_query(sql="{QUERY}"))\n```')
        return AIMessage("ANSWER: the belt averaged 60% full.\nVERDICT: true\nOBSERVED: 60")

    return ScriptedChatModel(responder=reply)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(tmp_path_factory):
    async with toy_session(tmp_path_factory.mktemp("toy"), chat=sub_agent()) as s:
        yield s


def test_trace_cases_are_balanced_across_labels():
    picked = balanced_sample(TRAIN, 3, seed=0)
    assert sorted(c.expected for c in picked) == ["false", "no_data", "true"]
    assert balanced_sample(TRAIN, 3, seed=0) == picked  # a seed picks the same cases
    assert len({tuple(c.site for c in balanced_sample(TRAIN, 3, s)) for s in range(6)}) > 1


@shared_loop
async def test_sop_d_r_traces_are_graded_and_reach_the_tool_maker(session):
    lm = DummyLM([RIGHT])
    deps = session.deps(NODE)
    deps.maker.lm = deps.reflector.lm = lm
    record = await make_tool(deps, TRAIN, config="sop+d+r", rounds=3, seed=0)
    assert len(record.traces) == 3
    for t in record.traces:
        assert t.verdict == "true" and t.correct == (t.case.expected == "true")
        assert t.code == [f'print(warehouse_execute_query(sql="{QUERY}"))']
        assert t.exchanges[0].server == "warehouse" and t.exchanges[0].args == {"sql": QUERY}
        assert t.input_tokens > 0 and t.output_tokens > 0
    fields = {f.name: f for f in record.traces[0].schema_}
    assert fields["fill_pct"].count == 4 and fields["fill_pct"].max == 99
    assert record.input_tokens >= sum(t.input_tokens for t in record.traces)
    prompt = json.dumps(lm.history[0]["messages"])
    assert "sub-agent verdict: true; label: false -> WRONG" in prompt
    assert "warehouse.execute_query:fill_pct float n=4 nulls=0 range=[60.0, 99.0]" in prompt
    # discovery: the server's own listing tool, and sample rows since it takes SQL
    assert record.discovery.startswith("warehouse.list_tables(): readings")
    assert "data catalog, read from the servers:\\nwarehouse.list_tables(): readings" in prompt
    assert "    row: [" in record.discovery
    assert record.train_pass == 1.0 and record.stages["collect"] > 0


# -- what the prompts may not contain, on the real alarm-triage SOP ---------------------------


def _long_lines(text: str) -> list[str]:
    """Distinctive lines (code or prose) long enough that a copy would not be a coincidence."""
    lines = [" ".join(ln.split()) for ln in text.splitlines()]
    return [ln for ln in lines if len(ln) >= 40 and not ln.startswith(("from ", "import "))]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def triage(fc_home, monkeypatch_module):  # noqa: F811
    monkeypatch_module.setenv("SOPGRAPH_HOME", str(fc_home))
    async with MakeSession(EXAMPLES / "fc_alarm_triage", model="dummy", form="code") as s:
        yield s


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@shared_loop
async def test_prompts_hold_no_labeler_conventions_own_tool_or_held_out_case(triage, fc_world):  # noqa: F811
    from sopgraph.evals import fc_triage

    package = fc_triage.__file__.rsplit("/", 1)[0]
    forbidden_files = ["conventions.md", "labeler.py", "truth.py", "frames.py", "simulator.py",
                       "truth_robotics.py", "truth_conveyance.py", "truth_ops.py",
                       "faults.py"]  # fmt: skip
    forbidden = {
        name: _long_lines(open(f"{package}/{name}", encoding="utf-8").read())
        for name in forbidden_files
    }
    registry = Registry(EXAMPLES / "fc_alarm_triage" / "tools")
    for node in NODE_SET:
        deps = triage.deps(node)
        train = node_cases(fc_world.cases, node, "train")
        held_out = node_cases(fc_world.cases, node, "eval")
        # traces of training cases, as the collector leaves them
        traces = [Trace(case=c, verdict=c.expected, correct=True) for c in train[:3]]
        found = await discover(deps.catalog, deps.brief.server_names)
        assert found, node  # the schema is part of what the checks below look through
        inputs = deps.maker.inputs(deps.brief, render_evidence(found, traces), "none")
        text = "\n".join(inputs.values())
        own = registry.resolve(node).path.read_text(encoding="utf-8")
        allowed = " ".join((inputs["contract"] + inputs["example"]).split())  # shared boilerplate
        mine = [ln for ln in _long_lines(own) if ln not in allowed]
        assert len(mine) >= 3, node  # the check below has something to find
        assert not [ln for ln in mine if ln in " ".join(text.split())], node
        for name, lines in forbidden.items():
            assert not [ln for ln in lines if ln in text], (node, name)
        train_times = {c.timestamp for c in train}
        leaked = [
            c.timestamp for c in held_out if c.timestamp not in train_times and c.timestamp in text
        ]
        assert not leaked, (node, leaked[:3])
        assert re.search(r"async def run", inputs["example"])  # another node's tool is allowed
        assert inputs["example"] != own


@shared_loop
async def test_discovery_reads_the_schema_with_the_servers_own_listing_tools(triage):
    deps = triage.deps("rc_upstream_blockage")
    text = await discover(deps.catalog, ["conveyance", "robotics"])
    assert "conveyance.list_tables(): collector_quadrants, conveyance_5m" in text
    assert "upstream_rate_ratio DOUBLE" in text  # list_columns(table) for each table
    assert re.search(r'    row: \["[A-Z]{3}[0-9]", "2025-', text)  # sample rows of SQL tables
    assert "station_idle_pct: type=gauge; unit=percent" in text  # get_metric_metadata(metric)
    assert await discover(deps.catalog, ["no_such_server"]) == ""
