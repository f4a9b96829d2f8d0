"""The test-repair loop on a scripted model: every branch, against a real MCP server and sandbox."""

from __future__ import annotations

import json

import pytest
import pytest_asyncio
from dspy.utils import DummyLM
from toolmaker_sop import (
    HELD_OUT,
    NO_WINDOW,
    NODE,
    RIGHT,
    TRAIN,
    WRONG_WAY,
    diagnosis,
    toy_session,
)

from sopgraph.tools.toolmaker.pipeline import MakeError, make_tool, score_heldout

shared_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(tmp_path_factory):
    async with toy_session(tmp_path_factory.mktemp("toy")) as s:
        yield s


def deps_with(session, answers, form="spec"):
    lm = DummyLM(answers)
    session.form = form
    deps = session.deps(NODE)
    deps.maker.lm = deps.reflector.lm = lm
    return deps, lm


def prompts(lm: DummyLM) -> list[str]:
    return [json.dumps(h["messages"]) for h in lm.history]


@shared_loop
async def test_a_full_pass_stops_the_loop_at_once(session):
    deps, lm = deps_with(session, [RIGHT])
    record = await make_tool(deps, TRAIN, config="sop+r", rounds=3)
    assert [r.round for r in record.rounds] == [0]
    assert record.best_round == 0 and record.train_pass == 1.0
    assert len(lm.history) == 1  # no reflection after a full pass
    await score_heldout(deps, record, HELD_OUT)
    assert record.eval_pass == 1.0 and record.eval_cases == 2


@shared_loop
async def test_a_repair_from_the_diagnosis_fixes_the_failures(session):
    deps, lm = deps_with(session, [NO_WINDOW, diagnosis(), RIGHT])
    record = await make_tool(deps, TRAIN, config="sop+r", rounds=3)
    first, second = record.rounds
    assert (first.passed, second.passed) == (3, 6)
    wrong = {f.case.site: (f.case.expected, f.value) for f in first.failures}
    assert wrong == {"S3": ("false", "true"), "S4": ("true", "false"), "S6": ("no_data", "true")}
    assert first.diagnosis.startswith("The query has no 15-minute window")
    assert record.best_round == 1 and record.train_pass == 1.0
    reflector_prompt, rewrite_prompt = prompts(lm)[1:]
    # the reflector sees the failing (input, expected, predicted) triples and the queries made
    assert "site=S3" in reflector_prompt and "expected false, predicted true" in reflector_prompt
    assert "SELECT avg(fill_pct) FROM readings WHERE site = 'S3'" in reflector_prompt
    # the rewrite sees the previous candidate, the failures and the diagnosis
    assert (
        "15-minute window" in rewrite_prompt and "expected true, predicted false" in rewrite_prompt
    )


@shared_loop
async def test_without_a_full_pass_the_best_round_is_kept(session):
    answers = [WRONG_WAY, diagnosis(), NO_WINDOW, diagnosis(), WRONG_WAY]
    deps, _ = deps_with(session, answers)
    record = await make_tool(deps, TRAIN, config="sop+r", rounds=2)
    assert [r.passed for r in record.rounds] == [2, 3, 2]
    assert record.best_round == 1 and record.train_pass == 0.5
    assert record.best.candidate.spec["query"] == NO_WINDOW["query"]


@shared_loop
async def test_sop_config_writes_one_candidate_without_repair(session):
    deps, lm = deps_with(session, [NO_WINDOW, diagnosis(), RIGHT])
    record = await make_tool(deps, TRAIN, config="sop", rounds=3)
    assert len(record.rounds) == 1 and record.train_pass == 0.5
    assert len(lm.history) == 1 and record.traces == []


@shared_loop
async def test_a_spec_that_does_not_check_is_fed_back_and_repaired(session):
    bad = {**RIGHT, "query": RIGHT["query"].replace("{site}", "{warehouse_site}")}
    deps, lm = deps_with(session, [bad, diagnosis("Use the {site} placeholder."), RIGHT])
    record = await make_tool(deps, TRAIN, config="sop+r", rounds=3)
    first = record.rounds[0]
    assert first.candidate.problem.startswith("spec rejected: query: unknown placeholder")
    assert first.passed == 0 and first.sandbox_reason == first.candidate.problem
    assert "unknown placeholder {warehouse_site}" in prompts(lm)[1]
    assert record.train_pass == 1.0


MALICIOUS = {
    "import os": (
        "import os\n\nasync def run(input, ctx):\n    return os.listdir('/')\n",
        "blocked import: os",
    ),
    "open a file": (
        "async def run(input, ctx):\n    return open('/etc/passwd').read()\n",
        "file access outside sandbox: /etc/passwd",
    ),
    "network": (
        "import socket\n\nasync def run(input, ctx):\n    return socket.socket()\n",
        "blocked import: socket",
    ),
}


@shared_loop
@pytest.mark.parametrize("kind", list(MALICIOUS))
async def test_a_malicious_candidate_fails_validation_with_the_sandbox_reason(session, kind):
    code, reason = MALICIOUS[kind]
    deps, _ = deps_with(session, [{"code": code}], form="code")
    record = await make_tool(deps, TRAIN, config="sop", rounds=0)
    (only,) = record.rounds
    assert only.passed == 0 and record.train_pass == 0.0
    assert reason in only.sandbox_reason
    assert all(f.error.startswith("sandbox: ") for f in only.failures)


@shared_loop
async def test_code_form_candidate_runs_the_real_queries_in_the_sandbox(session):
    code = (
        "from sopgraph.graphs.model import Verdict\n\n\n"
        "async def run(input, ctx):\n"
        "    site, t = input['site'], input['timestamp'].replace('T', ' ').replace('Z', '')\n"
        "    sql = (f\"SELECT avg(fill_pct) FROM readings WHERE site = '{site}' \"\n"
        "           f\"AND t > datetime('{t}', '-15 minutes') AND t <= '{t}'\")\n"
        "    res = await ctx.mcp.call('warehouse', 'execute_query', {'sql': sql})\n"
        "    value = res['rows'][0][0]\n"
        "    if value is None:\n"
        "        return Verdict(value='no_data')\n"
        "    return Verdict(value=value > ctx.params['fill_max_pct'], observed=value)\n"
    )
    deps, lm = deps_with(session, [{"code": "```python\n" + code + "```"}], form="code")
    record = await make_tool(deps, TRAIN, config="sop", rounds=0)
    assert record.train_pass == 1.0
    # the format example is another node's tool, never the node's own
    assert "A_TOOL_OF_ANOTHER_NODE" in prompts(lm)[0]
    assert "HUMAN_TOOL_OF_THE_NODE_ITSELF" not in prompts(lm)[0]


@shared_loop
async def test_a_trace_config_without_a_collector_is_a_clear_error(session):
    deps, _ = deps_with(session, [RIGHT])
    with pytest.raises(MakeError, match="needs the data-collector sub-agent"):
        await make_tool(deps, TRAIN, config="sop+d+r")
    with pytest.raises(MakeError, match="no training cases"):
        await make_tool(deps, [], config="sop")
