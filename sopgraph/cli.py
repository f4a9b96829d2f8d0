"""The ``sopgraph`` command line: a thin layer over the library functions the tests call."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any, NoReturn

from sopgraph.graphs.loader import SopError, load_sop

# What ``sopgraph --help`` shows; the module docstring above is for developers.
DESCRIPTION = (
    "Compile written SOPs into LangGraph state machines: validate, draw, run and resume them, "
    "manage their compiled tools, and measure them. Exit codes: 0 success, 1 a run ended with "
    "unresolved nodes, 2 a mistake in the input, 3 a verdict matched no branch, 4 a loop ran "
    "out of visits."
)


class UserError(Exception):
    """A mistake the user can fix; printed as one ``error:`` line, exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's one-line ``error:`` format (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}; see `{self.prog} --help`\n")


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1 to 65535)")
    return port


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


def check_checkpoint(spec: str | None, *, must_exist: bool = False) -> None:
    """Refuse a SQLite checkpoint path that cannot be one, before servers start.

    ``must_exist`` (resume): opening a missing file would create an empty store and report
    the thread as unknown, hiding that the path is wrong.
    """
    if spec == "memory" or (spec or "").startswith(("postgres://", "postgresql://")):
        return
    if spec is None:
        from sopgraph.graphs.runner import default_checkpoint_path

        path = default_checkpoint_path()
    else:
        path = Path(spec)
    if path.is_dir():
        raise UserError(f"--checkpoint {path}: is a folder; give a SQLite file path")
    if must_exist and not path.exists():
        raise UserError(
            f"no checkpoint store at {path}; pass the --checkpoint the run used"
            " (runs without one use $SOPGRAPH_HOME/checkpoints.sqlite, default .sopgraph/)"
        )


def _store_error(exc: BaseException, args: argparse.Namespace) -> str | None:
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


# Exceptions a user can cause, by module. Only modules already imported are consulted: an
# exception class whose module was never loaded cannot have been raised, and importing the
# engine just to name its errors would slow every command down.
_USER_ERRORS = {
    "sopgraph.graphs.runner": ("InputError",),
    "sopgraph.nodes.mcp_client": ("McpError",),
    "sopgraph.tools.registry": ("RegistryError",),
    "sopgraph.nodes.settings": ("SettingsError",),
    "sopgraph.graphs.telemetry": ("TelemetryError",),
    "sopgraph.graphs.drawing": ("DrawingError",),
    "sopgraph.nodes.action": ("DecisionError",),
    "sopgraph.mcp_servers.server_auth": ("TokenError",),
}


def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [SopError, UserError]
    for module, names in _USER_ERRORS.items():
        loaded = sys.modules.get(module)
        errors += [getattr(loaded, n) for n in names if loaded is not None and hasattr(loaded, n)]
    return tuple(errors)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        sop = load_sop(args.path)
    except SopError as exc:
        if args.json:  # stdout stays parseable; the error lines still go to stderr
            _print_json({"ok": False, "errors": [vars(p) for p in exc.problems]})
        raise
    decisions, actions = len(sop.decision_nodes), len(sop.action_nodes)
    if args.json:
        _print_json(
            {
                "ok": True,
                "id": sop.id,
                "version": sop.version,
                "decision_nodes": decisions,
                "action_nodes": actions,
                "edges": sop.edge_count(),
            }
        )
    else:
        print(
            f"ok: {sop.id} v{sop.version}: {decisions} decision nodes, "
            f"{actions} action nodes, {sop.edge_count()} edges"
        )
    return 0


def _read_input(spec: str) -> dict[str, Any]:
    from sopgraph.cli_input import InputSpecError, read_input

    try:
        return read_input(spec)
    except InputSpecError as exc:
        raise UserError(str(exc)) from None


def _print_result(result: Any, as_json: bool) -> None:
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    from sopgraph.report import format_run

    print(format_run(result))


def models_for(arch: str):
    """The configured models (SOPGRAPH_MODEL); only ``--arch direct`` runs without one."""
    from sopgraph.nodes.architectures import load_models

    models = load_models()
    if arch != "direct" and models.chat is None:
        raise UserError(f"--arch {arch} needs a model: set SOPGRAPH_MODEL (`local` runs one here)")
    return models


def cmd_run(args: argparse.Namespace) -> int:
    # Input mistakes first: the engine's imports take seconds.
    inp = _read_input(args.input) if args.input else {}
    check_checkpoint(args.checkpoint)
    from sopgraph.graphs.runner import Session

    models = models_for(args.arch)

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, approval=args.approval,
                           arch=args.arch, model=models.chat, lm=models.lm) as s:  # fmt: skip
            return await s.run(inp, thread_id=args.thread, approver=_cli_user())

    result = _traced(args.trace, go)
    _print_result(result, args.json)
    return _exit_code(result.status)


def _traced(mode: str | None, go: Any) -> Any:
    """Run the coroutine function ``go`` with tracing on (``--trace``), flushing it after."""
    from sopgraph.graphs.telemetry import TelemetryError, setup_tracing, shutdown_tracing

    try:
        setup_tracing(mode)
    except TelemetryError as exc:
        raise UserError(str(exc)) from None
    try:
        return asyncio.run(go())
    finally:
        shutdown_tracing()  # prints the console tree / flushes OTLP batches


def _cli_user() -> str:
    import getpass

    return f"cli user {getpass.getuser()}"


def _exit_code(status: str) -> int:
    from sopgraph.graphs.runner import EXIT_CODES

    return EXIT_CODES[status]


def cmd_resume(args: argparse.Namespace) -> int:
    check_checkpoint(args.checkpoint, must_exist=True)
    from sopgraph.graphs.runner import Session

    models = models_for(args.arch)

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, arch=args.arch,
                           model=models.chat, lm=models.lm) as s:  # fmt: skip
            return await s.resume(args.thread, args.decision, approver=_cli_user())

    result = _traced(args.trace, go)
    _print_result(result, args.json)
    return _exit_code(result.status)


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


def cmd_tools(args: argparse.Namespace) -> int:
    from sopgraph.tools import commands

    sop_dir = Path(args.sop)
    if not sop_dir.exists():
        raise UserError(f"{sop_dir}: no such SOP file or folder; check the path")
    if sop_dir.is_dir() and not (sop_dir / "sop.yaml").exists():
        raise UserError(f"{sop_dir}: no sop.yaml in this folder; give an SOP file or its folder")
    sop_dir = sop_dir if sop_dir.is_dir() else sop_dir.parent
    takes = {"list": 0, "promote": 2, "revert": 1, "remove": 1, "rehash": 1}[args.action]
    given = [a for a in (args.node, args.version) if a is not None]
    if len(given) > takes:
        usage = {"list": "SOP", "revert": "SOP NODE", "remove": "SOP NODE", "rehash": "SOP [NODE]"}
        raise UserError(
            f"sopgraph tools {args.action}: too many arguments ({' '.join(map(str, given))});"
            f" usage: sopgraph tools {args.action} {usage[args.action]}"
        )
    if args.action == "list":
        print(commands.tools_list(sop_dir, as_json=args.json))
    elif args.action == "promote":
        print(commands.tools_promote(sop_dir, args.node, args.version))
    elif args.action == "revert":
        print(commands.tools_revert(sop_dir, args.node))
    elif args.action == "remove":
        print(commands.tools_remove(sop_dir, args.node))
    elif args.action == "rehash":
        print(commands.tools_rehash(sop_dir, node=args.node))
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    from sopgraph.nodes.sandbox_selftest import main as selftest_main

    return selftest_main()


# --- mcp: sopgraph as an MCP server (mcp_servers/sopgraph_server.py) -----------------------


def _check_port_free(host: str, port: int) -> None:
    import socket

    # uvicorn reports a taken port as a log line and exit 3; say it here in the CLI's form.
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise UserError(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror});"
                " pick another --port or --host"
            ) from None


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    from sopgraph.mcp_servers.sopgraph_server import serve

    if args.transport == "http":
        _check_port_free(args.host, args.port)

    return serve(args)


def _add_mcp_parser(sub: Any) -> None:
    # Options mirror mcp_servers.sopgraph_server.add_serve_args; importing it here would load
    # the MCP SDK (about a second) for every sopgraph command.
    m = sub.add_parser("mcp", help="offer the SOPs to MCP clients")
    msub = m.add_subparsers(dest="mcp_command", required=True)
    ms = msub.add_parser("serve", help="serve list_sops/describe_sop/run_sop/get_run/resume_run")
    ms.add_argument(
        "--transport",
        choices=["stdio", "http"],
        default="stdio",
        help="stdio (default) or streamable HTTP",
    )
    ms.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    ms.add_argument("--port", type=port_number, default=8000, help="HTTP port (default 8000)")
    ms.add_argument(
        "--checkpoint",
        help="SQLite file (default $SOPGRAPH_HOME/checkpoints.sqlite, home .sopgraph/) "
        "or postgres://…, shared by all SOPs",
    )
    ms.add_argument(
        "--approval",
        choices=["ask", "approve", "reject", "client"],
        default="ask",
        help="gated actions: ask (default) pauses each for resume_run; approve or reject "
        "decides all; client lets run_sop's 'approval' argument decide",
    )
    ms.add_argument(
        "--tokens",
        metavar="FILE",
        help="bearer tokens for --transport http (required there; default "
        "$SOPGRAPH_MCP_TOKENS): a file of lines '<identity> <token>', the token itself (32+ "
        "characters) or 'sha256:<hex>' of it; the identity is recorded as the approver",
    )
    ms.add_argument(
        "--approver",
        metavar="NAME",
        help="stdio only: the approver recorded for gated actions the client answers "
        "(default: the OS user running the server)",
    )
    ms.set_defaults(fn=cmd_mcp_serve)


# --- end mcp ---------------------------------------------------------------------------------


def _add_trace(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--trace",
        choices=["console", "otlp"],
        help=f"trace {what}: a tree on stderr, or OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sopgraph")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sopgraph", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"sopgraph {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check an SOP file and print its size")
    v.add_argument("path", help="SOP file or its folder")
    v.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    v.set_defaults(fn=cmd_validate)

    from sopgraph.cli_input import RUN_EPILOG, RunHelp

    r = sub.add_parser(
        "run",
        help="run an SOP on one input (resumes an unfinished thread)",
        add_help=False,
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("-h", "--help", action=RunHelp, help="show this help and the SOP's input")
    r.add_argument("sop", help="SOP file or its folder")
    r.add_argument("--input", "-i", help="JSON file, '-' for stdin, or inline JSON")
    r.add_argument("--thread", help="thread id: reuse it to resume a killed or paused run")
    r.add_argument(
        "--approval",
        choices=["ask", "approve", "reject"],
        default="ask",
        help="gated actions: pause and ask (default), or approve/reject all",
    )
    r.add_argument(
        "--checkpoint",
        help="SQLite file (default $SOPGRAPH_HOME/checkpoints.sqlite, home .sopgraph/), "
        "memory, or postgres://…",
    )
    r.add_argument("--json", action="store_true", help="print the run result as JSON")
    r.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact"],
        default="direct",
        help="direct: call compiled tools (default); subagent: an LLM calls them; "
        "codeact: an LLM writes MCP code for every node",
    )
    _add_trace(r, "the run")
    r.set_defaults(fn=cmd_run)

    rs = sub.add_parser("resume", help="answer a paused run's gated action")
    rs.add_argument("sop", help="SOP file or its folder")
    rs.add_argument("--thread", required=True, help="thread id of the paused run")
    rs.add_argument(
        "--decision",
        required=True,
        choices=["approve", "reject"],
        help="answer for every pending gated action",
    )
    rs.add_argument("--checkpoint", help="the checkpoint store the run used (as on `run`)")
    rs.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact"],
        default="direct",
        help="executors for the rest of the run (as on `run`)",
    )
    rs.add_argument("--json", action="store_true", help="print the run result as JSON")
    _add_trace(rs, "the rest of the run (in the same trace as its start)")
    rs.set_defaults(fn=cmd_resume)

    g = sub.add_parser("graph", help="draw an SOP as Mermaid or PNG")
    g.add_argument("path", help="SOP file or its folder")
    g.add_argument(
        "--format", choices=["mermaid", "png"], default="mermaid", help="default mermaid"
    )
    g.add_argument(
        "--output", "-o", help="file to write (Mermaid: default stdout; PNG: default <sop id>.png)"
    )
    g.set_defaults(fn=cmd_graph)

    im = sub.add_parser("import", help="convert another SOP format into sopgraph YAML")
    im.add_argument("kind", choices=["sopagent"], help="the source format")
    im.add_argument("file", help="the SOP to convert")
    im.add_argument("--output", "-o", help="YAML file to write (default stdout)")
    im.set_defaults(fn=cmd_import)

    t = sub.add_parser(
        "tools", help="list, promote, revert, remove or rehash compiled tool versions"
    )
    t.add_argument(
        "action",
        choices=["list", "promote", "revert", "remove", "rehash", "make"],
        help="rehash: accept edited tool files by recording their new sha256; "
        "make: see `sopgraph tools make --help`",
    )
    t.add_argument("sop", help="SOP file or folder")
    t.add_argument("node", nargs="?", help="node id (promote, revert, remove; rehash: optional)")
    t.add_argument("version", nargs="?", type=int, help="version number (promote)")
    t.add_argument("--json", action="store_true", help="list: print the registry as JSON")
    t.set_defaults(fn=cmd_tools)

    sb = sub.add_parser("sandbox", help="sandbox for generated code")
    sb.add_argument("action", choices=["selftest"], help="selftest: run the adversarial corpus")
    sb.set_defaults(fn=cmd_sandbox)
    _add_mcp_parser(sub)  # mcp block above
    from sopgraph.cli_eval import add_commands
    from sopgraph.cli_world import add_commands as add_world_commands

    add_commands(sub)
    add_world_commands(sub)
    from sopgraph.cli_sopbench import add_command as add_sopbench

    add_sopbench(sub.choices["bench"])  # `sopgraph bench sopbench`
    from sopgraph.cli_model import add_commands as add_model_commands

    add_model_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["tools", "make"]:  # its own parser: several nodes and the make options
        from sopgraph.cli_toolmaker import cmd_tools_make

        args = argparse.Namespace(fn=lambda _: cmd_tools_make(argv[2:]))
    else:
        args = build_parser().parse_args(argv)
    if getattr(args, "action", None) in ("promote", "revert", "remove") and not args.node:
        print(f"error: sopgraph tools {args.action}: give the node id", file=sys.stderr)
        return 2
    if getattr(args, "action", None) == "promote" and args.version is None:
        print("error: sopgraph tools promote: give the version number to promote", file=sys.stderr)
        return 2
    try:
        try:
            return args.fn(args)
        except Exception as exc:
            message = _store_error(exc, args)
            if message is None:
                raise
            print(message, file=sys.stderr)
            return 2
    except _user_errors() as exc:
        from sopgraph.graphs.untrusted_text import printable

        # an MCP server's or a model's words may be quoted in the message
        for line in str(exc).splitlines() or [type(exc).__name__]:
            line = printable(line)
            print(line if line.startswith("error:") else f"error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `sopgraph … | head`: the reader left; not an error of ours
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
