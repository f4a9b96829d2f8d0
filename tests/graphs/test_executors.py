"""The executor chain: first verdict wins, failures become attempts, non-serving executors pass."""

from __future__ import annotations

from sopgraph.graphs.executors import ExecutorChain, Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict


class _Fixed:
    def __init__(self, name, verdict=None, exc=None, serves=None):
        self.name, self._verdict, self._exc = name, verdict, exc
        if serves is not None:
            self.serves = lambda node: serves

    async def decide(self, node, ctx):
        if self._exc:
            raise self._exc
        return Outcome(verdict=self._verdict, executor=self.name)


NODE = Node(id="n", kind="observation", text="t")
CTX = ToolContext(node_id="n", text="t", params={}, parents={}, input={}, run_id="r")


async def test_first_verdict_wins_and_failures_are_attempts():
    chain = ExecutorChain([
        _Fixed("a", exc=Unavailable("no tool")),
        _Fixed("b", exc=RuntimeError("boom")),
        _Fixed("c", verdict=Verdict(value="true")),
        _Fixed("d", verdict=Verdict(value="false")),
    ])  # fmt: skip
    out = await chain.decide(NODE, CTX)
    assert out.executor == "c" and out.verdict.value == "true"
    assert [(a["executor"], a["status"]) for a in out.attempts] == [
        ("a", "unavailable"),
        ("b", "error"),
    ]
    assert out.attempts[1]["reason"] == "RuntimeError: boom"


async def test_executor_that_does_not_serve_the_node_leaves_no_attempt():
    chain = ExecutorChain([_Fixed("judge", verdict=Verdict(value="true"), serves=False),
                           _Fixed("tool", exc=Unavailable("no tool"))])  # fmt: skip
    out = await chain.decide(NODE, CTX)
    assert out.verdict is None and out.executor == "none"
    assert [a["executor"] for a in out.attempts] == ["tool"]
    assert out.error == "tool: no tool"
