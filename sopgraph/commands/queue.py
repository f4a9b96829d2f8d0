"""``sopgraph queue worker|submit|status|prune`` and ``sopgraph run --queue``: runs on the job
queue that lives in the Postgres checkpoint store (``runtime/queue.py``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

from sopgraph.arguments import positive_int
from sopgraph.errors import UserError

_URL_HELP = "the Postgres database of the checkpoints and the queue: postgresql://user@host/db"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> float:
    """An argparse type: a duration in seconds from ``7d``, ``12h``, ``30m``, ``1d12h``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhdw])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: write a number and a unit, e.g. 7d, 12h or 30m "
            "(units s, m, h, d, w)"
        )
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _queued(go: Any) -> Any:
    """``asyncio.run(go)``, with the queue's errors as one ``error:`` line."""
    from sopgraph.runtime.queue import QueueError

    try:
        return asyncio.run(go)
    except QueueError as exc:
        raise UserError(str(exc)) from None


def _user() -> str:
    import getpass

    return f"cli user {getpass.getuser()}"


def _print_submitted(submitted: list[Any], dsn: str, as_json: bool) -> None:
    from sopgraph.runtime.queue import store_name

    if as_json:
        for s in submitted:
            print(json.dumps(s.model_dump()))
        return
    for s in submitted:
        print(s.thread_id)
    where = store_name(dsn)
    print(
        f"{len(submitted)} run(s) queued at {where}; the first line's result: "
        f"`sopgraph runs show {submitted[0].thread_id if submitted else '<thread>'} "
        f"--checkpoint {where}`",
        file=sys.stderr,
    )


def submit_run(args: argparse.Namespace, inp: dict[str, Any]) -> int:
    """``sopgraph run SOP --input … --queue URL``: queue the run, print its run (thread) id."""
    from sopgraph.runtime.queue import check_dsn, submit

    _check(check_dsn, args.queue)
    ids = [args.thread] if args.thread else None
    submitted = _queued(
        submit(args.queue, args.sop, [inp], approval=args.approval, approver=_user(),
               thread_ids=ids)
    )  # fmt: skip
    _print_submitted(submitted, args.queue, args.json)
    return 0


def _check(check: Any, dsn: str) -> None:
    from sopgraph.runtime.queue import QueueError

    try:
        check(dsn)
    except QueueError as exc:
        raise UserError(str(exc)) from None


def _read_inputs(spec: str) -> list[dict[str, Any]]:
    """A JSON list of inputs, or one JSON object a line (JSON Lines), from a file or '-'."""
    text = sys.stdin.read() if spec == "-" else _file_text(spec)
    stripped = text.strip()
    try:
        if stripped.startswith("["):
            inputs = json.loads(stripped)
        else:
            inputs = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise UserError(f"--inputs {spec}: not JSON (line {exc.lineno}: {exc.msg})") from None
    bad = [i for i, inp in enumerate(inputs) if not isinstance(inp, dict)]
    if bad:
        raise UserError(f"--inputs {spec}: input {bad[0] + 1} is not a JSON object")
    return inputs


def _file_text(spec: str) -> str:
    try:
        return Path(spec).read_text()
    except OSError as exc:
        raise UserError(f"--inputs {spec}: cannot read it ({exc.strerror})") from None


def cmd_queue_submit(args: argparse.Namespace) -> int:
    from sopgraph.runtime.queue import check_dsn, submit

    _check(check_dsn, args.queue)
    inputs = _read_inputs(args.inputs)
    submitted = _queued(submit(args.queue, args.sop, inputs, approval=args.approval,
                               approver=_user()))  # fmt: skip
    _print_submitted(submitted, args.queue, args.json)
    return 0


def cmd_queue_status(args: argparse.Namespace) -> int:
    from sopgraph.runtime.queue import check_dsn, job_counts, store_name

    _check(check_dsn, args.queue)
    counts = _queued(job_counts(args.queue))
    if args.json:
        print(json.dumps(counts))
        return 0
    shown = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no jobs"
    print(f"queue at {store_name(args.queue)}: {shown}")
    return 0


def _shown(seconds: float) -> str:
    """``seconds`` in the largest unit that divides it: 604800 -> 1w, 36 -> 36s."""
    for unit, size in sorted(_UNITS.items(), key=lambda u: -u[1]):
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def cmd_queue_prune(args: argparse.Namespace) -> int:
    from sopgraph.runtime.queue import check_dsn, prune, store_name

    _check(check_dsn, args.queue)
    pruned = _queued(prune(args.queue, args.older_than))
    if args.json:
        print(json.dumps(pruned.model_dump()))
        return 0
    print(
        f"queue at {store_name(args.queue)}: removed {pruned.jobs} finished job(s) older than "
        f"{_shown(args.older_than)} and their {pruned.events} event(s)"
    )
    return 0


def cmd_queue_worker(args: argparse.Namespace) -> int:
    from sopgraph.runtime import eventloop
    from sopgraph.runtime.queue import (
        QueueError,
        check_dsn,
        ensure_schema,
        serve,
        store_name,
        worker_name,
    )

    _check(check_dsn, args.store)
    _queued(ensure_schema(args.store))  # an unreachable queue: one line, before anything starts
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
    )
    print(
        f"queue worker {worker_name()}: up to {args.concurrency} runs at once from "
        f"{store_name(args.store)}, gated actions under --approval {args.approval}; "
        "Ctrl-C or SIGTERM stops it once its runs finish",
        file=sys.stderr,
        flush=True,
    )
    try:
        eventloop.run(
            serve(
                args.store,
                concurrency=args.concurrency,
                approval=args.approval,
                heartbeat_s=args.heartbeat,
                stalled_after_s=args.stalled_after,
                until_idle=args.until_idle,
                warm=tuple(args.warm),
            )
        )
    except QueueError as exc:
        raise UserError(str(exc)) from None
    return 0


def _approval(p: argparse.ArgumentParser, what: str, default: str) -> None:
    p.add_argument("--approval", choices=["ask", "approve", "reject"], default=default,
                   help=what)  # fmt: skip


def register(sub: Any) -> None:
    """Register ``queue worker``, ``queue submit``, ``queue status`` and ``queue prune``."""
    q = sub.add_parser(
        "queue", help="runs on a job queue in the Postgres checkpoint store, over many workers"
    )
    qsub = q.add_subparsers(dest="queue_command", required=True)

    w = qsub.add_parser("worker", help="take runs from the queue until stopped")
    w.add_argument("--store", "--queue", dest="store", required=True, help=_URL_HELP)
    w.add_argument(
        "--concurrency", type=positive_int, default=4, help="runs at once in this worker (4)"
    )
    _approval(
        w,
        "the operator's policy for gated actions (default ask: the run pauses for "
        "`sopgraph resume`); a run asking for more runs under this one",
        "ask",
    )
    w.add_argument(
        "--heartbeat", type=float, default=10.0, metavar="S", help="seconds between heartbeats"
    )
    w.add_argument(
        "--stalled-after",
        type=float,
        default=30.0,
        metavar="S",
        help="a worker silent this long is taken for dead: its runs go to another worker (30)",
    )
    w.add_argument(
        "--until-idle", action="store_true", help="stop once the queue is empty (batches, CI)"
    )
    w.add_argument(
        "--warm",
        action="append",
        default=[],
        metavar="SOP",
        help="open this SOP's session (its MCP servers) before taking jobs; repeatable",
    )
    w.add_argument("--verbose", "-v", action="store_true", help="log each job")
    w.set_defaults(fn=cmd_queue_worker)

    s = qsub.add_parser("submit", help="queue a run of an SOP per input; prints the run ids")
    s.add_argument("sop", help="SOP file or its folder (the workers read it at this path)")
    s.add_argument(
        "--inputs", required=True, help="a JSON list of inputs or JSON Lines; '-' for stdin"
    )
    s.add_argument("--queue", required=True, help=_URL_HELP)
    _approval(s, "the policy asked for the runs' gated actions (a worker may cut it down)", "ask")
    s.add_argument("--json", action="store_true", help="one JSON object a run: thread and job")
    s.set_defaults(fn=cmd_queue_submit)

    st = qsub.add_parser("status", help="the queue's runs by job status")
    st.add_argument("--queue", required=True, help=_URL_HELP)
    st.add_argument("--json", action="store_true", help="print the counts as JSON")
    st.set_defaults(fn=cmd_queue_status)

    pr = qsub.add_parser(
        "prune",
        help="delete finished jobs (succeeded, failed, cancelled, aborted) and their events",
    )
    pr.add_argument("--queue", required=True, help=_URL_HELP)
    pr.add_argument(
        "--older-than",
        required=True,
        type=duration,
        metavar="DURATION",
        help="only jobs finished longer ago than this: 7d, 12h, 30m, 1d12h",
    )
    pr.add_argument("--json", action="store_true", help="print the counts as JSON")
    pr.set_defaults(fn=cmd_queue_prune)
