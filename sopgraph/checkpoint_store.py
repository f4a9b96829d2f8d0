"""The ``--checkpoint`` option: refuse a path that cannot be a store, word a store that fails."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from sopgraph.errors import UserError


def check_checkpoint(spec: str | None, *, must_exist: bool = False) -> None:
    """Refuse a SQLite checkpoint path that cannot be one, before servers start.

    ``must_exist`` (resume): opening a missing file would create an empty store and report
    the thread as unknown, hiding that the path is wrong.
    """
    if spec == "memory" or (spec or "").startswith(("postgres://", "postgresql://")):
        return
    if spec is None:
        from sopgraph.runtime.runner import default_checkpoint_path

        path = default_checkpoint_path()
    else:
        path = Path(spec)
    if path.is_dir():
        raise UserError(f"--checkpoint {path}: is a folder; give a SQLite file path")
    if must_exist and not path.exists():
        raise UserError(
            f"no checkpoint store at {path}; pass the --checkpoint the run used"
            " (runs without one use $SOPGRAPH_HOME/checkpoints.sqlite; with no SOPGRAPH_HOME,"
            " the nearest .sopgraph/ in this folder or a parent)"
        )


def store_error(exc: BaseException, args: argparse.Namespace) -> str | None:
    """The one-line message for a checkpoint store that cannot be opened, else None."""
    if not hasattr(args, "checkpoint"):
        return None
    psycopg = sys.modules.get("psycopg")
    is_pg = psycopg is not None and isinstance(exc, psycopg.OperationalError)
    is_sqlite = isinstance(exc, sqlite3.OperationalError) and "unable to open" in str(exc)
    if not (is_pg or is_sqlite):
        return None
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return (
        f"error: --checkpoint {args.checkpoint or '(default)'}: cannot open the checkpoint store"
        f" ({first}); give a writable SQLite file or a reachable postgres:// URL"
    )
