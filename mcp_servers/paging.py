"""Result pages for the sopgraph data servers: a result never silently drops rows; when more
exist, it says ``truncated: true`` and gives the ``next_page`` to ask for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.fastmcp.exceptions import ToolError
from pydantic import BaseModel

from sopgraph.mcp_servers.sql import json_value

DEFAULT_PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000


class Page(BaseModel):
    """One page of a tabular result.

    Tools return it as a plain dict: a typed output schema makes the MCP client re-check
    the schema with jsonschema on every call, which costs more than the query.
    """

    columns: list[str]
    column_types: list[str]
    rows: list[list[Any]]
    page: int
    page_size: int
    row_count: int
    truncated: bool
    next_page: int | None
    note: str | None = None


def check_page(page: int, page_size: int, max_size: int = MAX_PAGE_SIZE) -> None:
    """Refuse a page request a caller can fix, in one line."""
    if page < 0:
        raise ToolError(f"page must be >= 0 (got {page}); pages count from 0")
    if not 1 <= page_size <= max_size:
        raise ToolError(f"page_size must be between 1 and {max_size} (got {page_size})")


def page_from_cursor(
    fetchmany, columns: Sequence[str], types: Sequence[str], page: int, page_size: int
) -> Page:
    """Skip to ``page`` and read one page plus one row (to know whether more exist)."""
    skip = page * page_size
    while skip > 0:
        got = fetchmany(min(skip, 10_000))
        if not got:
            break
        skip -= len(got)
    rows = fetchmany(page_size + 1)
    more = len(rows) > page_size
    rows = rows[:page_size]
    return Page(
        columns=list(columns),
        column_types=list(types),
        rows=[[json_value(v) for v in r] for r in rows],
        page=page,
        page_size=page_size,
        row_count=len(rows),
        truncated=more,
        next_page=page + 1 if more else None,
        note=f"more rows exist: call again with page={page + 1}" if more else None,
    )


def slice_items(
    items: Sequence[Any], page: int, page_size: int
) -> tuple[list[Any], bool, int | None]:
    """One page of an in-memory list: (items, truncated, next_page)."""
    lo = page * page_size
    chunk = list(items[lo : lo + page_size])
    more = len(items) > lo + page_size
    return chunk, more, (page + 1 if more else None)
