"""``sopgraph import``: convert another SOP format into sopgraph YAML."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.output_file import write_output


def cmd_import(args: argparse.Namespace) -> int:
    from sopgraph.graphs.importers import import_file
    from sopgraph.graphs.importers.sopagent import dump_sop_yaml

    sop = import_file(args.kind, Path(args.file))
    text = dump_sop_yaml(sop)
    if args.output:
        write_output(args.output, text)
        print(
            f"wrote {args.output}: {sop.id}: {len(sop.decision_nodes)} decision nodes, "
            f"{len(sop.action_nodes)} action nodes"
        )
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    """Register ``import`` on the top-level subparsers."""
    im = sub.add_parser("import", help="convert another SOP format into sopgraph YAML")
    im.add_argument("kind", choices=["sopagent"], help="the source format")
    im.add_argument("file", help="the SOP to convert")
    im.add_argument("--output", "-o", help="YAML file to write (default stdout)")
    im.set_defaults(fn=cmd_import)
