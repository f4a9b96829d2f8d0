"""``sopgraph tools``: list, add, promote, revert, remove or rehash compiled tool versions.

``tools make`` has its own parser (several nodes, the make options): see ``toolmaker.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.errors import UserError
from sopgraph.graphs.untrusted_text import json_text


def cmd_tools(args: argparse.Namespace) -> int:
    if args.action == "add" and (not args.node or args.version is None):
        raise UserError(
            "sopgraph tools add: give the node and the tool file; "
            "usage: sopgraph tools add SOP NODE FILE [--dev] [--activate]"
        )
    if args.action in ("promote", "revert", "remove") and not args.node:
        raise UserError(f"sopgraph tools {args.action}: give the node id")
    if args.action == "promote" and args.version is None:
        raise UserError("sopgraph tools promote: give the version number to promote")
    if args.action == "promote":
        try:
            args.version = int(args.version.removeprefix("v"))
        except ValueError:
            raise UserError(
                f"sopgraph tools promote: '{args.version}' is not a version number; "
                "give one `sopgraph tools list` shows, e.g. 2"
            ) from None
    if (args.dev or args.activate) and args.action != "add":
        raise UserError(f"sopgraph tools {args.action}: --dev and --activate are options of add")
    if args.in_process and args.action != "promote":
        raise UserError(f"sopgraph tools {args.action}: --in-process is an option of promote")
    from sopgraph.tools import commands

    sop_dir = Path(args.sop)
    if not sop_dir.exists():
        raise UserError(f"{sop_dir}: no such SOP file or folder; check the path")
    if sop_dir.is_dir() and not (sop_dir / "sop.yaml").exists():
        raise UserError(f"{sop_dir}: no sop.yaml in this folder; give an SOP file or its folder")
    sop_dir = sop_dir if sop_dir.is_dir() else sop_dir.parent
    if args.action == "convert-check":
        return _convert_check(sop_dir, args)
    takes = {"list": 0, "add": 2, "promote": 2, "revert": 1, "remove": 1, "rehash": 1}
    given = [a for a in (args.node, args.version) if a is not None]
    if len(given) > takes[args.action]:
        usage = {"list": "SOP", "revert": "SOP NODE", "remove": "SOP NODE", "rehash": "SOP [NODE]"}
        raise UserError(
            f"sopgraph tools {args.action}: too many arguments ({' '.join(map(str, given))});"
            f" usage: sopgraph tools {args.action} {usage[args.action]}"
        )
    if args.action == "list":
        print(commands.tools_list(sop_dir, as_json=args.json))
    elif args.action == "add":
        print(commands.tools_add(sop_dir, args.node, Path(args.version), args.dev, args.activate))
    elif args.action == "promote":
        print(commands.tools_promote(sop_dir, args.node, args.version, args.in_process))
    elif args.action == "revert":
        print(commands.tools_revert(sop_dir, args.node))
    elif args.action == "remove":
        print(commands.tools_remove(sop_dir, args.node))
    elif args.action == "rehash":
        print(commands.tools_rehash(sop_dir, node=args.node))
    return 0


def _convert_check(sop_dir: Path, args: argparse.Namespace) -> int:
    """Which active tools are specs, each checked verdict-identical to the version it replaced."""
    import asyncio

    from sopgraph.evals.spec_check import convert_check, copy_groups, render
    from sopgraph.progress import progress_bar

    if args.cases:
        cases = Path(args.cases)
    else:
        from sopgraph.triage_world import world

        cases = world().cases
    if not cases.is_dir():
        raise UserError(f"--cases {cases}: no such folder of labeled cases (<node>.jsonl)")
    nodes = [args.node] if args.node else None
    with progress_bar(not args.json) as bar:
        task = bar.add_task("comparing versions on every labeled case", total=None)
        results = asyncio.run(
            convert_check(sop_dir, cases, nodes, on_node=lambda _: bar.advance(task))
        )
    if args.json:
        print(json_text([r.model_dump() | {"ok": r.ok} for r in results]))
    else:
        print(render(results))
    copied = copy_groups(results)[1] if not nodes else []  # a group needs every node
    return 0 if all(r.ok for r in results if r.spec) and not copied else 1


def register(sub: Any) -> None:
    """Register ``tools`` on the top-level subparsers."""
    t = sub.add_parser(
        "tools", help="list, add, promote, revert, remove or rehash compiled tool versions"
    )
    t.add_argument(
        "action",
        choices=[
            "list",
            "add",
            "promote",
            "revert",
            "remove",
            "rehash",
            "make",
            "optimize-maker",
            "convert-check",
        ],
        help="add: register a hand-written tool file as the node's next version (checked "
        "against the contract; active when the node has none); "
        "rehash: accept edited tool files by recording their new sha256; "
        "make: see `sopgraph tools make --help`; optimize-maker: compile the tool-maker with "
        "DSPy (see `sopgraph tools optimize-maker --help`); convert-check: which active tools are specs, "
        "each compared with the version it replaced on every labeled case",
    )
    t.add_argument("sop", help="SOP file or folder")
    t.add_argument(
        "node", nargs="?", help="node id (add, promote, revert, remove; rehash: optional)"
    )
    t.add_argument(
        "version", nargs="?", metavar="VERSION|FILE", help="version number (promote), file (add)"
    )
    t.add_argument(
        "--dev",
        action="store_true",
        help="add: a development version, active at once, whose file runs as it is at each run "
        "(no checksum) while you write it; never promoted: add the finished file again",
    )
    t.add_argument(
        "--activate", action="store_true", help="add: make the new version active at once"
    )
    t.add_argument(
        "--in-process", action="store_true",
        help="promote: run a model-written version in sopgraph's own process, unsandboxed, at "
        "every run (by default it runs only in the sandbox); only once you have read its code",
    )  # fmt: skip
    t.add_argument("--json", action="store_true", help="list, convert-check: print JSON")
    t.add_argument(
        "--cases", help="convert-check: folder of labeled cases (default: the triage world's)"
    )
    t.set_defaults(fn=cmd_tools)
