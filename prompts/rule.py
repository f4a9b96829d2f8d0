"""The rule tool-maker's prompt: an SOP's decision over the data its tools return, as code,
written once for every task (``tools/toolmaker/rule_maker.py``).

The same wording as the SOP-Bench decide step's (``evals/sopbench/decide.py``), which asks for
one task's answer at run time; here the code is made offline and then runs on every task, so
the prompt shows a few tasks' data as examples of its fields and asks for a function
``decide(data)`` that holds for any of them.
"""

from __future__ import annotations

import json
import pprint
from typing import Any

SYSTEM = "You write short, plain Python that applies a Standard Operating Procedure's rule."

PROMPT = """<sop>
{sop}
</sop>

This procedure runs on many tasks. For each task, the task's input and every field the
procedure's tools returned are the Python dict `data` (already defined). {count} tasks' `data`,
as examples of its fields (the values differ from task to task):

{examples}

Write a Python function `decide(data)` that applies the procedure's decision rule to one
task's `data` exactly as the procedure states it (its conditions, counts, formulas and
thresholds, in its order), for any task, and returns

{{{fields}}}
{allowed}
Use only `data`: call no tool, import nothing but math, re or datetime, and catch no errors.
Reply with one ```python block and nothing else."""

REPAIR = """Your function has a problem: {problem}.
Write the whole function `decide(data)` again, fixed, with only the conditions, values and
thresholds the procedure states. Reply with one ```python block and nothing else."""

VALUE_CHARS = 300  # a longer text value of an example is cut (its field still shows)


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > VALUE_CHARS:
        return value[:VALUE_CHARS] + " ..."
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value[:20]]
    return value


def rule_prompt(sop: str, examples: list[dict[str, Any]], allowed: dict[str, list[str]]) -> str:
    """The prompt for ``allowed``'s output fields (each with the values the SOP states for it,
    or [] for free text), showing ``examples`` (each one task's ``data``)."""
    fields = ", ".join(f'"{c}": ...' for c in allowed)
    lines = "".join(
        f"`{c}` must be exactly one of: {', '.join(json.dumps(v) for v in vals)}.\n"
        for c, vals in allowed.items()
        if vals
    )
    shown = "\n\n".join(
        "data = " + pprint.pformat(_short(e), sort_dicts=False, width=100) for e in examples
    )
    return PROMPT.format(
        sop=sop.strip(), count=len(examples), examples=shown, fields=fields, allowed=lines
    )
