"""``sopgraph init DIR``: a working SOP project to start from, which validates and runs at once.

The project (``sopgraph/templates/init/``): an SOP with two decision nodes and three actions, its
parameters and a region's overrides, a compiled tool per decision node registered in
``tools/manifest.json``, a small MCP data server over a SQLite file built here, labeled cases
and a pytest file that runs the SOP on them.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from sopgraph.errors import UserError

TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "init"


def init_project(target: Path) -> list[str]:
    """Write the project into ``target`` (absent or empty); returns the tools it registered.

    Raises:
        UserError: ``target`` is a file or a folder that is not empty.
    """
    if target.exists() and not target.is_dir():
        raise UserError(f"{target}: is a file; give a new folder for the project")
    if target.is_dir() and any(target.iterdir()):
        raise UserError(
            f"{target}: the folder is not empty; give a new or empty folder for the project"
        )
    existed = target.is_dir()
    try:
        return _write(target)
    except BaseException:  # no half-written project left behind
        if existed:
            for child in target.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        else:
            shutil.rmtree(target, ignore_errors=True)
        raise


def _write(target: Path) -> list[str]:
    from sopgraph.tools.registry import Registry

    shutil.copytree(
        TEMPLATE / "project",
        target,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    con = sqlite3.connect(target / "data.sqlite")
    try:
        con.executescript((target / "data.sql").read_text(encoding="utf-8"))
    finally:
        con.close()
    registry = Registry(target / "tools")
    nodes = sorted(p.stem for p in (TEMPLATE / "tools").glob("*.py"))
    for node in nodes:
        registry.add_file(node, TEMPLATE / "tools" / f"{node}.py", activate=True)
    return nodes


def cmd_init(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    nodes = init_project(target)
    d = str(target)
    example = '\'{"order_id": "A100", "region": "us", "timestamp": "2025-03-10T12:00:00Z"}\''
    print(
        f"created {d}: an SOP (sop.yaml), its parameters (params/), {len(nodes)} compiled "
        f"tools ({', '.join(nodes)}), a data server (data_server.py over data.sqlite, "
        "mcp.json), labeled cases (cases/) and a test (test_sop.py). Next:\n"
        f"  sopgraph validate {d}\n"
        f"  sopgraph run {d} --input {example}\n"
        f"  sopgraph tools list {d}\n"
        f"  cd {d} && python -m pytest -q   (pytest: pip install pytest)\n"
        f"Write a tool for a node: sopgraph tools add {d} NODE FILE (--dev while you edit it)."
    )
    return 0


def register(sub: Any) -> None:
    """Register ``init`` on the top-level subparsers."""
    p = sub.add_parser(
        "init",
        help="create a working SOP project (SOP, parameters, a tool, a data server, cases, "
        "a test) to start from",
    )
    p.add_argument("dir", help="the new project's folder (absent or empty)")
    p.set_defaults(fn=cmd_init)
