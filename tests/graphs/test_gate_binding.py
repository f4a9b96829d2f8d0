"""An answer is bound to the gated execution it was shown for (issue 53, finding 3), in the graph
itself, whoever drives it (a LangGraph server client, Studio, a script): the action node takes
only an answer carrying its gate's key; any other (a plain "approve", or one meant for another
gate) is recorded as refused and the question is asked again, so it can never approve the next
gate. The key is also the action's idempotency key, given to its tool."""

from __future__ import annotations

from pathlib import Path

from langgraph.types import Command
from sop_factory import make_sop

from sopgraph.runtime.runner import Session

SOP = {
    "id": "two_gates",
    "entry": {"default": ["check"]},
    "nodes": {
        "check": {"kind": "observation", "text": "check", "next": {"true": ["first"]}},
        "first": {"kind": "action", "text": "first", "cost": "high", "approval": "required",
                  "next": {"true": ["second"]}},
        "second": {"kind": "action", "text": "second", "cost": "high", "approval": "required"},
    },
}  # fmt: skip
ACT = """
open(os.environ["GATE_LOG"], "a").write(f"{ctx.node_id} {ctx.idempotency_key}\\n")
return Verdict(value=True)
"""


async def test_only_an_answer_with_the_gates_key_executes_it(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "executed"
    log.touch()
    monkeypatch.setenv("GATE_LOG", str(log))
    sop = make_sop(tmp_path / "sop", SOP, {"check": "return Verdict(value=True)", "first": ACT,
                                            "second": ACT})  # fmt: skip
    async with Session(sop, checkpoint=str(tmp_path / "cp.sqlite")) as s:
        paused = await s.run({}, thread_id="t1")
        (gate,) = paused.interrupts
        assert gate["key"] == "t1/first/1" and gate["answer"]["key"] == "t1/first/1"
        config = {"configurable": {"thread_id": "t1", "approval": "ask"}}

        # a plain answer (what a double click or a stale client sends): refused, asked again
        await s.graph.ainvoke(Command(resume={gate["id"]: "approve"}), config)
        again = await s.result("t1")
        (asked,) = again.interrupts
        assert asked["node"] == "first" and asked["id"] != gate["id"]
        assert asked["refused"][0]["answer"] == "approve"
        assert "names no key" in asked["refused"][0]["why"]
        # the key of another gate: refused too
        wrong = {"decision": "approve", "key": "t1/second/1"}
        await s.graph.ainvoke(Command(resume={asked["id"]: wrong}), config)
        (asked,) = (await s.result("t1")).interrupts
        assert len(asked["refused"]) == 2 and log.read_text() == ""

        bound = {"decision": "approve", "key": "t1/first/1", "by": "ann"}
        await s.graph.ainvoke(Command(resume={asked["id"]: bound}), config)
        done = await s.result("t1")
        assert [i["node"] for i in done.interrupts] == ["second"]
        (first,) = done.actions
        assert (first["status"], first["approver"]) == ("executed", "ann")
        assert first["idempotency_key"] == "t1/first/1" and len(first["refused_answers"]) == 2
        assert log.read_text() == "first t1/first/1\n"
