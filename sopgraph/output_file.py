"""A command's output file (``-o``, ``--report``): written with its folder, or one error line."""

from __future__ import annotations

from pathlib import Path

from sopgraph.errors import UserError


def write_output(path: str | Path, text: str) -> Path:
    """Write a command's output file, creating its folder; a bad path is a UserError."""
    out = Path(path)
    if out.is_dir():
        raise UserError(f"-o {out}: is a folder; give a file name inside it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    except OSError as exc:
        raise UserError(f"-o {out}: cannot write it ({exc.strerror}); pick another path") from None
    return out
