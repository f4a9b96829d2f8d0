"""The ``sopgraph`` command line: a thin layer over the library functions the tests call."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from graphs.loader import SopError, load_sop


class UserError(Exception):
    """A mistake the user can fix; printed as one ``error:`` line, exit 2."""


# Exceptions a user can cause, by module. Only modules already imported are consulted: an
# exception class whose module was never loaded cannot have been raised, and importing the
# engine just to name its errors would slow every command down.
_USER_ERRORS = {
    "graphs.runner": ("InputError",),
    "nodes.mcp_client": ("McpError",),
    "tools.registry": ("RegistryError",),
    "sopgraph.settings": ("SettingsError",),
    "sopgraph.telemetry": ("TelemetryError",),
    "graphs.drawing": ("DrawingError",),
    "nodes.action": ("DecisionError",),
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
    sop = load_sop(args.path)
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
    text = sys.stdin.read() if spec == "-" else None
    if text is None:
        p = Path(spec)
        text = p.read_text() if p.exists() else spec
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"--input {spec}: not JSON ({exc.msg} at line {exc.lineno}); pass a file or a JSON object"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"--input {spec}: expected a JSON object")
    return data


def _print_result(result: Any, as_json: bool) -> None:
    if as_json:
        print(result.model_dump_json(indent=2))
        return
    from sopgraph.report import format_run

    print(format_run(result))


def cmd_run(args: argparse.Namespace) -> int:
    from graphs.runner import Session
    from nodes.architectures import load_models

    inp = _read_input(args.input) if args.input else {}
    models = load_models()  # SOPGRAPH_MODEL; none is fine for --arch direct
    if args.arch != "direct" and models.chat is None:
        raise UserError(
            f"--arch {args.arch} needs a model: set SOPGRAPH_MODEL (`scripted` runs without one)"
        )

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, approval=args.approval,
                           arch=args.arch, model=models.chat, lm=models.lm) as s:  # fmt: skip
            return await s.run(inp, thread_id=args.thread)

    from sopgraph.telemetry import TelemetryError, setup_tracing, shutdown_tracing

    try:
        setup_tracing(args.trace)
    except TelemetryError as exc:
        raise UserError(str(exc)) from None
    try:
        result = asyncio.run(go())
    finally:
        shutdown_tracing()  # prints the console tree / flushes OTLP batches
    _print_result(result, args.json)
    return 0 if result.status != "unresolved" else 1


def cmd_resume(args: argparse.Namespace) -> int:
    from graphs.runner import Session
    from nodes.architectures import load_models

    models = load_models()
    if args.arch != "direct" and models.chat is None:
        raise UserError(
            f"--arch {args.arch} needs a model: set SOPGRAPH_MODEL (`scripted` runs without one)"
        )

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, arch=args.arch,
                           model=models.chat, lm=models.lm) as s:  # fmt: skip
            return await s.resume(args.thread, args.decision)

    result = asyncio.run(go())
    _print_result(result, args.json)
    return 0 if result.status != "unresolved" else 1


def cmd_graph(args: argparse.Namespace) -> int:
    from graphs import drawing

    sop = load_sop(args.path)
    if args.format == "mermaid":
        text = drawing.to_mermaid(sop)
        if args.output:
            Path(args.output).write_text(text)
            print(f"wrote {args.output}")
        else:
            print(text)
        return 0
    out = Path(args.output or f"{sop.id}.png")
    drawing.render_png(sop, out)
    print(f"wrote {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from graphs.importers import import_file
    from graphs.importers.sopagent import dump_sop_yaml

    sop = import_file(args.kind, Path(args.file))
    text = dump_sop_yaml(sop)
    if args.output:
        Path(args.output).write_text(text)
        print(
            f"wrote {args.output}: {sop.id}: {len(sop.decision_nodes)} decision nodes, "
            f"{len(sop.action_nodes)} action nodes"
        )
    else:
        print(text, end="")
    return 0


def cmd_tools(args: argparse.Namespace) -> int:
    from tools import commands

    sop_dir = Path(args.sop)
    sop_dir = sop_dir if sop_dir.is_dir() else sop_dir.parent
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
    from nodes.sandbox_selftest import main as selftest_main

    return selftest_main()


# --- mcp: sopgraph as an MCP server (mcp_servers/sopgraph_server.py) -----------------------


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    from mcp_servers.sopgraph_server import serve

    return serve(args)


def _add_mcp_parser(sub: Any) -> None:
    # Options mirror mcp_servers.sopgraph_server.add_serve_args; importing it here would load
    # the MCP SDK (about a second) for every sopgraph command.
    m = sub.add_parser("mcp", help="offer the SOPs to MCP clients")
    msub = m.add_subparsers(dest="mcp_command", required=True)
    ms = msub.add_parser("serve", help="serve list_sops/describe_sop/run_sop/get_run/resume_run")
    ms.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    ms.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    ms.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    ms.add_argument(
        "--checkpoint",
        help="SQLite file (default {home}/checkpoints.sqlite) or postgres://… shared by all SOPs",
    )
    ms.set_defaults(fn=cmd_mcp_serve)


# --- end mcp ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sopgraph", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check an SOP file and print its size")
    v.add_argument("path")
    v.add_argument("--json", action="store_true")
    v.set_defaults(fn=cmd_validate)

    r = sub.add_parser("run", help="run an SOP on one input (resumes an unfinished thread)")
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
        "--checkpoint", help="SQLite file (default .sopgraph/checkpoints.sqlite) or postgres://…"
    )
    r.add_argument("--json", action="store_true")
    r.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact"],
        default="direct",
        help="direct: call compiled tools (default); subagent: an LLM calls them; "
        "codeact: an LLM writes MCP code for every node",
    )
    r.add_argument(
        "--trace",
        choices=["console", "otlp"],
        help="trace the run: a tree on stderr, or OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
    r.set_defaults(fn=cmd_run)

    rs = sub.add_parser("resume", help="answer a paused run's gated action")
    rs.add_argument("sop")
    rs.add_argument("--thread", required=True)
    rs.add_argument("--decision", required=True, choices=["approve", "reject"])
    rs.add_argument("--checkpoint")
    rs.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact"],
        default="direct",
        help="executors for the rest of the run (as on `run`)",
    )
    rs.add_argument("--json", action="store_true")
    rs.set_defaults(fn=cmd_resume)

    g = sub.add_parser("graph", help="draw an SOP as Mermaid or PNG")
    g.add_argument("path")
    g.add_argument("--format", choices=["mermaid", "png"], default="mermaid")
    g.add_argument("--output", "-o")
    g.set_defaults(fn=cmd_graph)

    im = sub.add_parser("import", help="convert another SOP format into sopgraph YAML")
    im.add_argument("kind", choices=["sopagent"])
    im.add_argument("file")
    im.add_argument("--output", "-o")
    im.set_defaults(fn=cmd_import)

    t = sub.add_parser(
        "tools", help="list, promote, revert, remove or rehash compiled tool versions"
    )
    t.add_argument("action", choices=["list", "promote", "revert", "remove", "rehash"])
    t.add_argument("sop", help="SOP file or folder")
    t.add_argument("node", nargs="?")
    t.add_argument("version", nargs="?", type=int)
    t.add_argument("--json", action="store_true")
    t.set_defaults(fn=cmd_tools)

    sb = sub.add_parser("sandbox", help="sandbox for generated code")
    sb.add_argument("action", choices=["selftest"])
    sb.set_defaults(fn=cmd_sandbox)
    _add_mcp_parser(sub)  # mcp block above
    from sopgraph.cli_eval import add_commands

    add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "action", None) in ("promote", "revert", "remove") and not args.node:
        print(f"error: sopgraph tools {args.action}: give the node id", file=sys.stderr)
        return 2
    if getattr(args, "action", None) == "promote" and args.version is None:
        print("error: sopgraph tools promote: give the version number to promote", file=sys.stderr)
        return 2
    try:
        return args.fn(args)
    except _user_errors() as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
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
