"""The CodeAct sub-agent: a model writes Python that reads MCP data in the sandbox until it answers.

One mechanism for every SOP: nothing here names a world, and what it does on a new SOP follows
from the node's text, its parameters, its data hints and the servers' catalog. The executor
builds the prompt (the rules, the node's read-only MCP tools as functions ``<server>_<tool>``,
demonstrations of how the library's nearest nodes read this input's data, the check) and
runs the loop (``nodes/codeact_loop.py``: best of N on code that reads no data, named answer
checks). The host never edits the model's code or its answer; it decides the verdict from the
typed answer (``observed <comparison> threshold``; no value: ``no_data``), with the SOP
parameter the node names as the threshold where it names one. A free-text ``ANSWER:`` (a
hosted or scripted model) becomes a Verdict through ``prompts.verdict.VerdictExtractor``.
Every turn, token, code block and MCP call is kept in ``Outcome.detail``.

Example:
    >>> executor = CodeActExecutor(model=chat_model(Settings()))
    >>> outcome = await executor.decide(node, ctx)
    >>> outcome.verdict.value, outcome.detail["turns"]
    ('true', 2)
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import dspy
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables.config import var_child_runnable_config

from sopgraph.graphs.executors import Outcome, ToolContext, Unavailable
from sopgraph.graphs.model import PARAM, Node, Verdict
from sopgraph.graphs.telemetry import agent_span, record_usage
from sopgraph.nodes.codeact_demos import DEFAULT_DEMOS, LibraryDemos
from sopgraph.nodes.codeact_loop import (
    DEFAULT_MAX_TURNS,
    START_MESSAGE,
    TRACE_CHARS,
    CodeActRun,
    CodeActState,
    clip,
    codeact_graph,
    model_label,
)
from sopgraph.nodes.local_turns import is_local, model_turn
from sopgraph.nodes.mcp_functions import McpFunctions
from sopgraph.nodes.sandbox import SandboxLimits
from sopgraph.prompts.codeact import (
    ANSWER_SCHEMA,
    FunctionSpec,
    TypedAnswer,
    answer_schema,
    code_grammar,
    prelude,
    render_system_prompt,
)
from sopgraph.prompts.envelope import role_chat
from sopgraph.prompts.verdict import ExtractionError, VerdictExtractor

NO_MODEL = "no model configured for the CodeAct sub-agent: set SOPGRAPH_MODEL (e.g. `local`, `ollama:<name>`)"


def node_params(node: Node, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters the node's text names (``{name}``): an SOP may have dozens, and every
    token of the prompt costs the local model about 1/40 s to read."""
    named = set(PARAM.findall(node.text or ""))
    return {k: v for k, v in params.items() if k in named} if named else {}


def node_threshold(node: Node, params: dict[str, Any]) -> float | None:
    """The typed answer's threshold: the one numeric parameter the node's text names, or None
    (no parameter, or several: the model states the threshold)."""
    named = node_params(node, params)
    value = next(iter(named.values())) if len(named) == 1 else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def input_time(given: dict[str, Any]) -> str:
    """``NOW``: the first value of the input that is an ISO 8601 date-time ("" when none is)."""
    for value in given.values():
        if isinstance(value, str) and len(value) >= 10:
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            return value
    return ""


def typed_answer_model(
    model: BaseChatModel, schema: dict[str, Any] | None = None
) -> BaseChatModel | None:
    """``model`` constrained to ``MeasuredAnswer`` where the endpoint decodes under a JSON schema
    (the local llama.cpp server: ``response_format`` with a ``schema``); None elsewhere (the
    answer is then asked for in words and parsed)."""
    if not is_local(model):
        return None
    fmt = {"type": "json_object", "schema": schema or ANSWER_SCHEMA}
    return model.bind(extra_body={"response_format": fmt})  # type: ignore[return-value]


def code_reply_model(model: BaseChatModel, functions: list[str]) -> BaseChatModel | None:
    """``model`` constrained to a code block that starts by calling one of ``functions``
    (``prompts.codeact.code_grammar``) on the local llama.cpp server; None elsewhere."""
    if not functions or not is_local(model):
        return None
    return model.bind(extra_body={"grammar": code_grammar(functions)})  # type: ignore[return-value]


# -- the executor ---------------------------------------------------------------------------


@dataclass
class CodeActExecutor:
    """Decides a node by running the CodeAct loop; ``Unavailable`` when no model is configured.

    A loop that ends without a verdict returns an Outcome with ``verdict=None``, the reason in
    ``error`` and the full trace in ``detail`` (tokens spent on a failure still count).
    """

    model: BaseChatModel | None = None
    extractor: VerdictExtractor | None = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    max_turns: int = DEFAULT_MAX_TURNS
    name: str = "codeact"
    library: LibraryDemos | None = None  # the SOP's tool library, for demonstrations
    demos: int = DEFAULT_DEMOS
    samples: int | None = None  # best of N: other code replies drawn (Settings.codeact_samples)
    _functions: McpFunctions = field(default_factory=McpFunctions, repr=False)

    def __post_init__(self) -> None:
        if self.samples is None:
            from sopgraph.nodes.models import Settings

            self.samples = Settings().codeact_samples
        self.model = role_chat(self.model, "codeact")
        self.extractor = self.extractor or VerdictExtractor()

    async def decide(self, node: Node, ctx: ToolContext) -> Outcome:
        if self.model is None:
            raise Unavailable(NO_MODEL)
        async with model_turn(self.model):  # the local model: one node's turns at a time
            return await self._decide(node, ctx)

    async def _decide(self, node: Node, ctx: ToolContext) -> Outcome:
        start = time.perf_counter()
        text = ctx.text or node.text  # the check, its parameters filled in
        specs, functions, problems = await self._functions.for_node(node, ctx)
        demos = await self.library.for_node(node, ctx, self.demos) if self.library and specs else []
        now = input_time(ctx.input)
        system = render_system_prompt(
            question=text,
            functions=list(specs.values()),
            imports=self.limits.allowed_imports,
            max_turns=self.max_turns,
            now=now,
            given=ctx.input,
            params=node_params(node, ctx.params),
            parents={k: v.model_dump(exclude={"explanation"}) for k, v in ctx.parents.items()},
            data=node.data,
            demos=demos,
        )
        threshold = node_threshold(node, ctx.params)
        run = CodeActRun(
            self.model, functions, specs, self.limits, self.max_turns, model_label(self.model),
            answer_model=typed_answer_model(self.model, answer_schema(threshold)),
            code_model=code_reply_model(self.model, list(specs)), prelude=prelude(now),
            threshold=threshold, samples=int(self.samples or 0),
        )  # fmt: skip
        state: CodeActState = {
            "messages": [SystemMessage(content=system), HumanMessage(content=START_MESSAGE)],
            "turns": 0,
            "garbage": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        }
        with agent_span(
            self.name, node.id, "writes Python against MCP to decide an SOP node"
        ) as span:
            final = await _own_run(
                codeact_graph.ainvoke(
                    state, {"recursion_limit": 4 * self.max_turns + 10}, context=run
                )
            )
            verdict, error, extract = await self._extract(text, final, threshold)
            detail = _trace(final, specs, problems, extract)
            detail["demos"] = [d.node for d in demos]
            record_usage(span, detail["input_tokens"], detail["output_tokens"], model=run.label)
        ms = (time.perf_counter() - start) * 1000
        if verdict is None:
            return Outcome(
                verdict=None, executor=self.name, error=f"codeact: {error}", ms=ms, detail=detail
            )
        return Outcome(verdict=verdict, executor=self.name, ms=ms, detail=detail)

    async def _extract(
        self, question: str, final: CodeActState, threshold: Any = None
    ) -> tuple[Verdict | None, str | None, dict[str, Any]]:
        answer = final.get("answer")
        if not answer:
            return None, final.get("stop") or "the loop ended without an answer", {}
        if final.get("typed"):
            typed = TypedAnswer.model_validate(final["typed"])
            verdict = Verdict(value=typed.verdict, observed=typed.observed,
                              threshold=threshold, explanation=typed.explanation)  # fmt: skip
            return verdict, None, {"source": "typed"}
        with dspy.track_usage() as usage:
            try:
                verdict, source = await self.extractor.averdict(question, answer)
            except ExtractionError as exc:
                return None, str(exc), {"source": "failed"}
        n_in = n_out = 0
        for entry in usage.get_total_tokens().values():
            n_in += int(entry.get("prompt_tokens") or 0)
            n_out += int(entry.get("completion_tokens") or 0)
        return verdict, None, {"source": source, "input_tokens": n_in, "output_tokens": n_out}


async def _own_run(coro: Any) -> Any:
    """Run the loop as its own graph run, not as a subgraph of the SOP run that called it.

    Inside an SOP node LangGraph would treat it as a subgraph and inherit the run's
    checkpointer settings (a durable run's ``durability="sync"`` then waits on a checkpoint
    a graph compiled with ``checkpointer=False`` never writes). The OpenTelemetry context,
    also a context variable, is kept.
    """
    context = contextvars.copy_context()
    context.run(var_child_runnable_config.set, None)
    return await asyncio.create_task(coro, context=context)


def _trace(
    final: CodeActState,
    specs: dict[str, FunctionSpec],
    problems: list[str],
    extract: dict[str, Any],
) -> dict[str, Any]:
    """The run's trace for the trail: JSON only (it is checkpointed with the run state)."""
    detail: dict[str, Any] = {
        "turns": final.get("turns", 0),
        "input_tokens": final.get("input_tokens", 0) + extract.get("input_tokens", 0),
        "output_tokens": final.get("output_tokens", 0) + extract.get("output_tokens", 0),
        "functions": sorted(specs),
        "code": final.get("code", []),
        "mcp_calls": final.get("mcp_calls", []),
        "replies": [clip(r, TRACE_CHARS) for r in final.get("replies", [])],
        "answer": final.get("answer"),
        "stop": final.get("stop"),
        "extract": extract,
    }
    for key in ("sampled", "refused"):
        if final.get(key):
            detail[key] = final[key]
    if problems:
        detail["server_problems"] = problems
    return detail
