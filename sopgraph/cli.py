"""The ``sopgraph`` command line: one parser that every command group registers on, and ``main``.

The commands live in ``sopgraph/commands/``, one module per group; this module only assembles
them and turns what a command raises into an exit code. It is a thin layer over the library
functions the tests call.
"""

from __future__ import annotations

import argparse
import sys

from sopgraph.arguments import CliParser
from sopgraph.checkpoint_store import store_error
from sopgraph.commands import (
    audit,
    bench,
    demo,
    draft,
    graph,
    init,
    mcp,
    model,
    monitor,
    run,
    runs,
    sandbox,
    schema,
    shadow,
    sop_import,
    sopbench,
    toolmaker,
    tools,
    ui,
    validate,
    world,
)
from sopgraph.commands import eval as eval_group  # `eval` would hide the builtin
from sopgraph.commands import queue as queue_group  # `queue` would hide the stdlib module
from sopgraph.errors import print_user_error, user_errors
from sopgraph.extras import missing_extra

# What ``sopgraph --help`` shows; the module docstring above is for developers.
DESCRIPTION = (
    "Compile written SOPs into LangGraph state machines: validate, draw, run and resume them, "
    "manage their compiled tools, and measure them. Exit codes: 0 success, 1 a run ended with "
    "unresolved nodes, 2 a mistake in the input, 3 a verdict matched no branch, 4 a loop ran "
    "out of visits."
)

# In the order `sopgraph --help` lists them. toolmaker and sopbench add a subcommand to a
# group registered before them (`eval toolmaker`, `bench sopbench`).
COMMAND_GROUPS = (
    init, validate, draft, run, runs, queue_group, ui, graph, sop_import, tools, sandbox, mcp,
    demo, eval_group, bench, world, monitor, shadow, model, schema, toolmaker, sopbench, audit,
)  # fmt: skip


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sopgraph")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def _command(args: argparse.Namespace, argv: list[str]) -> str:
    """``sopgraph`` and the command group that runs, for messages."""
    return f"sopgraph {getattr(args, 'command', None) or ' '.join(argv[:2])}"


def build_parser() -> argparse.ArgumentParser:
    """The ``sopgraph`` parser with every command group's subcommands."""
    p = CliParser(prog="sopgraph", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"sopgraph {_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one ``sopgraph`` command; a user's mistake is one ``error:`` line and exit 2."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["tools", "make"]:  # its own parser: several nodes and the make options
        args = argparse.Namespace(fn=lambda _: toolmaker.cmd_tools_make(argv[2:]))
    elif argv[:2] == ["tools", "optimize-maker"]:
        args = argparse.Namespace(fn=lambda _: toolmaker.cmd_tools_optimize_maker(argv[2:]))
    else:
        args = build_parser().parse_args(argv)
    try:
        try:
            return args.fn(args)
        except Exception as exc:
            message = store_error(exc, args) or missing_extra(exc, _command(args, argv))
            if message is None:
                raise
            print(message, file=sys.stderr)
            return 2
    except user_errors() as exc:
        print_user_error(exc)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sopgraph … | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
