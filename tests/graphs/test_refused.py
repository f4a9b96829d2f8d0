"""A refusal from a data source (``graphs.executors.Refused``) ends the node: the chain tries no
other executor (one would only guess), and the outcome says refused."""

from __future__ import annotations

from sopgraph.graphs.executors import REFUSAL_PREFIX, ExecutorChain, Outcome, Refused
from sopgraph.graphs.model import Node, Verdict
from sopgraph.nodes.mcp import McpError, McpRefused


class Refuses:
    name = "tool"

    async def decide(self, node, ctx) -> Outcome:
        raise McpRefused(f"enterprise.get_employee: {REFUSAL_PREFIX}pay of emp_0136")


class Fails:
    name = "tool"

    async def decide(self, node, ctx) -> Outcome:
        raise McpError("enterprise.get_employee failed: timeout")


class Guesses:
    name = "codeact"
    called = 0

    async def decide(self, node, ctx) -> Outcome:
        Guesses.called += 1
        return Outcome(verdict=Verdict(value="true"), executor="codeact")


NODE = Node.model_validate({"kind": "observation", "text": "pay above 100000"})


async def test_a_refusal_is_final_and_distinct():
    assert issubclass(McpRefused, McpError) and issubclass(McpRefused, Refused)
    Guesses.called = 0
    outcome = await ExecutorChain([Refuses(), Guesses()]).decide(NODE, None)
    assert outcome.refused and outcome.verdict is None and Guesses.called == 0
    assert outcome.attempts == [
        {"executor": "tool", "status": "refused", "reason": "enterprise.get_employee: "
         "access denied: pay of emp_0136"}
    ]  # fmt: skip


async def test_any_other_failure_still_hands_over():
    Guesses.called = 0
    outcome = await ExecutorChain([Fails(), Guesses()]).decide(NODE, None)
    assert not outcome.refused and outcome.verdict.value == "true" and Guesses.called == 1
