"""Routers: decide a node's natural-language ``when`` conditions after its verdict.

``FunctionCallingRouter`` branches by function calling as in SOP-agent (Ye et al., 2025): the
model is offered one function per open branch and nothing else. Where the branches' first
child nodes call distinct APIs, those APIs are the functions (the call names the branch);
otherwise dummy ``explore_subtree_<n>`` functions carry the conditions. A ``no_condition_holds``
function is offered too, because an SOP may leave a condition open that does not hold. Several
calls fire several branches. ``DSPyRouter`` makes the same choice with a DSPy module, so an
optimizer can tune it on labeled cases.

Example:
    >>> async with Session(sop_dir, router=FunctionCallingRouter(chat_model())) as s:
    ...     result = await s.run({"type": "chat", "messages": [...]})
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import dspy
from dspy.utils.exceptions import AdapterParseError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from sopgraph.graphs.executors import ToolContext, Unavailable
from sopgraph.graphs.model import Node, Verdict
from sopgraph.graphs.telemetry import chat_span, record_usage
from sopgraph.nodes.codeact_loop import message_text, model_label
from sopgraph.prompts import routing as texts
from sopgraph.prompts.adapter import dspy_context
from sopgraph.prompts.envelope import role_chat, role_lm
from sopgraph.prompts.judge import lm_usage

EXPLORE = "explore_subtree_{n}"
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
NO_MODEL = "no chat model is configured for the router: set SOPGRAPH_MODEL"
NO_LM = "no DSPy LM is configured for the router: set SOPGRAPH_MODEL"


@dataclass
class RouteDecision:
    """The children to run and what the router did (functions offered and called, tokens)."""

    children: list[str]
    detail: dict[str, Any] = field(default_factory=dict)


class RouteFailed(Unavailable):
    """The model made no usable choice; ``detail`` keeps its replies and tokens for the trail."""

    def __init__(self, reason: str, detail: dict[str, Any]):
        super().__init__(reason)
        self.detail = detail


@dataclass
class Branch:
    """One open condition as the model is offered it."""

    condition: str
    children: list[str]
    function: str
    description: str


def _api_function(child: Node | None) -> tuple[str, str] | None:
    """The function a child node calls (its API, or an explicit tool), with its description."""
    if child is None:
        return None
    if child.api is not None:
        return child.api.name, child.api.description or child.text
    if child.tool:
        return child.tool, child.text
    return None


def branch_functions(
    conditions: list[tuple[str, list[str]]], nodes: Mapping[str, Node] | None = None
) -> tuple[list[Branch], str]:
    """One function per branch, and the mode: ``api`` or ``explore``.

    The real APIs of the branches' first children are used only when they tell every branch
    apart (SOP-agent's case a); two branches with the same API or without one (cases b and c)
    get ``explore_subtree_<n>`` dummies whose descriptions are the conditions.
    """
    nodes = nodes or {}
    apis = [_api_function(nodes.get(then[0])) if then else None for _, then in conditions]
    names = [a[0] for a in apis if a is not None]
    distinct = len(names) == len(conditions) and len(set(names)) == len(names)
    if distinct and all(
        _FUNCTION_NAME.match(n) and n != texts.NONE_FUNCTION and not n.startswith("explore_subtree")
        for n in names
    ):
        branches = [
            Branch(text, list(then), name, f"Call when: {text}. It does: {about}".strip())
            for (text, then), (name, about) in zip(conditions, apis, strict=True)  # type: ignore[misc]
        ]
        return branches, "api"
    branches = [
        Branch(text, list(then), EXPLORE.format(n=i), text)
        for i, (text, then) in enumerate(conditions, 1)
    ]
    return branches, "explore"


def function_spec(name: str, description: str) -> dict[str, Any]:
    """An OpenAI-style function without parameters: the call itself is the choice."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {}},
        },
    }


def _usage(reply: Any) -> tuple[int, int]:
    usage = getattr(reply, "usage_metadata", None) or {}
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


def _describe(reply: Any) -> str:
    calls = [c.get("name") for c in getattr(reply, "tool_calls", None) or []]
    bad = [c.get("name") for c in getattr(reply, "invalid_tool_calls", None) or []]
    if calls or bad:
        return "calls " + ", ".join(str(n) for n in calls + bad)
    text = " ".join(message_text(reply).split())
    return f"text {text[:200]!r}" if text else "an empty reply"


class FunctionCallingRouter:
    """Chooses branches by function calling (SOP-agent); one model call, one retry on garbage.

    Args:
        model: a chat model with ``bind_tools``; None makes every decision ``Unavailable``.
        tool_choice: asks the model to call a function (``any``); a server that rejects it
            (llama.cpp's ``chatml-function-calling``) is asked again without, once per router.
        allow_none: offer ``no_condition_holds`` next to the branches.
        retries: corrective retries after a reply that chooses no offered function.
    """

    name = "function_calling"

    def __init__(
        self,
        model: BaseChatModel | None,
        *,
        tool_choice: str | None = "any",
        allow_none: bool = True,
        retries: int = 1,
    ):
        self.model = role_chat(model, "route")
        # llama.cpp's chatml-function-calling accepts only `auto`: do not spend a request on it
        local = getattr(model, "budgets_by_role", False)
        self.tool_choice = None if local else tool_choice
        self.allow_none = allow_none
        self.retries = retries

    def functions(
        self, conditions: list[tuple[str, list[str]]], nodes: Mapping[str, Node] | None = None
    ) -> tuple[list[Branch], str, list[dict[str, Any]]]:
        """The branches, the mode and the function specs the model is offered."""
        branches, mode = branch_functions(conditions, nodes)
        specs = [function_spec(b.function, b.description) for b in branches]
        if self.allow_none:
            specs.append(
                function_spec(texts.NONE_FUNCTION, "Call when none of the other conditions holds.")
            )
        return branches, mode, specs

    def messages(
        self, node: Node, verdict: Verdict, specs: list[dict[str, Any]], ctx: ToolContext
    ) -> list[BaseMessage]:
        offered = [(s["function"]["name"], s["function"]["description"]) for s in specs]
        request = texts.ROUTER_REQUEST.format(
            node_text=ctx.text or node.text or node.id,
            observed=texts.render_observed(verdict.value, verdict.observed, verdict.explanation),
            context=texts.render_context(ctx.input),
            branches=texts.render_branches(offered),
        )
        return [
            SystemMessage(texts.ROUTER_SYSTEM.format(none=texts.NONE_FUNCTION)),
            HumanMessage(request),
        ]

    async def choose(
        self,
        node: Node,
        verdict: Verdict,
        conditions: list[tuple[str, list[str]]],
        ctx: ToolContext,
        *,
        nodes: Mapping[str, Node] | None = None,
    ) -> RouteDecision:
        """The children of the branches the model chose.

        Raises:
            Unavailable: no model is configured.
            RouteFailed: the model chose no offered function, after the corrective retry.
        """
        if self.model is None:
            raise Unavailable(NO_MODEL)
        branches, mode, specs = self.functions(conditions, nodes)
        by_name = {b.function: i for i, b in enumerate(branches)}
        offered = [s["function"]["name"] for s in specs]
        detail: dict[str, Any] = {
            "router": self.name,
            "model": model_label(self.model),
            "mode": mode,
            "offered": offered,
            "calls": [],
            "turns": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        }
        messages = self.messages(node, verdict, specs, ctx)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                fix = texts.ROUTER_CORRECTION.format(problem=problem, functions=", ".join(offered))
                messages = [*messages, HumanMessage(fix)]
            reply = await self._call(specs, messages, detail)
            called = [str(c.get("name")) for c in reply.tool_calls or []]
            detail["calls"].append(called)
            chosen = sorted({by_name[n] for n in called if n in by_name})
            none_holds = self.allow_none and called and set(called) <= {texts.NONE_FUNCTION}
            if chosen or none_holds:
                detail["branches"] = [branches[i].condition for i in chosen]
                children = [c for i in chosen for c in branches[i].children]
                return RouteDecision(list(dict.fromkeys(children)), detail)
            problem = f"it was {_describe(reply)}, not a call to an offered function"
        raise RouteFailed(
            f"the model chose no offered function in {detail['turns']} replies "
            f"(last: {_describe(reply)}); offered: {', '.join(offered)}",
            detail,
        )

    async def _call(
        self, specs: list[dict[str, Any]], messages: list[BaseMessage], detail: dict[str, Any]
    ) -> Any:
        label = detail["model"]
        with chat_span(label) as span:
            try:
                reply = await self._bind(specs).ainvoke(messages)
            except Exception as exc:  # noqa: BLE001 - a rejected tool_choice or an API error
                if self.tool_choice is None:
                    raise RouteFailed(f"the model call failed: {_one_line(exc)}", detail) from None
                # llama.cpp's chatml-function-calling asserts tool_choice == "auto": ask again
                detail["tool_choice_rejected"] = _one_line(exc)
                try:
                    reply = await self._bind(specs, forced=False).ainvoke(messages)
                except Exception as again:  # noqa: BLE001
                    raise RouteFailed(
                        f"the model call failed: {_one_line(again)}", detail
                    ) from None
                self.tool_choice = None  # the server works without it: stop asking
            n_in, n_out = _usage(reply)
            record_usage(span, n_in, n_out, model=label)
        detail["turns"] += 1
        detail["input_tokens"] += n_in
        detail["output_tokens"] += n_out
        return reply

    def _bind(self, specs: list[dict[str, Any]], forced: bool = True) -> Any:
        if self.tool_choice is None or not forced:
            return self.model.bind_tools(specs)
        return self.model.bind_tools(specs, tool_choice=self.tool_choice)


def _one_line(exc: BaseException) -> str:
    first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {first[:300]}"


class DSPyRouter(dspy.Module):
    """Chooses branches with ``dspy.Predict(ChooseBranch)``; same interface as the router above.

    Args:
        lm: the DSPy LM; default ``dspy.settings.lm``.
    """

    name = "dspy"

    def __init__(self, lm: dspy.BaseLM | None = None):
        super().__init__()
        self.lm = role_lm(lm, "route")
        self.choose_branch = dspy.Predict(texts.ChooseBranch)

    def _lm_context(self) -> Any:
        return dspy_context(self.lm)

    def forward(self, node_text: str, observed: str, context: str, branches: str) -> Any:
        with self._lm_context():
            return self.choose_branch(
                node_text=node_text, observed=observed, context=context, branches=branches
            )

    async def aforward(self, node_text: str, observed: str, context: str, branches: str) -> Any:
        with self._lm_context():
            return await self.choose_branch.acall(
                node_text=node_text, observed=observed, context=context, branches=branches
            )

    async def choose(
        self,
        node: Node,
        verdict: Verdict,
        conditions: list[tuple[str, list[str]]],
        ctx: ToolContext,
        *,
        nodes: Mapping[str, Node] | None = None,
    ) -> RouteDecision:
        """The children of the branches the module chose.

        Raises:
            Unavailable: no DSPy LM is configured.
            RouteFailed: the reply could not be parsed or named no valid branch.
        """
        if self.lm is None and dspy.settings.lm is None:
            raise Unavailable(NO_LM)
        detail: dict[str, Any] = {"router": self.name, "input_tokens": 0, "output_tokens": 0}
        inputs = {
            "node_text": ctx.text or node.text or node.id,
            "observed": texts.render_observed(verdict.value, verdict.observed, verdict.explanation),
            "context": texts.render_context(ctx.input),
            "branches": texts.numbered_conditions([text for text, _ in conditions]),
        }
        try:
            with dspy.context(track_usage=True):
                pred = await self.acall(**inputs)
        except AdapterParseError as exc:
            first = next((ln for ln in str(exc).splitlines() if ln.strip()), "unparsable")
            raise RouteFailed(f"the router's reply could not be parsed: {first}", detail) from None
        detail["input_tokens"], detail["output_tokens"] = lm_usage(pred)
        chosen = _indices(pred.chosen)
        detail["chosen"] = chosen
        if chosen is None or any(not 1 <= i <= len(conditions) for i in chosen):
            raise RouteFailed(
                f"the router chose {json.dumps(pred.chosen, default=str)}, not branch numbers "
                f"between 1 and {len(conditions)}",
                detail,
            )
        detail["branches"] = [conditions[i - 1][0] for i in chosen]
        children = [c for i in chosen for c in conditions[i - 1][1]]
        return RouteDecision(list(dict.fromkeys(children)), detail)


def _indices(value: Any) -> list[int] | None:
    """Branch numbers from what the module returned (a list, a number, or a numeric string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        return [int(x) for x in re.findall(r"\d+", value)] if value.strip() else []
    if isinstance(value, list) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    ):
        return list(dict.fromkeys(value))
    return None
