"""The tool kit: instants, windows, safe selectors and parameterised, paged queries."""

from __future__ import annotations

import asyncio

import pytest

from sopgraph.tools.kit import Window, as_number, selector, sql, sql_time


def test_windows_and_times():
    w = Window.ending("2025-03-10T12:00:00+02:00", minutes=15)
    assert (w.sql_start, w.sql_end, w.promql) == (
        "2025-03-10 09:45:00",
        "2025-03-10 10:00:00",
        "15m",
    )
    assert sql_time("2025-03-10T10:00:00") == "2025-03-10 10:00:00"
    assert Window.ending("2025-03-10T12:00:00Z", 0.5).promql == "30s"


def test_selector_quotes_values():
    assert selector("m", site='A"B\\') == 'm{site="A\\"B\\\\"}'


def test_as_number_refuses_non_numbers():
    assert as_number("7") == 7.0
    with pytest.raises(TypeError):
        as_number(True)


class _Mcp:
    def __init__(self):
        self.calls = []

    async def call(self, server, tool, args):
        self.calls.append(args)
        page = args["page"]
        return {"rows": [[page]], "truncated": page < 2, "next_page": page + 1}


def test_sql_sends_params_and_reads_every_page():
    class Ctx:
        mcp = _Mcp()

    rows = asyncio.run(sql(Ctx, "ops", "SELECT ? AS x", "O'Brien"))
    assert rows == [[0], [1], [2]]
    assert Ctx.mcp.calls[0]["params"] == ["O'Brien"] and "O'Brien" not in Ctx.mcp.calls[0]["sql"]
