"""Plain-text rendering for the terminal: one run in full, or a batch as one line per alarm."""

from __future__ import annotations

import shlex
from typing import Any

from rich.table import Table
from rich.text import Text

from sopgraph.graphs.untrusted_text import printable

# RunResult fields every run has; any other field a run carries (a status flag, a count) is
# shown next to its status, so a new kind of outcome is visible without a change here.
_RESULT_FIELDS = {"thread_id", "sop_id", "status", "input", "verdicts", "path", "actions",
                  "trail", "unresolved", "interrupts", "resumed", "stored", "tokens"}  # fmt: skip


def _short(value: Any, width: int = 60) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def resume_hint(sop: str | None, thread_id: str, interrupts: list[dict[str, Any]]) -> str:
    """The command that answers a paused run's first pending gated action, naming it, with the
    SOP's path as given (``<sop>`` unknown)."""
    where = shlex.quote(str(sop)) if sop else "<sop>"
    gate = f" --interrupt {shlex.quote(str(interrupts[0].get('id')))}" if interrupts else ""
    return (
        f"sopgraph resume {where} --thread {shlex.quote(thread_id)}{gate} --decision approve|reject"
    )


def decided_by(action: dict[str, Any]) -> str:
    """Who let a gated action go (or stopped it), in words: ``not gated (no approval needed)``,
    ``approved by cli user ann``, ``rejected by the reject policy``."""
    how = str(action.get("by") or "")
    if how == "not gated":
        return "not gated (no approval needed)"
    verb = "approved" if action.get("approved", True) else "rejected"
    who = action.get("approver")
    if how.startswith("policy:"):
        return f"{verb} by the {how.removeprefix('policy:')} policy" + (f" ({who})" if who else "")
    if how == "human":
        return f"{verb} by {who or 'a person'}"
    return f"{verb} by {how}" if how else verb


def format_run(result: Any, sop: str | None = None) -> str:
    """A run as lines: status, each step with its verdict, actions, interrupts and open nodes;
    ``sop``, the SOP's path as the user gave it, goes into the resume hint."""
    lines = [
        f"run {result.thread_id} ({result.sop_id}): {result.status}"
        + (" (resumed)" if result.resumed else "")
        + (
            " (stored result: this thread ran before; use a new --thread to run again)"
            if getattr(result, "stored", False)
            else ""
        )
    ]
    for step in result.trail:
        status = step.get("status")
        verdict = step.get("verdict") or ""
        observed = step.get("observed")
        extra = f" observed={_short(observed)}" if observed is not None else ""
        if step.get("threshold") is not None:
            extra += f" threshold={step['threshold']}"
        via = step.get("executor") or step.get("approval") or ""
        err = f"  ({step['error']})" if step.get("error") else ""
        lines.append(f"  {step['node']:<40} {status:<10} {verdict:<8} {via}{extra}{err}")
    for act in result.actions:
        lines.append(f"  action {act['node']}: {act['status']}, {decided_by(act)}")
    for intr in result.interrupts:
        lines.append(
            f"  waiting: {intr.get('node')} needs approval; resume with "
            f"`{resume_hint(sop, result.thread_id, [intr])}`"
        )
    for node, why in result.unresolved.items():
        lines.append(f"  unresolved: {node}: {why}")
    tokens = getattr(result, "tokens", None) or {}
    if tokens.get("total_tokens"):
        lines.append(f"  LLM tokens: {tokens['input_tokens']} in, {tokens['output_tokens']} out")
    # errors, observations and approvers come from tools, servers, models and clients: no
    # character of theirs may act on the terminal or start a line of its own
    return "\n".join(printable(line) for line in lines)


def status_of(result: Any) -> str:
    """The run's status, followed by any further outcome field the result carries."""
    parts = [str(result.status)]
    data = result.model_dump() if hasattr(result, "model_dump") else {}
    for key, value in data.items():
        if key in _RESULT_FIELDS or value in (None, False, "", [], {}):
            continue
        parts.append(key if value is True else f"{key}: {_short(value, 40)}")
    return ", ".join(parts)


def fit(items: list[str], width: int, sep: str = ", ") -> str:
    """As many whole ``items`` as fit in ``width`` characters, then ``+N`` for the rest.

    Identifiers are never cut; only a first item wider than ``width`` itself is shortened.

    Example:
        >>> fit(["rc_robot_fault", "rc_sorter_jam", "rc_chutes_full"], 32)
        'rc_robot_fault, rc_sorter_jam +1'
    """
    if not items:
        return "-"
    out = ""
    for i, item in enumerate(items):
        joined = item if not out else out + sep + item
        left = len(items) - i - 1
        if len(joined) + (len(f" +{left}") if left else 0) <= width:
            out = joined
            continue
        if out:
            return f"{out} +{len(items) - i}"
        more = f" +{left}" if left else ""  # the first item alone is too wide: shorten it
        return _short(item, max(1, width - len(more))) + more
    return out


# Columns of the alarm table, each (header, kind): "fixed" columns take their natural width,
# "list" columns share what is left; "type" and then "path taken" go first on a narrow terminal.
_COLUMNS = (("alarm", "fixed"), ("site", "fixed"), ("type", "type"), ("status", "fixed"),
            ("root causes", "list"), ("actions", "list"), ("path taken", "path"),
            ("ms", "fixed"), ("truth", "fixed"))  # fmt: skip
_MIN_LIST = 14  # narrower than this, a list column shows little more than "+N"


def alarm_table(rows: list[dict[str, Any]], width: int) -> Table:
    """One line per alarm, fitted to ``width`` terminal columns.

    ``rows``: dicts with ``alarm``, ``site``, ``type``, ``status``, ``ms`` and ``truth``
    (strings), and ``root causes``, ``actions``, ``path taken`` (lists of node ids). Lists keep
    whole identifiers and end in ``+N`` when the rest does not fit; the ``type`` and ``path
    taken`` columns are left out when the terminal is too narrow for them.
    """
    natural = {
        h: max([len(h)] + [len(", ".join(r[h]) if isinstance(r[h], list) else r[h]) for r in rows])
        for h, _ in _COLUMNS
    }
    natural["path taken"] = max(
        [len("path taken")] + [len(" → ".join(r["path taken"])) for r in rows]
    )
    # each column is padded by one space on either side, but the table's outer edges are not
    used = sum(natural[h] + 2 for h, k in _COLUMNS if k == "fixed") - 2
    room = width - used
    lists = [h for h, k in _COLUMNS if k == "list"]
    shown = {h for h, k in _COLUMNS if k in ("fixed", "list")}
    if all(r["status"] == "done" for r in rows):  # nothing to tell apart: leave room for lists
        shown.discard("status")
        room += natural["status"] + 2
    if room - (natural["type"] + 2) >= len(lists) * (_MIN_LIST + 2):
        shown.add("type")
        room -= natural["type"] + 2
    list_need = sum(min(natural[h], 40) + 2 for h in lists)
    if room - list_need >= 30 + 2:  # the path only when the lists fit and it gets 30 or more
        shown.add("path taken")
        lists.append("path taken")
    widths = _widths(room - 2 * len(lists), rows, {h: natural[h] for h in lists})
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold underline")
    columns = [h for h, _ in _COLUMNS if h in shown]
    for h in columns:
        table.add_column(h, no_wrap=True, overflow="ellipsis", width=widths.get(h, natural[h]))
    for r in rows:
        cells = []
        for h in columns:
            if h in widths:
                cells.append(fit(r[h], widths[h], " → " if h == "path taken" else ", "))
            elif h == "truth":
                cells.append(Text(r[h], style={"✔": "green", "✘": "red"}.get(r[h], "")))
            else:
                cells.append(r[h])
        table.add_row(*cells)
    return table


def _widths(room: int, rows: list[dict[str, Any]], natural: dict[str, int]) -> dict[str, int]:
    """List column widths: first room for each column's widest first item (and its ``+N``),
    so identifiers stay whole where they can, then the rest shared out."""
    first = {
        h: min(natural[h], max(len(r[h][0]) + (3 if len(r[h]) > 1 else 0) if r[h] else 1
                               for r in rows))
        for h in natural
    }  # fmt: skip
    if sum(first.values()) > room:
        return _share(room, natural)
    extra = _share(room - sum(first.values()), {h: natural[h] - first[h] for h in natural})
    return {h: first[h] + extra.get(h, 0) for h in natural}


def _share(room: int, need: dict[str, int]) -> dict[str, int]:
    """Split ``room`` among columns: none gets more than it needs, the rest evenly."""
    out: dict[str, int] = {}
    left = dict(need)
    while left:
        each = max(1, room // len(left))
        small = {h: n for h, n in left.items() if n <= each}
        if not small:
            for h in left:
                out[h] = max(1, each)
            break
        for h, n in small.items():
            out[h] = n
            room -= n
            del left[h]
    return out
