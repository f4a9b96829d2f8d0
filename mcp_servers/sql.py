"""What the SQL servers (ops store, conveyance warehouse) share: one statement's text
cleaned, and database values as plain JSON.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from mcp.server.fastmcp.exceptions import ToolError


def strip_sql(sql: str) -> str:
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise ToolError("empty query; pass one SELECT statement")
    return text


def json_value(v: Any) -> Any:
    """A database value as plain JSON: timestamps as ISO 8601, decimals as floats."""
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, bytes):
        return v.hex()
    return v
