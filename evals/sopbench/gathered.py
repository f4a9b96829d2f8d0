"""The data the decide step's code sees: the task's input and every field its tools returned,
a number written as a string given as the number."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from sopgraph.nodes.agent_middleware import ANSWER_TOOL, content_text


def leading_json(text: str) -> Any:
    """JSON that ``text`` opens with (a note after it, such as the loop guard's, is dropped),
    else the text itself."""
    try:
        return json.JSONDecoder().raw_decode(text.strip())[0]
    except (json.JSONDecodeError, TypeError, AttributeError):
        return text


# A string that is a number written plainly: no sign but minus, no leading zero, no exponent
# (so "0100" and "1e5" stay text: an identifier or code, not a quantity).
_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def typed(value: Any) -> Any:
    """A number written as a string (tools over CSV files return every value so) as the
    number; anything else as it is."""
    text = value.strip() if isinstance(value, str) else ""
    if not _NUMBER.fullmatch(text):
        return value
    return float(text) if "." in text else int(text)


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
