"""The tool kit: instants, windows, safe selectors and parameterised, paged queries."""

from __future__ import annotations

import asyncio
import random

import duckdb
import pytest

from sopgraph.tools.kit import Window, as_number, counter_steps, selector, sql, sql_time


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


def test_counter_steps_counts_resets_and_skips_nulls():
    rows = [(False, 5), (True, 7), (True, 2), (True, None), (True, 4), (True, 4)]
    assert counter_steps(rows) == [2, 2, 0]  # 5->7, reset to 2, no step from or to a null
    assert counter_steps([(True, 3)]) == []  # the first row is only a baseline
    assert counter_steps([]) == []


def test_counter_steps_is_the_lag_window_it_replaced():
    """Same steps as the SQL the jam tools ran before (``lag()`` over the window's rows), on
    random counters with resets, nulls and rows before the counted part."""
    con = duckdb.connect()
    rng = random.Random(7)
    for trial in range(200):
        n = rng.randint(0, 9)
        values, v = [], rng.randint(0, 5)
        for _ in range(n):
            v = rng.randint(0, 3) if rng.random() < 0.2 else v + rng.randint(0, 4)
            values.append(None if rng.random() < 0.15 else v)
        start = rng.randint(0, 3)  # rows before index ``start`` are baseline only
        rows = [(i >= start, x) for i, x in enumerate(values)]
        con.execute("CREATE OR REPLACE TABLE c (t INTEGER, v BIGINT)")
        if rows:
            con.executemany("INSERT INTO c VALUES (?, ?)", list(enumerate(values)))
        expected = [
            r[0]
            for r in con.execute(
                """
                WITH w AS (SELECT t, v, lag(v) OVER (ORDER BY t) AS prev FROM c)
                SELECT CASE WHEN v >= prev THEN v - prev ELSE v END FROM w
                WHERE t >= ? AND v IS NOT NULL AND prev IS NOT NULL ORDER BY t
                """,
                [start],
            ).fetchall()
        ]
        assert counter_steps(rows) == expected, (trial, rows)
