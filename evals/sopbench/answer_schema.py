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
    is \"Approved\"" for ``refund_decision``): the quoted values there, when there are at least
    two. Never from the data: a value the SOP does not spell out leaves the field free text.
    """
    words = [w for w in re.split(r"[\s_-]+", column.lower()) if w]
    if not words:
        return []
    keys = {" ".join(words), words[-1]}
    values: list[str] = []
    for sentence in re.split(r"(?<=[.;:!?])\s+|\n", sop_text):
        low = sentence.lower().replace("_", " ")
        if any(re.search(rf"\b{re.escape(k)}\b", low) for k in keys):
            values += [v.strip() for v in _QUOTED.findall(sentence) if v.strip()]
    unique = list(dict.fromkeys(values))
    return unique if len(unique) >= 2 else []


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
