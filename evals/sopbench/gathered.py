"""The data the decide step's code sees: the task's input and every field its tools returned,
a number written as a string given as the number."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from sopgraph.nodes.agent_middleware import ANSWER_TOOL, content_text
from sopgraph.tools.toolmaker.rule_code import leading_json, typed


def gathered(inputs: dict[str, Any], messages: list[BaseMessage]) -> dict[str, Any]:
    """The task's input, then every field of every tool result in call order (a field two
    results name keeps the later value); a result that is not a JSON object is kept whole
    under its tool's name. The agent's own ``answer`` call is not data, nor is a failed call
    of a tool that another call of it answered (the model had called such an error message as
    a function); a failure no call made good stays (it may be the answer: "not found").
    Top-level values that are numbers written as strings become numbers (``typed``): the
    rule's code compares them with the SOP's thresholds."""
    data: dict[str, Any] = dict(inputs)
    results = [m for m in messages if isinstance(m, ToolMessage) and m.name != ANSWER_TOOL]
    for m in results:
        if m.status == "error" and any(o.name == m.name and o.status != "error" for o in results):
            continue  # a tool that also answered: its failed call's error is not data
        value = leading_json(content_text(m.content))
        if isinstance(value, dict):
            data.update(value)
        else:
            data[m.name or "result"] = value
    return {k: typed(v) for k, v in data.items()}
