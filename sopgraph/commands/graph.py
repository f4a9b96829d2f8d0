"""``sopgraph graph``: draw an SOP as Mermaid or PNG."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sopgraph.errors import UserError
from sopgraph.graphs.loader import load_sop
from sopgraph.output_file import write_output


def cmd_graph(args: argparse.Namespace) -> int:
    from sopgraph.graphs import drawing

    sop = load_sop(args.path)
    if args.format == "mermaid":
        text = drawing.to_mermaid(sop)
        if args.output:
            print(f"wrote {write_output(args.output, text)}")
        else:
            print(text)
        return 0
    out = Path(args.output or f"{sop.id}.png")
    if out.is_dir():
        raise UserError(f"-o {out}: is a folder; give a file name inside it")
    drawing.render_png(sop, out)
    print(f"wrote {out}")
    return 0


def register(sub: Any) -> None:
    """Register ``graph`` on the top-level subparsers."""
    g = sub.add_parser("graph", help="draw an SOP as Mermaid or PNG")
    g.add_argument("path", help="SOP file or its folder")
    g.add_argument(
        "--format", choices=["mermaid", "png"], default="mermaid", help="default mermaid"
    )
    g.add_argument(
        "--output", "-o", help="file to write (Mermaid: default stdout; PNG: default <sop id>.png)"
    )
    g.set_defaults(fn=cmd_graph)
