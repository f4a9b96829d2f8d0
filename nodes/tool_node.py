"""The compiled-tool executor: resolve the node's active tool version and call it."""

from __future__ import annotations

import time
from typing import Any

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.untrusted_text import serialisable
from sopgraph.tools.invocation_log import InvocationLog
from sopgraph.tools.registry import Registry, ToolIntegrityError, ToolMissing


def as_verdict(value: Any) -> Verdict:
    """Accept a Verdict or a plain dict from a tool; anything else is the tool's bug.

    This is where a tool's output enters the run: a lone surrogate its code wrote in any text
    of the verdict (no UTF-8 encoder takes one: the checkpoint, the invocation log and the
    terminal would refuse it) becomes U+FFFD here.
    """
    if isinstance(value, Verdict):
        return serialisable(value)
    if isinstance(value, dict):
        return Verdict.model_validate(serialisable(value))
    raise TypeError(f"a tool must return a Verdict, got {type(value).__name__}")


class ToolExecutor:
    """Calls ``run(input, ctx)`` of the node's active tool and logs the invocation."""

    name = "tool"

    def __init__(self, registry: Registry, log: InvocationLog | None = None):
        self.registry = registry
        self.log = log

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        try:
            tool = self.registry.resolve(node.tool_name)
        except (ToolMissing, ToolIntegrityError) as exc:
            raise Unavailable(str(exc)) from None
        start = time.perf_counter()
        error: str | None = None
        verdict: Verdict | None = None
        try:
            verdict = as_verdict(await tool.fn(ctx.input, ctx))
        except Exception as exc:
            error = serialisable(f"{type(exc).__name__}: {exc}")  # the tool's own message
            raise
        finally:
            ms = (time.perf_counter() - start) * 1000
            if self.log is not None:
                self.log.record(
                    run_id=ctx.run_id,
                    node=node.id,
                    tool=node.tool_name,
                    version=tool.version,
                    inputs={"input": ctx.input, "params": ctx.params},
                    output=verdict.model_dump() if verdict else None,
                    latency_ms=ms,
                    error=error,
                )
        return Outcome(verdict=verdict, executor="tool", tool_version=tool.version, ms=ms)
