"""``sopgraph sandbox selftest``: run the adversarial corpus against the code sandbox."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_sandbox(args: argparse.Namespace) -> int:
    from sopgraph.nodes.sandbox.selftest import main as selftest_main

    return selftest_main()


def register(sub: Any) -> None:
    """Register ``sandbox`` on the top-level subparsers."""
    sb = sub.add_parser("sandbox", help="sandbox for generated code")
    sb.add_argument("action", choices=["selftest"], help="selftest: run the adversarial corpus")
    sb.set_defaults(fn=cmd_sandbox)
