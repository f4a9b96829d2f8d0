"""The compiled graph: routing, parallel layers, loops, fallback on error, gated actions."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from sop_factory import make_sop

from sopgraph.runtime.runner import InputError, Session


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "home"))


def _obs(next_: dict, **kw) -> dict:
    return {"kind": "observation", "text": "check", "next": next_, **kw}


def _act(**kw) -> dict:
    return {"kind": "action", "text": "do it", **kw}


PARALLEL = {
    "id": "parallel",
    "entry": {"alarm": ["root"]},
    "nodes": {
        "root": _obs({"true": ["slow_a", "slow_b"]}),
        "slow_a": {"kind": "root_cause", "text": "a", "next": {"true": ["act_a"]}},
        "slow_b": {"kind": "root_cause", "text": "b", "next": {"true": ["act_b"]}},
        "act_a": _act(),
        "act_b": _act(),
    },
}
# Each sibling waits at a barrier for two parties: it opens only if both tools are running at
# the same time. Run one after the other, the first would wait until the deadlock breaker
# (not a timing bound: any machine passes in milliseconds, none passes sequentially).
AT_BARRIER = """
import shared_barrier
await asyncio.wait_for(shared_barrier.BARRIER.wait(), shared_barrier.DEADLOCK_BREAKER_S)
return Verdict(value=True)
"""


async def test_sibling_tools_run_concurrently(tmp_path, monkeypatch):
    shared = tmp_path / "modules"
    shared.mkdir()
    (shared / "shared_barrier.py").write_text(
        "import asyncio\nBARRIER = asyncio.Barrier(2)\nDEADLOCK_BREAKER_S = 60\n"
    )
    monkeypatch.syspath_prepend(str(shared))
    monkeypatch.delitem(sys.modules, "shared_barrier", raising=False)
    root = make_sop(
        tmp_path / "sop",
        PARALLEL,
        {"root": "return Verdict(value=True)", "slow_a": AT_BARRIER, "slow_b": AT_BARRIER},
    )
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "alarm"})
    assert result.status == "done", result.unresolved
    assert set(result.path) == {"root", "slow_a", "slow_b", "act_a", "act_b"}
    assert result.verdicts["slow_a"].value == result.verdicts["slow_b"].value == "true"
    # the two root causes were one superstep: they precede both actions in the trail
    order = [s["node"] for s in result.trail]
    assert max(order.index("slow_a"), order.index("slow_b")) < min(
        order.index("act_a"), order.index("act_b")
    )


async def test_the_barrier_proof_fails_when_siblings_run_one_after_the_other(tmp_path, monkeypatch):
    """The same barrier with a sequential chain: the first waiter never meets the second."""
    shared = tmp_path / "modules"
    shared.mkdir()
    (shared / "shared_barrier.py").write_text(
        "import asyncio\nBARRIER = asyncio.Barrier(2)\nDEADLOCK_BREAKER_S = 0.5\n"
    )
    monkeypatch.syspath_prepend(str(shared))
    monkeypatch.delitem(sys.modules, "shared_barrier", raising=False)
    chain = {
        "id": "chain",
        "entry": {"alarm": ["slow_a"]},
        "nodes": {
            "slow_a": {"kind": "root_cause", "text": "a", "next": {"true": ["slow_b"]}},
            "slow_b": {"kind": "root_cause", "text": "b"},
        },
    }
    root = make_sop(tmp_path / "sop", chain, {"slow_a": AT_BARRIER, "slow_b": AT_BARRIER})
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "alarm"})
    assert result.status == "unresolved" and "slow_a" in result.unresolved


ROUTING = {
    "id": "routing",
    "params": {"limit": 10},
    "entry": {"alarm": ["measure"]},
    "nodes": {
        "measure": _obs(
            {
                "true": ["high"],
                "false": ["low"],
                "no_data": ["missing"],
                "when": [{"if": {"var": "level", "op": "gt", "value": 50}, "then": ["very_high"]}],
            },
            text="level above {limit}",
        ),
        "high": _act(),
        "low": _act(),
        "missing": _act(),
        "very_high": _act(),
    },
}
MEASURE = """
level = ctx.input.get("level")
if level is None:
    return Verdict(value="no_data", explanation="no level")
return Verdict(value=level > ctx.params["limit"], observed={"level": level}, threshold=ctx.params["limit"])
"""


@pytest.mark.parametrize(
    "level,expected",
    [
        (5, ["measure", "low"]),
        (20, ["measure", "high"]),
        (80, ["measure", "high", "very_high"]),
        (None, ["measure", "missing"]),
    ],
)
async def test_routes_by_verdict_and_predicate(tmp_path, level, expected):
    root = make_sop(tmp_path / "sop", ROUTING, {"measure": MEASURE})
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "alarm", "level": level})
    assert result.path == expected
    assert result.verdicts["measure"].threshold == (None if level is None else 10)


LOOP = {
    "id": "loop",
    "entry": {"task": ["ask"]},
    "nodes": {
        "ask": _obs({"false": ["ask"], "true": ["done"]}, max_visits=3),
        "done": _act(),
    },
}
ASK = """
n = ctx.input["succeed_on"]
path = os.path.join(os.environ["SOPGRAPH_HOME"], "ask_count")
count = int(open(path).read()) + 1 if os.path.exists(path) else 1
open(path, "w").write(str(count))
return Verdict(value=count >= n, observed={"attempt": count})
"""


@pytest.mark.parametrize("succeed_on,visits,finished", [(2, 2, True), (5, 3, False)])
async def test_loop_is_bounded(tmp_path, succeed_on, visits, finished):
    root = make_sop(tmp_path / "sop", LOOP, {"ask": ASK})
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "task", "succeed_on": succeed_on})
    assert result.path.count("ask") == visits
    assert ("done" in result.path) is finished
    # a loop that ran out of visits is its own outcome, not a complete run
    assert result.status == ("done" if finished else "bounded")
    assert ("ask" in result.bounded) is not finished
    if not finished:
        step = next(s for s in result.trail if s["status"] == "bound")
        assert "visit bound 3 reached" in step["error"] == result.bounded["ask"]


SWITCH = {
    "id": "switch",
    "entry": {"call": ["auth"]},
    "nodes": {
        "auth": _obs({"when": [
            {"if": {"var": "status", "op": "eq", "value": "failed"}, "then": ["advise"]},
            {"if": {"var": "status", "op": "eq", "value": "success"}, "then": ["verify"]},
        ]}),
        "advise": _act(),
        "verify": _act(),
    },
}  # fmt: skip
AUTH = "return Verdict(value=True, observed={'status': ctx.input['status']})"


@pytest.mark.parametrize("status,run_status,path", [
    ("success", "done", ["auth", "verify"]),
    ("pending_2fa", "unmatched", ["auth"]),
])  # fmt: skip
async def test_a_verdict_matching_no_branch_is_its_own_outcome(tmp_path, status, run_status, path):
    root = make_sop(tmp_path / "sop", SWITCH, {"auth": AUTH})
    async with Session(root, mcp=False) as s:
        result = await s.run({"status": status})
    assert result.status == run_status and result.path == path
    step = result.trail[0]
    if run_status == "unmatched":
        assert step["status"] == "unmatched" and "pending_2fa" in step["error"]
        assert "matched no branch" in result.unmatched["auth"]
        assert json.loads(result.model_dump_json())["status"] == "unmatched"
    else:
        assert step["status"] == "decided" and not result.unmatched


CONTRACT = {
    "id": "contract",
    "entry": {"station_idle": ["check"], "belt_backup": ["check"]},
    "input": {
        "site": {"type": "string", "required": True, "example": "BFI4"},
        "station": {"type": "string", "required_for": ["station_idle"], "example": "ST-03"},
        "timestamp": {"type": "datetime", "required": True, "example": "2025-03-03T04:20:59Z"},
        "count": {"type": "integer"},
    },
    "nodes": {"check": _obs({"true": ["act"]}), "act": _act()},
}
# The tool leaves a mark: an input error must stop the run before any node runs.
MARK = """
open(os.path.join(os.environ["SOPGRAPH_HOME"], "ran"), "w").write("x")
return Verdict(value=True)
"""
GOOD_ALARM = {"type": "station_idle", "site": "BFI4", "station": "ST-03",
              "timestamp": "2025-03-03T04:20:59Z"}  # fmt: skip


@pytest.mark.parametrize("change,message", [
    ({"station": None}, "input field 'station' is required for station_idle inputs; add it, "
                        'e.g. "station": "ST-03"'),
    ({"site": None}, "input field 'site' is required; add it, e.g. \"site\": \"BFI4\""),
    ({"timestamp": None}, "input field 'timestamp' is required"),
    ({"timestamp": "yesterday"}, "input field 'timestamp' must be an ISO 8601 time"),
    ({"site": 7}, "input field 'site' must be a string, got 7"),
    ({"count": "3"}, "input field 'count' must be a whole number, got '3'"),
    ({"count": True}, "input field 'count' must be a whole number, got True"),
])  # fmt: skip
async def test_input_contract_is_checked_before_any_node_runs(tmp_path, change, message):
    root = make_sop(tmp_path / "sop", CONTRACT, {"check": MARK})
    alarm = {k: v for k, v in {**GOOD_ALARM, **change}.items() if v is not None}
    async with Session(root, mcp=False) as s:
        with pytest.raises(InputError) as info:
            await s.run(alarm)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "home" / "ran").exists()


async def test_input_contract_required_for_one_entry_type_only(tmp_path):
    root = make_sop(tmp_path / "sop", CONTRACT, {"check": MARK})
    alarm = {**GOOD_ALARM, "type": "belt_backup"}
    del alarm["station"]
    async with Session(root, mcp=False) as s:
        result = await s.run(alarm)
    assert result.status == "done" and (tmp_path / "home" / "ran").exists()


async def test_graph_rejects_a_flat_or_missing_input(tmp_path):
    """A LangGraph client that sends the alarm flat gets an error, not empty verdicts."""
    root = make_sop(tmp_path / "sop", CONTRACT, {"check": MARK})
    async with Session(root, mcp=False) as s:
        for payload in (GOOD_ALARM, {}):
            with pytest.raises(InputError, match="no run input"):
                await s.graph.ainvoke(payload, {"configurable": {"thread_id": "flat"}})
        with pytest.raises(InputError, match="'site' is required"):
            await s.graph.ainvoke(
                {"input": {**GOOD_ALARM, "site": None}}, {"configurable": {"thread_id": "x"}}
            )
    assert not (tmp_path / "home" / "ran").exists()


DIAMOND = {
    "id": "diamond",
    "entry": {"a": ["top"]},
    "nodes": {
        "top": _obs({"true": ["left", "short"]}),
        "left": {"kind": "root_cause", "text": "l", "next": {"true": ["deep"]}},
        "deep": {"kind": "root_cause", "text": "d", "next": {"true": ["shared"]}},
        "short": {"kind": "root_cause", "text": "s", "next": {"true": ["shared"]}},
        "shared": _act(),
    },
}


async def test_node_reached_twice_outside_a_loop_runs_once(tmp_path):
    ok = "return Verdict(value=True)"
    root = make_sop(tmp_path / "sop", DIAMOND, {n: ok for n in ("top", "left", "deep", "short")})
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "a"})
    assert result.path.count("shared") == 1
    assert len(result.actions) == 1


ERRORS = {
    "id": "errors",
    "entry": {"a": ["boom"], "b": ["boom_handled"]},
    "nodes": {
        "boom": _obs({"true": ["after"]}),
        "boom_handled": _obs({"true": ["after"], "on_error": ["manual_check"]}),
        "after": _act(),
        "manual_check": _act(),
        "no_tool": _obs({"true": ["after"]}),
    },
}


async def test_tool_error_is_unresolved_never_no_data(tmp_path):
    sop = dict(ERRORS, entry={**ERRORS["entry"], "c": ["no_tool"]})
    raise_ = "raise RuntimeError('backend down')"
    root = make_sop(tmp_path / "sop", sop, {"boom": raise_, "boom_handled": raise_})
    async with Session(root, mcp=False, log_path=tmp_path / "log.sqlite") as s:
        stopped = await s.run({"type": "a"})
        handled = await s.run({"type": "b"})
        missing = await s.run({"type": "c"})
        logged = s.log.query(run_id=stopped.thread_id)
    assert stopped.status == "unresolved" and stopped.path == ["boom"]
    assert "backend down" in stopped.unresolved["boom"]
    assert "boom" not in stopped.verdicts
    assert handled.path == ["boom_handled", "manual_check"]
    assert (
        "no tool" in missing.unresolved["no_tool"].lower()
        or "manifest" in missing.unresolved["no_tool"]
    )
    assert logged[0]["error"].startswith("RuntimeError")


GATED = {
    "id": "gated",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": _obs({"true": ["standby"]}),
        "standby": _act(
            cost="high",
            approval="required",
            next={"true": ["confirm_standby"], "false": ["notify_rejected"]},
        ),
        "confirm_standby": _act(),
        "notify_rejected": _act(),
    },
}


@pytest.mark.parametrize(
    "decision,child", [("approve", "confirm_standby"), ("reject", "notify_rejected")]
)
async def test_gated_action_pauses_and_resumes(tmp_path, decision, child):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False) as s:
        paused = await s.run({"type": "alarm"}, thread_id="t1")
        assert paused.status == "interrupted"
        assert paused.interrupt["node"] == "standby"
        assert paused.path == ["check"]
        done = await s.resume("t1", decision, interrupt_id=paused.interrupt["id"])
    assert done.status == "done"
    assert done.path == ["check", "standby", child]
    assert done.actions[0]["approved"] is (decision == "approve")


TWO_ENTRIES = {
    "id": "two_entries",
    "entry": {"alarm": ["check"], "other": ["other_check"]},
    "nodes": {
        **GATED["nodes"],
        "other_check": _obs({"true": ["other_act"]}),
        "other_act": _act(),
    },
}


async def test_a_run_starts_on_its_entrys_graph_and_the_whole_graph_resumes_it(tmp_path):
    tools = {"check": "return Verdict(value=True)", "other_check": "return Verdict(value=True)"}
    root = make_sop(tmp_path / "sop", TWO_ENTRIES, tools)
    async with Session(root, mcp=False) as s:
        paused = await s.run({"type": "alarm"}, thread_id="t1")
        (entry_graph,) = s._entry_graphs.values()
        # only what the entry reaches: the other entry's nodes are not in the run's graph
        assert set(entry_graph.nodes) - {"__start__"} == set(GATED["nodes"])
        assert set(s.graph.nodes) - {"__start__"} == set(TWO_ENTRIES["nodes"])
        assert paused.status == "interrupted" and paused.path == ["check"]
        done = await s.resume("t1", "approve", node="standby")  # on the whole SOP's graph
        other = await s.run({"type": "other"})
        assert len(s._entry_graphs) == 2
    assert done.status == "done" and done.path == ["check", "standby", "confirm_standby"]
    assert other.status == "done" and other.path == ["other_check", "other_act"]


async def test_approval_policy_skips_the_pause(tmp_path):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False, approval="approve") as s:
        result = await s.run({"type": "alarm"})
    assert result.status == "done" and result.path[-1] == "confirm_standby"
    assert result.actions[0]["by"] == "policy:approve"
    assert result.actions[0]["approver"] == "unknown (no approver given)"


async def test_the_actual_approver_is_recorded(tmp_path):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False) as s:
        by_policy = await s.run({"type": "alarm"}, approval="approve", approver="cli user ann")
        await s.run({"type": "alarm"}, thread_id="t2")
        by_human = await s.resume(
            "t2", "reject", node="standby", approver="mcp client inspector 1.0"
        )
    assert by_policy.actions[0]["approver"] == "cli user ann"
    assert by_policy.actions[0]["by"] == "policy:approve"
    assert by_human.actions[0]["approver"] == "mcp client inspector 1.0"
    assert by_human.actions[0]["by"] == "human" and by_human.actions[0]["approved"] is False


async def test_unknown_input_type_is_one_clear_error(tmp_path):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False) as s:
        with pytest.raises(InputError, match="unknown input type 'nope'.*use one of: alarm"):
            await s.run({"type": "nope"})


ACTION_TOOL = {
    "id": "action_tool",
    "entry": {"alarm": ["check"]},
    "nodes": {
        "check": _obs({"true": ["escalate"]}),
        "escalate": _act(next={"true": ["log_done"], "on_error": ["page_human"]}),
        "log_done": _act(),
        "page_human": _act(),
    },
}


@pytest.mark.parametrize("body,path,status", [
    ("return Verdict(value=True, observed={'ticket': 'T-1'})", ["check", "escalate", "log_done"], "done"),
    ("raise RuntimeError('ticketing down')", ["check", "escalate", "page_human"], "unresolved"),
])  # fmt: skip
async def test_action_runs_its_own_tool_and_follows_on_error(tmp_path, body, path, status):
    root = make_sop(tmp_path / "sop", ACTION_TOOL, {"check": "return Verdict(value=True)",
                                                     "escalate": body})  # fmt: skip
    async with Session(root, mcp=False) as s:
        result = await s.run({"type": "alarm"})
    assert result.path == path and result.status == status
    record = result.actions[0]
    if status == "done":
        assert record["status"] == "executed" and record["result"] == {"ticket": "T-1"}
    else:
        assert record["status"] == "failed" and "ticketing down" in record["error"]
        assert "ticketing down" in result.unresolved["escalate"]


@pytest.mark.parametrize(
    "inp,message",
    [
        ({"type": "alarm", "site": 5}, "input 'site' must be a string, got 5"),
        (
            {"type": "alarm", "timestamp": "yesterday"},
            "input 'timestamp' must be an ISO 8601 time such as 2025-03-03T04:20:59Z, got 'yesterday'",
        ),
        (["alarm"], "run input must be a JSON object"),
        (None, "run input must be a JSON object .*, got null"),
        ({"type": "alarm", "blob": "x" * (1024 * 1024)}, "run input is over 1024 KB"),
    ],
)
async def test_input_that_does_not_fit_is_one_clear_error(tmp_path, inp, message):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False) as s:
        with pytest.raises(InputError, match=message):
            await s.run(inp)


async def test_finished_thread_is_reported_not_rerun_and_cannot_be_resumed(tmp_path):
    root = make_sop(tmp_path / "sop", GATED, {"check": "return Verdict(value=True)"})
    async with Session(root, mcp=False, approval="approve") as s:
        first = await s.run({"type": "alarm"}, thread_id="t9")
        again = await s.run({"type": "alarm"}, thread_id="t9")
        with pytest.raises(
            InputError, match="run 't9' has finished: it is not waiting for a decision"
        ):
            await s.resume("t9", "approve")
    assert not first.stored and again.stored
    assert again.path == first.path and len(again.actions) == len(first.actions)


@pytest.mark.parametrize("checkpoint", ["memory", "sqlite"])
async def test_every_call_is_logged_when_the_run_returns(tmp_path, checkpoint):
    """Rows are held and written before each checkpoint write (SQLite): a reader in another
    connection sees them all once ``run`` returns. In memory they go in a group commit at most
    ``LOG_HOLD_S`` later; the session's own log sees them at once."""
    from sopgraph.runtime.checkpointers import LOG_HOLD_S
    from sopgraph.tools.invocation_log import InvocationLog

    root = make_sop(tmp_path / "sop", PARALLEL, {n: "return Verdict(value=True)" for n in
                                                 ("root", "slow_a", "slow_b")})  # fmt: skip
    store = "memory" if checkpoint == "memory" else str(tmp_path / "ck.sqlite")
    other = InvocationLog(tmp_path / "log.sqlite")
    expected = ["root", "slow_a", "slow_b"]
    async with Session(root, mcp=False, checkpoint=store, log_path=tmp_path / "log.sqlite") as s:
        result = await s.run({"type": "alarm"})
        if checkpoint == "memory":
            await asyncio.sleep(LOG_HOLD_S * 5)  # the event loop runs the group commit
        rows = other.query(run_id=result.thread_id)
        assert sorted(r["node"] for r in rows) == expected
        second = await s.run({"type": "alarm"})
        own = s.log.query(run_id=second.thread_id)  # held rows are written before a read
        assert sorted(r["node"] for r in own) == expected


def test_fresh_thread_ids_sort_by_creation():
    """Time first, then 80 random bits: SQLite stores append instead of writing all over."""
    import time

    from sopgraph.runtime.runner import new_thread_id

    ids = []
    for _ in range(3):
        ids.append(new_thread_id())
        time.sleep(0.002)
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
