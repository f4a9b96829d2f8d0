"""The CLI's argparse pieces: the parser with one-line errors and the argument types."""

from __future__ import annotations

import argparse
from typing import NoReturn


class CliParser(argparse.ArgumentParser):
    """argparse with the CLI's one-line ``error:`` format (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}; see `{self.prog} --help`\n")


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The subparsers of a command group, to register a subcommand on it from another module."""
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1 to 65535)")
    return port


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (0 would mean all, or wait forever)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not at least 1")
    return n


def add_trace(parser: argparse.ArgumentParser, what: str) -> None:
    """``--trace``: the tracing a run command can turn on."""
    parser.add_argument(
        "--trace",
        choices=["console", "otlp"],
        help=f"trace {what}: a tree on stderr, or OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
