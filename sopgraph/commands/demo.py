"""``sopgraph demo``: the default job, triage recent alarms of the simulated dock."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError


def cmd_demo(args: argparse.Namespace) -> int:
    from sopgraph.demo import main

    if args.report and Path(args.report).is_dir():  # found now, not after the whole batch
        raise UserError(f"--report {args.report}: is a folder; give an .html file path inside it")
    return main(n=args.alarms, report=Path(args.report) if args.report else None)


def register(sub: Any) -> None:
    """Register ``demo`` on the top-level subparsers."""
    d = sub.add_parser("demo", help="the default job: triage recent alarms of the simulated dock")
    d.add_argument(
        "--alarms", type=positive_int, default=40, help="how many recent alarms (default 40)"
    )
    d.add_argument(
        "--report",
        help="HTML report path (default $SOPGRAPH_HOME/reports/demo.html, home .sopgraph/)",
    )
    d.set_defaults(fn=cmd_demo)
