"""``sopgraph run`` and ``sopgraph resume``: one input through an SOP, and a paused run's answer."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from sopgraph.arguments import add_trace
from sopgraph.checkpoint_store import check_checkpoint
from sopgraph.errors import UserError
from sopgraph.exit_codes import exit_code
from sopgraph.model_choice import models_for
from sopgraph.run_input import RUN_EPILOG, InputSpecError, RunHelp, read_input


def _read_input(spec: str) -> dict[str, Any]:
    try:
        return read_input(spec)
    except InputSpecError as exc:
        raise UserError(str(exc)) from None


def _print_result(result: Any, as_json: bool, sop: str | None = None) -> None:
    if as_json:
        from sopgraph.graphs.untrusted_text import json_text

        print(json_text(result))
        return
    from sopgraph.report import format_run

    print(format_run(result, sop))


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


def cmd_run(args: argparse.Namespace) -> int:
    # Input mistakes first: the engine's imports take seconds.
    inp = _read_input(args.input) if args.input else {}
    if args.queue:  # a worker runs it: `sopgraph queue worker`
        from sopgraph.commands.queue import submit_run

        return submit_run(args, inp)
    check_checkpoint(args.checkpoint)
    from sopgraph.approval_prompt import ask_pending, can_ask, paused_line
    from sopgraph.runtime.runner import Session

    models = models_for(args.arch)
    ask = args.approval == "ask" and can_ask()

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, approval=args.approval,
                           arch=args.arch, model=models.chat, lm=models.lm) as s:  # fmt: skip
            result = await s.run(inp, thread_id=args.thread, approver=_cli_user())
            return await ask_pending(s, result, _cli_user()) if ask else result

    result = _traced(args.trace, go)
    if result.interrupts and args.approval == "ask" and not ask:
        print(paused_line(result, args.sop), file=sys.stderr)
    _print_result(result, args.json, args.sop)
    return exit_code(result.status)


def cmd_resume(args: argparse.Namespace) -> int:
    check_checkpoint(args.checkpoint, must_exist=True)
    from sopgraph.runtime.runner import Session

    models = models_for(args.arch)

    async def go():
        async with Session(args.sop, checkpoint=args.checkpoint, arch=args.arch,
                           model=models.chat, lm=models.lm) as s:  # fmt: skip
            return await s.resume(
                args.thread,
                args.decision,
                interrupt_id=args.interrupt,
                node=args.node,
                approver=_cli_user(),
            )

    result = _traced(args.trace, go)
    _print_result(result, args.json, args.sop)
    return exit_code(result.status)


def register(sub: Any) -> None:
    """Register ``run`` and ``resume`` on the top-level subparsers."""
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
        help="gated actions: ask (default: y/n at a terminal; without one the run pauses and "
        "says how to resume it), or approve/reject all",
    )
    r.add_argument(
        "--checkpoint",
        help="SQLite file (default $SOPGRAPH_HOME/checkpoints.sqlite; no SOPGRAPH_HOME: the "
        "nearest .sopgraph/ here or in a parent folder), "
        "memory, or postgres://…",
    )
    r.add_argument(
        "--queue",
        metavar="URL",
        help="put the run on the job queue in this Postgres database (postgresql://…) for "
        "`sopgraph queue worker` and print its run id; `sopgraph runs show` reads its result",
    )
    r.add_argument("--json", action="store_true", help="print the run result as JSON")
    r.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact", "check", "check-only"],
        default="direct",
        help="direct: call compiled tools (default); subagent: an LLM calls them; "
        "codeact: an LLM writes MCP code for every node; check: a node without a working "
        "tool is decided by Checks the LLM fills under its grammar; check-only: Checks for "
        "every node, no tools",
    )
    add_trace(r, "the run")
    r.set_defaults(fn=cmd_run)

    rs = sub.add_parser("resume", help="answer a paused run's gated action")
    rs.add_argument("sop", help="SOP file or its folder")
    rs.add_argument("--thread", required=True, help="thread id of the paused run")
    rs.add_argument(
        "--decision",
        required=True,
        choices=["approve", "reject"],
        help="the answer to the gated action named by --interrupt or --node",
    )
    rs.add_argument(
        "--interrupt",
        metavar="ID",
        help="the id of the pending gated action this answer is for (the paused run's line "
        "and `sopgraph runs show` print it); an answer for one the run no longer waits on "
        "is refused",
    )
    rs.add_argument(
        "--node", help="the action node this answer is for (enough when only it is pending)"
    )
    rs.add_argument("--checkpoint", help="the checkpoint store the run used (as on `run`)")
    rs.add_argument(
        "--arch",
        choices=["direct", "subagent", "codeact", "check", "check-only"],
        default="direct",
        help="executors for the rest of the run (as on `run`)",
    )
    rs.add_argument("--json", action="store_true", help="print the run result as JSON")
    add_trace(rs, "the rest of the run (in the same trace as its start)")
    rs.set_defaults(fn=cmd_resume)
