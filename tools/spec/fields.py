"""A field measurement: one MCP tool call for a record, one field of it, one test.

The call's arguments are the measurement's ``args`` with each ``$name`` bound (an input field
or a lookup). The number is 1 or 0 for a test (``equals``, ``one_of``, ``within_days``), or the
field's own number; no record, or the field absent or null, is no value.

Example:
    >>> m = FieldMeasure(server="it", tool="get_ticket", args={"ticket_id": "$ticket_id"},
    ...                  field="status", one_of=("open", "in_progress"))
    >>> call_text(m, {"ticket_id": "717"})
    "it.get_ticket(ticket_id='717').status"
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sopgraph.tools.spec.bind import Bound
from sopgraph.tools.spec.model import FieldMeasure, SpecError

DAY = 86400.0


def arguments(m: FieldMeasure, bound: dict[str, Any]) -> dict[str, Any]:
    b = Bound(bound)
    return {k: b.value(v, f"args.{k}") for k, v in m.args.items()}


def call_text(m: FieldMeasure, bound: dict[str, Any]) -> str:
    """The call and the field it reads, as the trace shows them."""
    args = ", ".join(f"{k}={v!r}" for k, v in arguments(m, bound).items())
    return f"{m.server}.{m.tool}({args}).{m.field}"


def dig(record: Any, path: str) -> Any:
    """``record``'s field ``path`` (``a.b``: field ``b`` of field ``a``); None when absent."""
    for part in path.split("."):
        if not isinstance(record, dict):
            return None
        record = record.get(part)
    return record


def moment(value: Any, path: str) -> dt.datetime:
    """A time a record or input holds (ISO 8601 text, a date, or a datetime), in UTC."""
    if isinstance(value, dt.datetime):
        at = value
    elif isinstance(value, dt.date):
        at = dt.datetime(value.year, value.month, value.day)
    else:
        try:
            at = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise SpecError(f"{path}: {value!r} is not a time (ISO 8601)") from None
    return at if at.tzinfo else at.replace(tzinfo=dt.UTC)


async def read(
    m: FieldMeasure, bound: dict[str, Any], timestamp: str, ctx: Any
) -> tuple[float | None, str]:
    """The measurement's number (None: no value) and the call that read it."""
    text = call_text(m, bound)
    record = await ctx.mcp.call(m.server, m.tool, arguments(m, bound))
    got = dig(record, m.field)
    if got is None:
        return None, f"{text} = null"
    text = f"{text} = {got!r}"
    b = Bound(bound)
    if m.equals is not None:
        return float(got == b.value(m.equals, "equals")), text
    if m.one_of is not None:
        allowed = [b.value(v, f"one_of[{i}]") for i, v in enumerate(m.one_of)]
        return float(got in allowed), text
    if m.within_days is not None:
        if m.of.startswith("$"):
            other = timestamp if m.of == "$timestamp" else b.value(m.of, "of")
        else:
            other = dig(record, m.of)
            if other is None:
                return None, f"{text}; {m.of} = null"
        days = abs((moment(got, m.field) - moment(other, "of")).total_seconds()) / DAY
        limit = (
            Bound.threshold(m.within_days, ctx) if isinstance(m.within_days, str) else m.within_days
        )
        return float(days <= limit), f"{text}; {days:g} days from {m.of}"
    if isinstance(got, bool) or not isinstance(got, int | float):
        raise SpecError(
            f"field: {m.field} is {got!r}, not a number; give equals, one_of or within_days"
        )
    return float(got), text
