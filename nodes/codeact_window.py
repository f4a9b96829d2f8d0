"""The time a check's text states, and the CodeAct host's hold on the code's times: a window
that ends at the alarm ("over the last 15 minutes", "in the last 24 hours") or the alarm's
moment ("at the time of the alarm").

Measured on the live held-out CodeAct runs (docs/agents.md, alarms 61-84): the model copies
its times from a demonstration of another check. It averaged 25 minutes for "every upstream
reading of the last 45 minutes", and counted the faults of the last 24 hours for "the robot is
in a fault state at the time of the alarm" (and the faults at the alarm's moment for the
check beside it, "at least 3 times in the last 24 hours"). The text says which time it means;
the host reads it:

- a window check's code has its window set to the text's: a query time before the alarm that
  is not the window's start becomes the start, a PromQL range (``[30m]``) becomes the window
  (``hold_window``, a plain edit of the code's literals, noted in the trace);
- code for a window check that reads no window at all (no earlier time, no range, no
  ``timedelta``), and code for a moment check that reads from before the moment, are sent back
  by the review (``time_problem``).

Example:
    >>> check_window("The sorter recorded at least 4 jams in the last 30 minutes.")
    1800
    >>> check_window("Units inducted in the last hour are 25% below the hour before.") is None
    True
    >>> now = parse_time("2025-03-17T23:48:03Z")
    >>> hold_window("q(sql='... > ?', params=['2025-03-17 23:23:03'])", now, 2700)[0]
    "q(sql='... > ?', params=['2025-03-17 23:03:03'])"
"""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime, timedelta

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_WORDS = {"": 1, "a": 1, "an": 1, "one": 1}
_WINDOW = re.compile(
    r"\b(?:over|in|of|for|within|during) the (?:last|past) (?:(\d+|one|an?) )?"
    r"(second|minute|hour|day)s?\b",
    re.I,
)
# a second time in the text (the hour before, a 5-minute average, a reading older than ...):
# the window alone does not say what the code reads
_OTHER_TIME = re.compile(
    r"\b(?:before|earlier|previous|prior|older|ago)\b|\d+-(?:second|minute|hour)|"
    r"\b(?:five|ten|fifteen)-minute\b",
    re.I,
)
_MOMENT = re.compile(r"\bat the time of the alarm\b", re.I)
# "within the last 3 days": an age, which code may measure from the latest row (no window)
_AGE = re.compile(r"\bwithin the (?:last|past)\b", re.I)
STAMP = re.compile(r"(\d{4}-\d\d-\d\d)([ T])(\d\d:\d\d:\d\d)")
_RANGE = re.compile(r"\[(\d+)([smhd])(?=[:\]])")
_RANGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SLACK = timedelta(seconds=90)  # a time this close to the one meant is that time


def parse_time(text: str) -> datetime:
    """An ISO time (``2025-03-17T23:48:03Z``, ``2025-03-17 23:48:03``), in UTC."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def check_window(text: str) -> int | None:
    """The seconds of the one window ending at the alarm that ``text`` states, or None when
    it states none, several, or another time beside it."""
    found = {int(_WORDS.get((n or "").lower(), 0) or n) * _UNITS[unit.lower()]
             for n, unit in _WINDOW.findall(text or "")}  # fmt: skip
    if len(found) != 1 or _OTHER_TIME.search(text or ""):
        return None
    return found.pop()


def reads_window(text: str) -> bool:
    """Whether a check's code must read a window of its own: the text states one that is not
    an age ("within the last 3 days")."""
    return check_window(text) is not None and not _AGE.search(text or "")


def states_moment(text: str) -> bool:
    """Whether ``text`` is about the alarm's moment and no window before it."""
    return bool(_MOMENT.search(text or "")) and not _WINDOW.search(text or "")


def _stamps(code: str) -> list[datetime]:
    out = []
    for match in STAMP.finditer(code):
        try:
            out.append(parse_time(f"{match.group(1)}T{match.group(3)}"))
        except ValueError:
            continue
    return out


def _range_text(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def hold_window(code: str, now: datetime, seconds: int) -> tuple[str, list[str]]:
    """``code`` with its times held to the window of ``seconds`` that ends at ``now``: each
    query time earlier than ``now`` that is not the window's start becomes the start, each
    PromQL range another length becomes the window. A note for each change."""
    start = now - timedelta(seconds=seconds)
    held, notes = _hold_stamps(code, now, start, "is not the window's start:")

    def span(match: re.Match[str]) -> str:
        if int(match.group(1)) * _RANGE_UNITS[match.group(2)] == seconds:
            return match.group(0)
        new = "[" + _range_text(seconds)
        notes.append(f"range {match.group(0)}] is not the window: {new}]")
        return new

    return _RANGE.sub(span, held), notes


def _hold_stamps(code: str, now: datetime, to: datetime, why: str) -> tuple[str, list[str]]:
    """``code`` with each time before ``now`` that is not ``to`` made ``to`` (in the same
    format), and a note for each: "time <old> <why> <new>"."""
    notes: list[str] = []

    def stamp(match: re.Match[str]) -> str:
        try:
            when = parse_time(f"{match.group(1)}T{match.group(3)}")
        except ValueError:
            return match.group(0)
        if when >= now - SLACK or abs(when - to) <= SLACK:
            return match.group(0)
        new = to.strftime(f"%Y-%m-%d{match.group(2)}%H:%M:%S")
        notes.append(f"time {match.group(0)} {why} {new}")
        return new

    return STAMP.sub(stamp, code), notes


# a query's last placeholder is a lower bound on a time: ``"five_minute_interval" > ?``
_LOWER = re.compile(r'("?[A-Za-z_][A-Za-z0-9_]*"?)\s*>=?\s*\?(?![^?]*\?)')


def bound_window(code: str, functions: set[str], now: datetime) -> tuple[str, list[str]]:
    """``code`` with each SQL query of ``functions`` that has one parameter more than its
    placeholders, where its last placeholder is a time's lower bound (``"t" > ?``) and its
    last parameter a time, given the upper bound that parameter was for (``AND "t" <= ?``),
    which is ``now`` (the window ends at the alarm); a note for each. Measured (alarms 133-156): the model wrote three parameters for two
    placeholders, and the samples drawn after the review dropped the end, reading every row
    after the window's start (92% where the window's 15 minutes were below 50%)."""
    tree = parsed(code)
    if tree is None:
        return code, []
    edits, notes = [], []
    for sql, params, extra in _sql_calls(tree, functions):
        last = params.elts[-1]
        match = _LOWER.search(sql.value) if extra else None
        if match is None:
            continue
        column = match.group(1)
        new = f"{sql.value[: match.end()]} AND {column} <= ?{sql.value[match.end() :]}"
        edits.append((sql, new))
        notes.append(f"{len(params.elts)} params for {len(params.elts) - 1} placeholders: "
                     f"the last is the window's end ({column} <= ?)")  # fmt: skip
        stamp = STAMP.search(last.value)
        when = _stamps(last.value)
        if stamp and when and abs(when[0] - now) > SLACK and last.lineno == last.end_lineno:
            edits.append((last, now.strftime(f"%Y-%m-%d{stamp.group(2)}%H:%M:%S")))
            notes.append(f"the window's end {last.value} is not the alarm's time: NOW")
    return _replaced(code, edits), notes


def _sql_calls(tree: ast.AST, functions: set[str]):
    """Each one-line SQL query of ``functions`` in ``tree``: its ``sql`` constant, its
    ``params`` list and whether it has one parameter more than its placeholders, the last a
    time."""
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id in functions):  # fmt: skip
            continue
        args = {k.arg: k.value for k in call.keywords}
        sql, params = args.get("sql"), args.get("params")
        if not (isinstance(sql, ast.Constant) and isinstance(sql.value, str)
                and isinstance(params, ast.List) and params.elts
                and sql.lineno == sql.end_lineno):  # fmt: skip
            continue
        last = params.elts[-1]
        extra = sql.value.count("?") == len(params.elts) - 1 and (
            isinstance(last, ast.Constant) and isinstance(last.value, str)
            and STAMP.fullmatch(last.value.strip().rstrip("Z")) is not None
        )  # fmt: skip
        yield sql, params, extra


def _replaced(code: str, edits: list[tuple[ast.expr, str]]) -> str:
    """``code`` with each ``(node, text)`` of ``edits``: the node's source made ``repr(text)``."""
    lines = code.splitlines(keepends=True)
    for node, new in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        line = lines[node.lineno - 1]
        begin, end = _char(line, node.col_offset), _char(line, node.end_col_offset)
        lines[node.lineno - 1] = line[:begin] + repr(new) + line[end:]
    return "".join(lines)


def hold_moment(code: str, now: datetime) -> tuple[str, list[str]]:
    """``code`` for a moment check ("at the time of the alarm") with each query time before
    ``now`` made ``now``, and a note for each (from level 5). Measured (alarms 157-180, level
    4): "the station's robot is in a fault state at the time of the alarm" was queried as a
    state open between 24 hours before the alarm and the alarm (``started_at <= ?`` with the
    time a day earlier), copied from the 24-hour check beside it: no fault found where one was
    open."""
    return _hold_stamps(code, now, now, "is before the alarm: the check is about its moment,")


# a query's last placeholder is an upper bound on a start: ``"started_at" <= ?``
_STARTED = re.compile(r'("?)([A-Za-z_]*(?:start|open)[A-Za-z0-9_]*)\1\s*<=?\s*\?(?![^?]*\?)')
# a lower bound on a start: ``"started_at" > ?`` (a window's start, copied from a window check)
_STARTED_AFTER = re.compile(r'("?)([A-Za-z_]*(?:start|open)[A-Za-z0-9_]*)\1\s*>=?\s*\?')
_ENDS = (("started", "ended"), ("start", "end"), ("opened", "closed"), ("open", "close"))


def _end_of(start: str, columns: set[str] | None) -> str | None:
    """The column that ends what ``start`` starts (``started_at``: ``ended_at``), or None
    (none by name, or one ``columns`` does not hold)."""
    ended = next((start.replace(a, b, 1) for a, b in _ENDS if a in start), None)
    return None if ended is None or (columns is not None and ended not in columns) else ended


def _open_sql(sql: str, extra: bool, columns: set[str] | None) -> tuple[str, list[str]]:
    """``sql`` made to read the rows open at its moment, and a note for each change: a lower
    bound on a start becomes one on the end (``("ended_at" IS NULL OR "ended_at" > ?)``);
    with ``extra`` (one parameter more than its placeholders), a last ``"started_at" <= ?``
    gets that end after it."""
    notes: list[str] = []

    def after(match: re.Match[str]) -> str:
        ended = _end_of(match.group(2), columns)
        if ended is None:
            return match.group(0)
        column = f"{match.group(1)}{ended}{match.group(1)}"
        notes.append(f"{match.group(0)} reads a window of starts; the check's moment is "
                     f"one the row is open at: ({column} IS NULL OR {column} > ?)")  # fmt: skip
        return f"({column} IS NULL OR {column} > ?)"

    held = _STARTED_AFTER.sub(after, sql)
    match = _STARTED.search(held) if extra else None
    ended = _end_of(match.group(2), columns) if match else None
    if match and ended:
        column = f"{match.group(1)}{ended}{match.group(1)}"
        held = f"{held[: match.end()]} AND ({column} IS NULL OR {column} > ?){held[match.end() :]}"
        notes.append(f"one param more than the placeholders: the last is the moment the row is "
                     f"still open at ({column} > ?)")  # fmt: skip
    return held, notes


def bound_moment(
    code: str, functions: set[str], columns: set[str] | None = None
) -> tuple[str, list[str]]:
    """``code`` with each SQL query of ``functions`` for a moment check made to read the rows
    open at that moment (from level 5): a lower bound on a start (``"started_at" > ?``, a
    window's) becomes one on its end, ``("ended_at" IS NULL OR "ended_at" > ?)``; a query
    with one parameter more than its placeholders, whose last placeholder bounds a start
    (``"started_at" <= ?``) and whose last parameter is a time, gets that end after it. With
    ``columns`` (the server's catalog), only an end column it holds is written. Measured
    (alarms 157-180, level 4; a dev run on ALM-001488, level 5): "the robot is in a fault
    state at the time of the alarm" wrote five parameters for four placeholders on 3 nodes
    (the query failed; the answer was a number printed nowhere), and copied the 24-hour
    check's ``"started_at" > ? AND "started_at" <= ?``, which with the moment's times reads
    no row, whatever the robot's state."""
    tree = parsed(code)
    if tree is None:
        return code, []
    edits, notes = [], []
    for sql, _, extra in _sql_calls(tree, functions):
        held, more = _open_sql(sql.value, extra, columns)
        if more:
            edits.append((sql, held))
            notes += more
    return _replaced(code, edits), notes


def parsed(code: str) -> ast.AST | None:
    """``code``'s syntax tree, or None when it does not parse."""
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def _char(line: str, offset: int) -> int:
    """The character index of a UTF-8 byte ``offset`` into ``line`` (the AST counts bytes)."""
    return len(line.encode()[:offset].decode(errors="ignore"))


# "every upstream reading of the last 45 minutes was below 70%": a bound on each reading
_EVERY = re.compile(
    r"\b(?:every|each|all)\b[^.]*?\breadings?\b[^.]*?"
    r"\b(?:(below|under|less than|lower than)|(above|over|more than|higher than|exceed))",
    re.I,
)
_AGGREGATE = re.compile(r"\b(avg|min|max)(_over_time)?(\s*\()")


def check_extreme(text: str) -> str | None:
    """The reading that decides a check stating a bound on every reading of its window:
    ``max`` for "every reading was below" (the largest must be), ``min`` for "above"; None
    for other checks.

    >>> check_extreme("Every upstream reading of the last 45 minutes was below 70% of plan.")
    'max'
    """
    match = _EVERY.search(text)
    if match is None:
        return None
    return "max" if match.group(1) else "min"


def hold_extreme(code: str, extreme: str) -> tuple[str, list[str]]:
    """``code`` with its aggregates of readings (SQL's ``avg(``, PromQL's ``avg_over_time(``,
    Python's ``min(``) made ``extreme``: every reading is below a bound when the largest is.
    Measured: "every upstream reading of the last 45 minutes was below 70%" averaged the
    readings (68.7, true) in both of its runs on alarms 109-132, where the truth was false.
    A column label the code reads back (``'avg(upstream_rate_ratio)'``) changes with it."""
    notes: list[str] = []

    def sub(match: re.Match[str]) -> str:
        if match.group(1) == extreme:
            return match.group(0)
        notes.append(f"{match.group(1)}{match.group(2) or ''}( is not {extreme}: every reading")
        return f"{extreme}{match.group(2) or ''}{match.group(3)}"

    held = _AGGREGATE.sub(sub, code)
    return held, sorted(set(notes))


SQL = re.compile(r"\bselect\b[\s\S]*\bfrom\b", re.I)  # code that holds a SQL query


def open_window(code: str, now: datetime) -> str | None:
    """Why ``code`` reads past the alarm, or None: SQL code that reads from a time before
    ``now`` but names no time up to ``now`` (no ``NOW``, no time at the alarm or after it):
    its rows run on after the alarm. Measured: a 15-minute average of the recirculation
    ratio over every row after the window's start read 5% where the window's was above 10%."""
    if not SQL.search(code) or re.search(r"\bNOW\b", code):
        return None
    stamps = _stamps(code)
    if not stamps or any(t >= now - SLACK for t in stamps):
        return None
    first = min(stamps).strftime("%Y-%m-%d %H:%M:%S")
    return (f"reads from {first} with no end: rows after the alarm count too; bound the "
            f"time to NOW ({now.strftime('%Y-%m-%d %H:%M:%S')}) as well")  # fmt: skip


def time_problem(code: str, now: datetime, window: int | None, moment: bool) -> str | None:
    """Why ``code`` reads another time than its check's, or None: code for a window check
    that reads no window (no time before ``now``, no range, no ``timedelta``); code for a
    moment check that reads from before the moment."""
    earlier = [t for t in _stamps(code) if t < now - SLACK]
    if window is not None and not earlier and not _RANGE.search(code) and "timedelta" not in code:
        start = (now - timedelta(seconds=window)).strftime("%Y-%m-%d %H:%M:%S")
        return (f"reads no window: the check is about the last {_range_text(window)}, "
                f"from {start} to NOW")  # fmt: skip
    if moment and earlier:
        first = min(earlier).strftime("%Y-%m-%d %H:%M:%S")
        return (
            f"reads from {first}, but the check is about the moment of the alarm (NOW): "
            "a row that covers it started at or before NOW and had not ended by then"
        )
    return None
