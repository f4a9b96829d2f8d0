"""The PromQL subset the robotics metrics server speaks: parse a query, evaluate it on a series.

``metric{label="v",...}`` selectors with ``= != =~ !~`` matchers, optionally wrapped in
``<func>_over_time(selector[range])``; plus the RFC 3339 / unix-seconds times and durations
of the query API. Every parse error is a one-line ``ToolError`` that says what is supported.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
from mcp.server.fastmcp.exceptions import ToolError

LABELS = ("site", "station", "robot")
LOOKBACK_S = 300  # an instant selector sees the latest sample up to 5 minutes old
FUNCS = ("avg", "min", "max", "sum", "count", "last")
SUPPORTED = (
    'supported: metric{label="v",...} with = != =~ !~ on labels site/station/robot, '
    "and avg|min|max|sum|count|last_over_time(selector[15m])"
)
_TOKEN = re.compile(
    r"""\s*(?:(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"""|(?P<dur>\d+[smhd])|(?P<num>\d+(?:\.\d+)?)|(?P<op>=~|!~|!=|=)|(?P<punct>[{}(),\[\]]))"""
)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class Query:
    """A parsed query: ``func`` is None for a plain selector."""

    metric: str
    matchers: tuple[tuple[str, str, str], ...]
    func: str | None = None
    range_s: int = 0


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            raise ToolError(
                f"parse error at char {i}: unexpected '{text[i : i + 10].strip()}'; {SUPPORTED}"
            )
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind), m.start(kind)))
        i = m.end()
    return out


def parse_query(text: str) -> Query:
    """Parse the PromQL subset; raises ToolError with a one-line message."""
    toks = _tokens(text or "")
    pos = 0

    def peek(k: int = 0) -> tuple[str, str, int]:
        return toks[pos + k] if pos + k < len(toks) else ("end", "", len(text or ""))

    def take(kind: str, value: str | None = None, what: str = "") -> str:
        nonlocal pos
        k, v, at = peek()
        if k != kind or (value is not None and v != value):
            raise ToolError(
                f"parse error at char {at}: expected {what or value or kind}, got '{v or 'end of query'}'; {SUPPORTED}"
            )
        pos += 1
        return v

    func, range_s = None, 0
    if peek()[0] == "name" and peek(1)[1] == "(":
        name = peek()[1]
        if not name.endswith("_over_time") or name.removesuffix("_over_time") not in FUNCS:
            raise ToolError(f"unsupported function '{name}'; {SUPPORTED}")
        func = name.removesuffix("_over_time")
        pos += 2
    metric = take("name", what="a metric name")
    matchers = []
    if peek()[1] == "{":
        pos += 1
        while peek()[1] != "}":
            label = take("name", what="a label name")
            op = take("op", what="one of = != =~ !~")
            raw = take("str", what="a quoted string")
            matchers.append((label, op, raw[1:-1].encode().decode("unicode_escape")))
            if peek()[1] == ",":
                pos += 1
            elif peek()[1] != "}":
                take("punct", "}")
        pos += 1
    if func:
        take("punct", "[", "'[' and a range such as [15m]")
        dur = take("dur", what="a duration such as 15m")
        range_s = int(dur[:-1]) * _UNITS[dur[-1]]
        take("punct", "]")
        take("punct", ")")
    elif peek()[1] == "[":
        raise ToolError(
            f"a range vector cannot be returned; wrap it, e.g. avg_over_time({metric}[15m])"
        )
    if peek()[0] != "end":
        k, v, at = peek()
        raise ToolError(f"parse error at char {at}: expected end of query, got '{v}'; {SUPPORTED}")
    for label, _, _ in matchers:
        if label not in LABELS:
            raise ToolError(f"unknown label '{label}'; labels are {', '.join(LABELS)}")
    return Query(metric, tuple(matchers), func, range_s)


def parse_time(value: str | float | int, what: str = "time") -> float:
    """RFC 3339 (``2025-03-10T14:05:00Z``) or unix seconds."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(
            f"bad {what} '{value}': use RFC 3339 like 2025-03-10T14:05:00Z or unix seconds"
        ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def parse_step(value: str | float | int) -> float:
    """A range query's step: a duration (``5m``) or seconds, positive."""
    if isinstance(value, int | float):
        step = float(value)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)([smhd]?)\s*", str(value))
        if not m:
            raise ToolError(f"bad step '{value}': use a duration like 5m or seconds like 300")
        step = float(m.group(1)) * _UNITS.get(m.group(2) or "s", 1)
    if step <= 0:
        raise ToolError("step must be positive")
    return step


def matches(have: str, op: str, want: str) -> bool:
    """Whether label value ``have`` satisfies the matcher ``op want`` (regexes match whole)."""
    if op == "=":
        return have == want
    if op == "!=":
        return have != want
    try:
        hit = re.fullmatch(want, have) is not None
    except re.error as exc:
        raise ToolError(f"bad regular expression '{want}': {exc}") from None
    return hit if op == "=~" else not hit


def eval_at(q: Query, t: np.ndarray, v: np.ndarray, at: float) -> float | None:
    """The query's value for one series at one instant (window is (at - range, at])."""
    width = q.range_s if q.func else LOOKBACK_S
    lo = int(np.searchsorted(t, at - width, side="right"))
    hi = int(np.searchsorted(t, at, side="right"))
    if hi <= lo:
        return None
    w = v[lo:hi]
    if q.func is None or q.func == "last":
        return float(w[-1])
    return float(
        {"avg": np.mean, "min": np.min, "max": np.max, "sum": np.sum, "count": len}[q.func](w)
    )
