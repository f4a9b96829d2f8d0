"""``sopgraph runs list|show``: browse the runs a checkpoint store holds, finished or paused."""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError

_STORE_HELP = (
    "the checkpoint store the runs used, a SQLite file or a postgres:// URL (default $SOPGRAPH_HOME/checkpoints.sqlite; "
    "without SOPGRAPH_HOME the nearest .sopgraph/ in this folder or a parent)"
)


def _store(spec: str | None) -> Path | str:
    if spec == "memory":
        raise UserError("--checkpoint memory: runs in memory end with their process; none to list")
    if (spec or "").startswith(("postgres://", "postgresql://")):
        return spec  # type: ignore[return-value]
    if spec is not None:
        return Path(spec).resolve()
    from sopgraph.graphs.home import home_dir

    return home_dir() / "checkpoints.sqlite"


def _when(iso: str | None) -> str:
    """An ISO time as local ``YYYY-MM-DD HH:MM:SS``."""
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def cmd_runs_list(args: argparse.Namespace) -> int:
    from sopgraph.graphs.untrusted_text import json_text, printable
    from sopgraph.runtime.runs import RunsError, list_runs, store_name

    store = _store(args.checkpoint)
    if isinstance(store, Path) and not store.exists():
        print("[]" if args.json else f"no runs yet: {store} does not exist")
        return 0
    try:
        runs = list_runs(store, sop=args.sop, limit=args.limit)
    except RunsError as exc:
        raise UserError(str(exc)) from None
    if args.json:
        print(json_text([r.model_dump() for r in runs]))
        return 0
    which = f" of SOP {args.sop}" if args.sop else ""
    print(
        f"runs{which} in {store_name(store)}, newest first ({len(runs)} shown, --limit {args.limit}):"
    )
    if not runs:
        return 0
    rows = [("thread", "sop", "status", "started", "steps", "last step", "final")]
    rows += [
        (r.thread_id, r.sop_id or "?", r.status, _when(r.started), str(r.steps),
         r.last_step or "-", r.final)
        for r in runs
    ]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=False)]
        # node ids, reasons and SOP ids come from files and tools: nothing may act on the terminal
        print(printable("  ".join([*cells, row[-1]])))
    return 0


def cmd_runs_show(args: argparse.Namespace) -> int:
    from sopgraph.graphs.untrusted_text import json_text, printable
    from sopgraph.report import format_run
    from sopgraph.runtime.runs import RunsError, read_run

    store = _store(args.checkpoint)
    try:
        run = read_run(store, args.thread_id)
    except RunsError as exc:
        raise UserError(f"{exc}{_where(args)}") from None
    if args.json:
        print(json_text(run))
        return 0
    result = run.result
    # format_run escapes what tools and servers wrote line by line; the lines added here too
    head = (
        format_run(result, run.sop_path)
        if run.status != "stopped"
        else printable(f"run {run.thread_id} ({run.sop_id or '?'}): stopped")
    )
    lines: list[str] = []
    lines.append(f"  status: {run.status}" + (f" ({run.final})" if run.final else ""))
    lines.append("  path: " + (" → ".join(result.path) or "-"))
    lines.append(f"  started {_when(run.started)}, last checkpoint {_when(run.updated)}")
    if run.sop_path:
        lines.append(f"  sop: {run.sop_path}")
    if run.status == "stopped":
        sop = run.sop_path or "<sop>"
        lines.append(f"  continue it with `sopgraph run {sop} --thread {run.thread_id}`")
    for a in run.answers:  # every answer to a gated action, the refused and duplicate ones too
        why = f": {a['detail']}" if a["detail"] and a["outcome"] != "accepted" else ""
        lines.append(
            f"  answer {a['at']} {a['decision']} by {a['by']} for {a['node'] or '?'}: "
            f"{a['outcome']}{why}"
        )
    print("\n".join([head, *(printable(line) for line in lines)]))
    return 0


def _where(args: argparse.Namespace) -> str:
    if args.checkpoint is None:
        return " (set SOPGRAPH_HOME, or pass --checkpoint, to read another store)"
    return ""


def register(sub: Any) -> None:
    """Register ``runs list`` and ``runs show`` on the top-level subparsers."""
    r = sub.add_parser("runs", help="list the runs in the checkpoint store; show one's trail")
    rsub = r.add_subparsers(dest="runs_command", required=True)
    ls = rsub.add_parser(
        "list", help="one line a run: thread, SOP, status, started, last step, final action"
    )
    ls.add_argument("--sop", help="only the runs of this SOP (its id, or its file or folder)")
    ls.add_argument(
        "--limit", type=positive_int, default=20, help="at most this many, newest first (20)"
    )
    ls.add_argument("--checkpoint", help=_STORE_HELP)
    ls.add_argument("--json", action="store_true", help="print the runs as a JSON list")
    ls.set_defaults(fn=cmd_runs_list)

    sh = rsub.add_parser(
        "show", help="one run: each node's verdict, observed value and threshold, the path, "
        "the approvals waiting"
    )  # fmt: skip
    sh.add_argument("thread_id", help="the run's thread id (as `runs list` shows it)")
    sh.add_argument("--checkpoint", help=_STORE_HELP)
    sh.add_argument("--json", action="store_true", help="print the run as JSON")
    sh.set_defaults(fn=cmd_runs_show)
