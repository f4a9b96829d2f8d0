"""A table measurement: one parameterised SELECT through the kit, reduced to one number.

Identifiers (table, columns) must be plain names and are quoted; every value, the window's
edges included, is a ``?`` parameter. The window's bounds are UTC ``YYYY-MM-DD HH:MM:SS``
text, which SQLite compares as text and DuckDB casts to its TIMESTAMP.

Example:
    >>> sql, params = select(RowsMeasure(server="ops", table="tickets", where={"site": "$site"},
    ...     open_at=("opened_at", "closed_at"), reduce="count"), {"site": "BFI4"},
    ...     "2025-03-17T10:00:00Z")
    >>> sql
    'SELECT count(*) FROM "tickets" WHERE "site" = ? AND "opened_at" <= ? AND ("closed_at" IS NULL OR "closed_at" > ?)'
    >>> select(RowsMeasure(server="conveyance", table="c5", columns=("a", "$col"), across="max",
    ...     time_column="t", minutes=10), {"col": "b"}, "2025-03-17T10:00:00Z")[0]
    'SELECT avg("a"), avg("b") FROM "c5" WHERE "t" > ? AND "t" <= ?'
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sopgraph.tools.kit import counter_steps, from_sql_time, instant, sql, sql_time
from sopgraph.tools.spec.bind import Bound
from sopgraph.tools.spec.measures import OPS
from sopgraph.tools.spec.model import AGE_UNITS, Lookup, RowsMeasure, SpecError

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AGG = {"mean": "avg", "sum": "sum", "min": "min", "max": "max"}
COUNTERS = ("increase", "rises")  # reduces over kit.counter_steps
ACROSS = {"sum": sum, "mean": lambda v: sum(v) / len(v), "min": min, "max": max, "count": len}


def ident(name: str | None, path: str) -> str:
    if not name or not IDENT.match(name):
        raise SpecError(f"{path}: {name!r} is not a plain table or column name")
    return f'"{name}"'


def _where(where: dict[str, Any], bound: dict[str, Any]) -> tuple[list[str], list[Any]]:
    clauses, params = [], []
    b = Bound(bound)
    for column, ref in where.items():
        col = ident(column, f"where.{column}")
        value = b.value(ref, f"where.{column}")
        if value is None:
            clauses.append(f"{col} IS NULL")
        elif isinstance(value, list):
            clauses.append(f"{col} IN ({', '.join('?' for _ in value)})")
            params += value
        else:
            clauses.append(f"{col} = ?")
            params.append(value)
    return clauses, params


def bounds(m: RowsMeasure, timestamp: str) -> tuple[dt.datetime, dt.datetime]:
    if isinstance(m.minutes, str):
        raise SpecError(f"minutes: {m.minutes!r} is a formula; read it with Bound.measure first")
    end = instant(timestamp) - dt.timedelta(minutes=m.offset_minutes)
    return end - dt.timedelta(minutes=m.minutes or 0), end


def select(m: RowsMeasure, bound: dict[str, Any], timestamp: str) -> tuple[str, list[Any]]:
    """The SELECT and its parameters for ``m`` at ``timestamp``."""
    clauses, params = _where(m.where, bound)
    start, end = bounds(m, timestamp)
    t = ident(m.time_column, "time_column") if m.time_column else None
    if m.minutes and t:
        lo = start - dt.timedelta(minutes=m.step_minutes) if m.reduce in COUNTERS else start
        lo_op = ">=" if m.edge.startswith("[") and m.reduce not in COUNTERS else ">"
        hi_op = "<=" if m.edge.endswith("]") else "<"
        clauses += [f"{t} {lo_op} ?", f"{t} {hi_op} ?"]
        params += [sql_time(lo), sql_time(end)]
    elif m.reduce == "age" and t:  # no window: the rows up to the input's time, none after it
        clauses.append(f"{t} {'<=' if m.edge.endswith(']') else '<'} ?")
        params.append(sql_time(end))
    if m.open_at:
        a, z = ident(m.open_at[0], "open_at[0]"), ident(m.open_at[1], "open_at[1]")
        clauses.append(f"{a} <= ? AND ({z} IS NULL OR {z} > ?)")
        params += [sql_time(end), sql_time(end)]
    b = Bound(bound)  # a column may be a $name: a lookup's value
    col = ident(b.value(m.column, "column"), "column") if m.column else None
    cols = [ident(b.value(c, f"columns[{i}]"), f"columns[{i}]") for i, c in enumerate(m.columns)]
    if cols:
        what = ", ".join(f"{AGG.get(m.reduce, m.reduce)}({c})" for c in cols)
    elif m.reduce == "count":
        what = f"count({col})" if col else "count(*)"
    elif m.reduce in AGG:
        what = f"{AGG[m.reduce]}({col})"
    elif m.reduce == "age":
        what = f"max({t})"
    elif m.reduce in ("last", "first"):
        what = str(col)
        clauses.append(f"{col} IS NOT NULL")
    else:  # increase, rises: (counted, value) rows for kit.counter_steps
        edge = ">=" if m.edge.startswith("[") else ">"
        what = f"{t} {edge} ?, {col}"
        params.insert(0, sql_time(start))
    if m.min_count is not None and m.reduce not in COUNTERS:
        what += f", count({col})" if col else ", count(*)"
    text = f"SELECT {what} FROM {ident(m.table, 'table')}"
    if clauses:
        text += " WHERE " + " AND ".join(clauses)
    if m.reduce in ("last", "first", *COUNTERS):
        order = "DESC" if m.reduce == "last" else "ASC"
        text += f" ORDER BY {t} {order}" + (" LIMIT 1" if m.reduce not in COUNTERS else "")
    return text, params


async def read(
    m: RowsMeasure, bound: dict[str, Any], timestamp: str, ctx: Any
) -> tuple[float | None, str]:
    """The measurement's number (None: no value) and the SQL that read it."""
    m = Bound.measure(m, ctx)
    text, params = select(m, bound, timestamp)
    rows = await sql(ctx, m.server, text, *params)
    if m.columns:
        values = [float(v) for v in (rows[0] if rows else ()) if v is not None]
        if m.keep is not None:
            limit = Bound.threshold(m.keep.threshold, ctx)
            values = [v for v in values if OPS[m.keep.op](v, limit)]
        return (float(ACROSS[m.across](values)) if values or m.across == "count" else None), text
    if m.reduce in COUNTERS:
        steps = counter_steps(rows)
        if not steps or (m.min_count is not None and len(steps) < float(m.min_count)):
            return None, text
        return float(sum(s > 0 for s in steps) if m.reduce == "rises" else sum(steps)), text
    if m.min_count is not None and rows and rows[0][-1] < float(m.min_count):
        return None, text
    value = rows[0][0] if rows else None
    if value is None:
        return None, text
    if m.reduce == "age":
        end = bounds(m, timestamp)[1]
        seen = value if isinstance(value, dt.datetime) else from_sql_time(str(value))
        if seen.tzinfo is None:
            seen = seen.replace(tzinfo=dt.UTC)
        return (end - seen).total_seconds() / AGE_UNITS[m.age_unit], text
    return float(value), text


async def lookup(x: Lookup, bound: dict[str, Any], ctx: Any) -> Any:
    """The first matching row's ``column`` (None: no row)."""
    clauses, params = _where(x.where, bound)
    text = f"SELECT {ident(x.column, 'lookups.column')} FROM {ident(x.table, 'lookups.table')}"
    if clauses:
        text += " WHERE " + " AND ".join(clauses)
    rows = await sql(ctx, x.server, text + " LIMIT 1", *params)
    return rows[0][0] if rows else None
