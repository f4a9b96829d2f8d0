"""The scope a check's text states: the alarmed station's own equipment, or a count over the
site's stations. The CodeAct sub-agent's review and its choice of demonstrations read it.

Measured on the live held-out CodeAct runs (docs/agents.md): most wrong node verdicts measured
the right data over the wrong scope, copied from a demonstration of the other scope (the
site-wide idle spread for "the alarmed induct station was idle", one station for "at least 3
stations of the site each"). The text says which scope it wants; the host reads it and checks
the code against it, as it checks the data hints and the threshold.

Example:
    >>> check_scope("At least {n} stations of the site each have a pick error rate above 3%.")
    'spread'
    >>> check_scope("The station's camera failed more than {pct}% of its reads.")
    'station'
    >>> scope_problem("q = 'x{site=\\"BFI4\\"}'", "station", "ST03")
    'never names the alarmed station ST03 (the check is about that station)'
"""

from __future__ import annotations

import ast
import re
from typing import Literal

from sopgraph.nodes.codeact_grounding import value_assignments

Scope = Literal["station", "spread"]

# "at least {n} stations of the site each", "at least 3 induct stations", "stations of the site"
_SPREAD = re.compile(
    r"\bat least \S+ (?:\w+ )?stations\b|\bstations of the site\b|\bhow many stations\b", re.I
)
# the alarmed station itself, or a device of it: "the station's camera", "this robot",
# "the robot's suction cup", "the printer's print head"
_STATION = re.compile(
    r"\b(?:the|this|its) (?:alarmed (?:\w+ )?)?"
    r"(?:station|robot|printer|camera|suction cup|print head)(?:'s)?\b",
    re.I,
)
_ONE_SERIES = re.compile(r"(?:series_values|table_rows)\(\w+\)\[\s*-?\d+\s*\]")
_COUNTS = re.compile(r"\blen\(|\bsum\(\s*1\s+for\b")
_OTHERS = re.compile(r"\bother\b|\bwhole site\b|\bsite's\b|\bevery\b", re.I)


def check_scope(text: str) -> Scope | None:
    """``spread`` for a count over the site's stations, ``station`` for the alarmed station
    (or its robot, printer, camera), None when the text says neither or mixes them (the
    site's other robots)."""
    if _SPREAD.search(text):
        return "spread"
    if _STATION.search(text) and not _OTHERS.search(text):
        return "station"
    return None


def names_station(code: str, station: str, devices: bool = False) -> bool:
    """Whether ``code`` names ``station`` (``ST04``) or, with ``devices``, a device of it: a
    quoted id that ends in a letter and the station's number (``'BFI4-R04'``, its robot).
    Measured (alarms 157-180, level 4): code for "the station's robot is in a fault state"
    that filtered on the robot ``BFI4-R04`` was sent back as naming no station, on 6 nodes;
    its three samples were the same code each time (about 90 s a node)."""
    if re.search(rf"(?<!\w){re.escape(station)}(?!\w)", code):
        return True
    number = re.search(r"\d+$", station)
    if not devices or number is None:
        return False
    return re.search(rf"['\"][\w.-]*[A-Za-z]-?{number.group(0)}['\"]", code) is not None


def scope_problem(
    code: str, scope: Scope | None, station: str | None, devices: bool = False
) -> str | None:
    """Why ``code`` reads the wrong scope, or None: a station check must name the alarmed
    station (its queries filter on it, or look its robot up by it; with ``devices``, from
    level 5, filtering on its device's id is naming it, ``names_station``); a spread over the
    site's stations must not, and must count them (``len`` of those above the cut), not read
    one."""
    if not scope or (not station and scope == "station"):
        return None
    named = bool(station) and names_station(code, station or "", devices)
    if scope == "station" and not named:
        return f"never names the alarmed station {station} (the check is about that station)"
    if scope == "spread" and named:
        return f"filters to station {station}, but the check counts the site's stations"
    if scope == "spread" and (not _COUNTS.search(code) or _ONE_SERIES.search(code)):
        return "does not count the site's stations (one series read, or no len(...) of them)"
    return None


def _divides(expr: ast.expr) -> bool:
    """Whether an arithmetic expression divides at its top (``a / b``, ``a / b * 100``), not
    inside a call or a comprehension (a rate per station counted over stations)."""
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, ast.Div) or _divides(expr.left) or _divides(expr.right)
    return False


def share_problem(code: str) -> str | None:
    """Why the value of a count over the site's stations is not a count, or None: its last
    top-level ``value = ...`` divides (a share of the stations). Measured: "at least 4 induct
    stations of the site were each idle more than 25%" counted 4 of 4 stations and then
    answered ``value = failing / stations`` (1.0, or 100.0 with ``* 100``), copied from a
    pick-error-rate demonstration, on 3 alarms of 36 (alarms 109-132 and the 12-alarm
    sample)."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return None
    at = value_assignments(body, augmented=False)
    if not at:
        return None
    assign = body[at[-1]]  # an ``ast.Assign``: ``augmented=False``
    if _divides(assign.value):
        return (f"divides the count into a share ({ast.unparse(assign).strip()}), but the check "
                "compares how many stations: value is the count")  # fmt: skip
    return None


def _numerator(expr: ast.expr) -> ast.expr | None:
    """The count a share divides (``a`` of ``a / b`` and ``a / b * 100``), or None."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
        return expr.left
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _numerator(expr.left) or _numerator(expr.right)
    return None


def hold_count(code: str) -> tuple[str, list[str]]:
    """``code`` for a count over the site's stations with its last top-level share made the
    count it divides (``value = failing / stations * 100``: ``value = failing``), and a note
    (from level 4, in place of sampling: ``share_problem``'s samples had repeated the share).
    Unchanged when the share is no plain ``a / b`` (a division inside a call)."""
    try:
        body = ast.parse(code).body
    except SyntaxError:
        return code, []
    at = value_assignments(body, augmented=False)
    if not at:
        return code, []
    assign = body[at[-1]]
    top = _numerator(assign.value)
    if top is None or assign.lineno != assign.end_lineno:
        return code, []
    lines = code.split("\n")
    line = lines[assign.lineno - 1]
    new = f"{line[: assign.col_offset]}value = {ast.unparse(top)}"
    lines[assign.lineno - 1] = new
    return "\n".join(lines), [
        f"{ast.unparse(assign).strip()} is a share: the check counts stations, value = "
        f"{ast.unparse(top)}"
    ]
