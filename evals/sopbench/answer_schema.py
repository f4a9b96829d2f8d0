"""The typed ``answer`` action of the SOP-Bench baselines: its fields and the values each may take.

The answer's schema is the domain's output columns after a short ``reasoning``; a column is an
enum of the values the SOP text itself lists for it, never of values read from the data. The
agents (``agents.py``) offer it as their response format; the enterprise agent reuses the
reasoning field's name.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from sopgraph.evals.sopbench.domain import Domain
from sopgraph.nodes.agent_middleware import ANSWER_TOOL

_QUOTED = re.compile(r"[\"“]([^\"”\n]{1,40})[\"”]")


def allowed_values(sop_text: str, column: str) -> list[str]:
    """The values the SOP text itself lists for ``column``, or [] when it lists none.

    Read from the sentences that name the column (its name, or its last word: "the decision
    is \"Approved\"" for ``refund_decision``) and from the list a line naming it leads in
    (a line ending in ``:`` and the list items after it: "Apply the enforcement action:" then
    ``- ... → "No Action"``): the quoted values there, when there are at least two. Never from
    the data: a value the SOP does not spell out leaves the field free text.
    """
    words = [w for w in re.split(r"[\s_-]+", column.lower()) if w]
    if not words:
        return []
    keys = {" ".join(words), words[-1]}

    def names(text: str) -> bool:
        low = text.lower().replace("_", " ")
        return any(re.search(rf"\b{re.escape(k)}\b", low) for k in keys)

    values: list[str] = []
    leading = False  # inside the list a line naming the column leads in
    for line in sop_text.splitlines():
        item = _ITEM.match(line)
        if leading and item and line.strip():
            values += [v.strip() for v in _QUOTED.findall(line) if v.strip()]
            continue
        leading = names(line) and line.rstrip().endswith(":")
        for sentence in re.split(r"(?<=[.;:!?])\s+", line):
            if names(sentence):
                values += [v.strip() for v in _QUOTED.findall(sentence) if v.strip()]
    unique = list(dict.fromkeys(values))
    return unique if len(unique) >= 2 else stated_outcomes(sop_text, column)


_GENERIC = {"outcome", "output", "result", "answer"}  # name no output in particular


def stated_outcomes(sop_text: str, column: str) -> list[str]:
    """The values the drafting reader finds for ``column`` (``graphs/drafting/outcomes.py``:
    a definitions list or a bare list under a lead-in naming an outcome, a table column, "one
    of A, B or C"), where no sentence quotes them: those of an output whose name shares a word
    with the column's, or of one named only as "the outcome"."""
    from sopgraph.graphs.drafting.document import DocumentError, read_text
    from sopgraph.graphs.drafting.outcomes import find_outcomes

    try:
        outcomes = find_outcomes(read_text(sop_text, "sop.txt"))
    except DocumentError:
        return []
    words = {w for w in re.split(r"[\s_-]+", column.lower()) if w}
    values = [o.value for o in outcomes if (set(o.field.split("_")) & words) or o.field in _GENERIC]
    unique = list(dict.fromkeys(values))
    return unique if len(unique) >= 2 else []


# a list item or an indented line: what a lead-in line ending in ":" introduces
_ITEM = re.compile(r"^(\s+\S|\s*([-*•]|\d+[.)])\s)")


REASONING = "reasoning"
REASONING_NOTE = (
    "first, in one or two short sentences: which rule of the procedure the results meet, "
    "with the numbers"
)


def answer_schema(domain: Domain) -> type[BaseModel]:
    """The ``answer`` action: a short ``reasoning`` first, then one field per output column,
    an enum where the SOP lists values.

    The reasoning comes first so that a model decoding under the schema's grammar applies the
    procedure's rule to its results before it writes the decision (it is kept in the record,
    never scored).
    """
    fields: dict[str, Any] = {REASONING: (str, Field(description=REASONING_NOTE))}
    for col in domain.output_columns:
        values = allowed_values(domain.sop_text, col)
        kind: Any = Literal[tuple(values)] if values else str  # type: ignore[valid-type]
        fields[col] = (kind, Field(description=f"the SOP's {col}"))
    model = create_model(ANSWER_TOOL, __doc__="The final answer the procedure gives.", **fields)
    return model
