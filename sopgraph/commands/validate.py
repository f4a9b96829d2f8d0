"""``sopgraph validate``: check an SOP file and print its size."""

from __future__ import annotations

import argparse
from typing import Any

from sopgraph.graphs.loader import SopError, load_sop
from sopgraph.graphs.problems import MAX_SHOWN_PROBLEMS
from sopgraph.graphs.untrusted_text import json_text


def _print_json(data: Any) -> None:
    print(json_text(data, default=str))


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        sop = load_sop(args.path)
    except SopError as exc:
        if args.json:  # stdout stays parseable; the error lines still go to stderr
            shown = exc.problems[:MAX_SHOWN_PROBLEMS]  # as on stderr; the count stays exact
            _print_json(
                {"ok": False, "error_count": len(exc.problems), "errors": [vars(p) for p in shown]}
            )
        raise  # printed as SopError's lines: at most MAX_SHOWN_PROBLEMS and a count of the rest
    decisions, actions = len(sop.decision_nodes), len(sop.action_nodes)
    if args.json:
        _print_json(
            {
                "ok": True,
                "id": sop.id,
                "version": sop.version,
                "decision_nodes": decisions,
                "action_nodes": actions,
                "edges": sop.edge_count(),
            }
        )
    else:
        print(
            f"ok: {sop.id} v{sop.version}: {decisions} decision nodes, "
            f"{actions} action nodes, {sop.edge_count()} edges"
        )
    return 0


def register(sub: Any) -> None:
    """Register ``validate`` on the top-level subparsers."""
    v = sub.add_parser("validate", help="check an SOP file and print its size")
    v.add_argument("path", help="SOP file or its folder")
    v.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    v.set_defaults(fn=cmd_validate)
