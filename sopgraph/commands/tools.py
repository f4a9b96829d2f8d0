"""``sopgraph tools``: list, promote, revert, remove or rehash compiled tool versions.

``tools make`` has its own parser (several nodes, the make options): see ``toolmaker.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.errors import UserError


def cmd_tools(args: argparse.Namespace) -> int:
    if args.action in ("promote", "revert", "remove") and not args.node:
        raise UserError(f"sopgraph tools {args.action}: give the node id")
    if args.action == "promote" and args.version is None:
        raise UserError("sopgraph tools promote: give the version number to promote")
    from sopgraph.tools import commands

    sop_dir = Path(args.sop)
    if not sop_dir.exists():
        raise UserError(f"{sop_dir}: no such SOP file or folder; check the path")
    if sop_dir.is_dir() and not (sop_dir / "sop.yaml").exists():
        raise UserError(f"{sop_dir}: no sop.yaml in this folder; give an SOP file or its folder")
    sop_dir = sop_dir if sop_dir.is_dir() else sop_dir.parent
    takes = {"list": 0, "promote": 2, "revert": 1, "remove": 1, "rehash": 1}[args.action]
    given = [a for a in (args.node, args.version) if a is not None]
    if len(given) > takes:
        usage = {"list": "SOP", "revert": "SOP NODE", "remove": "SOP NODE", "rehash": "SOP [NODE]"}
        raise UserError(
            f"sopgraph tools {args.action}: too many arguments ({' '.join(map(str, given))});"
            f" usage: sopgraph tools {args.action} {usage[args.action]}"
        )
    if args.action == "list":
        print(commands.tools_list(sop_dir, as_json=args.json))
    elif args.action == "promote":
        print(commands.tools_promote(sop_dir, args.node, args.version))
    elif args.action == "revert":
        print(commands.tools_revert(sop_dir, args.node))
    elif args.action == "remove":
        print(commands.tools_remove(sop_dir, args.node))
    elif args.action == "rehash":
        print(commands.tools_rehash(sop_dir, node=args.node))
    return 0


def register(sub: Any) -> None:
    """Register ``tools`` on the top-level subparsers."""
    t = sub.add_parser(
        "tools", help="list, promote, revert, remove or rehash compiled tool versions"
    )
    t.add_argument(
        "action",
        choices=["list", "promote", "revert", "remove", "rehash", "make"],
        help="rehash: accept edited tool files by recording their new sha256; "
        "make: see `sopgraph tools make --help`",
    )
    t.add_argument("sop", help="SOP file or folder")
    t.add_argument("node", nargs="?", help="node id (promote, revert, remove; rehash: optional)")
    t.add_argument("version", nargs="?", type=int, help="version number (promote)")
    t.add_argument("--json", action="store_true", help="list: print the registry as JSON")
    t.set_defaults(fn=cmd_tools)
