"""``sopgraph import`` / ``export``: convert another SOP format into sopgraph YAML and back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.output_file import write_output

# The formats (kept here so the parser is built without importing the importers).
IMPORT_KINDS = ("sopagent", "tod_nested", "tod_flat", "tod_json")
EXPORT_KINDS = ("tod_nested", "tod_flat", "tod_json")


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


def cmd_export(args: argparse.Namespace) -> int:
    from sopgraph.graphs.importers import EXPORTERS
    from sopgraph.graphs.loader import load_sop

    sop = load_sop(args.sop)
    text = EXPORTERS[args.kind](sop)
    if args.output:
        write_output(args.output, text)
        print(f"wrote {args.output}: {sop.id} as {args.kind}, {len(sop.nodes)} nodes")
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    """Register ``import`` on the top-level subparsers."""
    im = sub.add_parser("import", help="convert another SOP format into sopgraph YAML")
    im.add_argument("kind", choices=[*IMPORT_KINDS], help="the source format")
    im.add_argument("file", help="the SOP to convert")
    im.add_argument("--output", "-o", help="YAML file to write (default stdout)")
    im.set_defaults(fn=cmd_import)
    ex = sub.add_parser(
        "export", help="write an SOP in another format (TOD-ProcBench's If-Then documents)"
    )
    ex.add_argument("kind", choices=[*EXPORT_KINDS], help="the target format")
    ex.add_argument("sop", help="the SOP folder or YAML file")
    ex.add_argument("--output", "-o", help="file to write (default stdout)")
    ex.set_defaults(fn=cmd_export)
