"""The run input on the command line: reading ``--input`` and ``run SOP --help``'s input contract."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Inline JSON holds one of these; a file path rarely does.
_JSON_MARKS = set('{}[]":,')


class InputSpecError(ValueError):
    """An ``--input`` that cannot be read; ``str`` is one line."""


def _describe(value: Any) -> str:
    if value is None:
        return "JSON null"
    kinds = {bool: "boolean", int: "number", float: "number", str: "string", list: "list"}
    return f"a JSON {kinds.get(type(value), type(value).__name__)}"


def read_input(spec: str) -> dict[str, Any]:
    """``--input``: a JSON file, ``-`` for stdin, or inline JSON, as a JSON object."""
    where = "stdin" if spec == "-" else None
    if spec == "-":
        text = sys.stdin.read()
    elif Path(spec).is_file():
        try:
            text = Path(spec).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputSpecError(
                f"--input {spec}: cannot read it ({exc}); pass a JSON file"
            ) from None
        where = "the file"
    elif Path(spec).is_dir():
        raise InputSpecError(f"--input {spec}: is a folder; pass a JSON file, '-' or inline JSON")
    else:
        text = spec
        try:
            json.loads(text)
        except json.JSONDecodeError:
            if not _JSON_MARKS & set(spec):
                raise InputSpecError(
                    f"--input {spec}: no such file; pass a JSON file, '-' for stdin, or an "
                    "inline JSON object"
                ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        src = f" ({where})" if where else ""
        raise InputSpecError(
            f"--input {_short(spec)}{src}: not JSON ({exc.msg} at line {exc.lineno} "
            f'column {exc.colno}); pass a JSON object such as \'{{"type": "..."}}\''
        ) from None
    if not isinstance(data, dict):
        raise InputSpecError(
            f"--input {_short(spec)}: {_describe(data)}, not a JSON object; pass an object such "
            'as \'{"type": "..."}\''
        )
    return data


def _short(spec: str) -> str:
    return spec if len(spec) <= 40 else spec[:37] + "..."


class RunHelp(argparse.Action):
    """``-h``/``--help`` for ``run``: after the options, the input contract of the SOP given
    before it (``sopgraph run SOP --help``)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: Any):
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.print_help()
        sop_path = getattr(namespace, "sop", None)
        if sop_path:
            from sopgraph.graphs.input_schema import describe_input
            from sopgraph.graphs.loader import SopError, load_sop

            try:
                print("\n" + "\n".join(describe_input(load_sop(sop_path))))
            except SopError as exc:
                print(f"\n(cannot show the input of {sop_path}: {str(exc).splitlines()[0]})")
        parser.exit()


RUN_EPILOG = """\
The input is a JSON object. 'type' picks the entry (optional when the SOP has one); the
fields the SOP declares in its 'input' section are checked before any node runs: a missing
or mistyped field is one error line naming it, exit 2. `sopgraph run SOP --help` lists them
with an example input.

exit codes: 0 done (or paused at a gated action), 1 unresolved (a node could not be
decided), 2 a mistake in the input, 3 unmatched (a verdict matched none of a node's
'next.when' branches), 4 bounded (a loop ran out of 'max_visits' without taking its exit)."""
