"""The runs a SQLite checkpoint store holds, read without their SOP: one summary a run
(``list_runs``) or one run in full (``read_run``), for ``sopgraph runs list|show``.

A run's SOP is known from its checkpoints' metadata (``Session`` records ``sop_id`` and
``sop_path`` in every run config); runs checkpointed before that show none. A journaled run
killed before its first checkpoint is only in the node journal: it is listed as ``stopped``.

Example:
    >>> for run in list_runs(default_checkpoint_path(), limit=5):
    ...     print(run.thread_id, run.status, run.final)
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from sopgraph.runtime.answers import read_answers
from sopgraph.runtime.run_result import RunResult, build_result

RunStatus = Literal["finished", "interrupted", "failed", "stopped"]
_FAILED = ("unresolved", "unmatched", "bounded", "refused")


class RunsError(Exception):
    """The store cannot be read as a checkpoint store, or holds no such run."""


class RunInfo(BaseModel):
    """One run as ``runs list`` shows it.

    ``status``: ``interrupted`` (a gated action waits for its answer), ``failed`` (it ended with
    a node unresolved or unmatched, or a loop out of visits: ``outcome`` says which),
    ``stopped`` (killed, or running now: ``sopgraph run SOP --thread ID`` continues it), else
    ``finished``. ``final``: the last action taken, or the approval waited for.
    """

    thread_id: str
    sop_id: str | None = None
    sop_path: str | None = None
    status: RunStatus
    outcome: str  # RunResult's status: done, interrupted, unresolved, unmatched, bounded
    started: str | None = None  # ISO 8601, UTC
    updated: str | None = None  # the latest checkpoint's time
    steps: int = 0
    last_step: str | None = None  # the last node of the trail
    final: str = ""


class RunRecord(RunInfo):
    """One run as ``runs show`` shows it: its summary, its whole ``RunResult`` and every answer
    given to its gated actions (``runtime/answers.py``: accepted, duplicate, stale, refused)."""

    result: RunResult
    answers: list[dict[str, Any]] = []


def list_runs(store: Path, *, sop: str | None = None, limit: int | None = 20) -> list[RunInfo]:
    """The runs in ``store``, newest first (runs stopped before their first checkpoint lead);
    ``sop``: only those of that SOP id or SOP path; at most ``limit``."""
    with _open(store) as conn:
        saver = SqliteSaver(conn)
        out: list[RunInfo] = []
        for thread_id, conf in _journal_only(conn):
            if _matches(conf, sop):
                out.append(_stopped(thread_id, conf))
        rows = conn.execute(
            "SELECT thread_id, MAX(checkpoint_id), metadata FROM checkpoints"
            " WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
        ).fetchall()
        for thread_id, _, metadata in rows:
            if limit is not None and len(out) >= limit:
                break
            if _matches(_json(metadata), sop):
                out.append(_record(conn, saver, thread_id))
        info = [RunInfo(**r.model_dump(exclude={"result"})) for r in out]
        return info[:limit] if limit is not None else info


def read_run(store: Path, thread_id: str) -> RunRecord:
    """The run on ``thread_id`` in ``store``; ``RunsError`` when there is none."""
    with _open(store) as conn:
        if conn.execute(
            "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' LIMIT 1",
            (thread_id,),
        ).fetchone():
            record = _record(conn, SqliteSaver(conn), thread_id)
            return record.model_copy(update={"answers": read_answers(store, thread_id)})
        for tid, conf in _journal_only(conn):
            if tid == thread_id:
                return _stopped(thread_id, conf)
    raise RunsError(f"no run {thread_id!r} in {store}; `sopgraph runs list` shows the runs there")


def _open(store: Path) -> closing[sqlite3.Connection]:
    if not store.is_file():
        raise RunsError(f"no checkpoint store at {store}")
    conn = sqlite3.connect(store, check_same_thread=False)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "checkpoints" not in tables or "writes" not in tables:
        conn.close()
        raise RunsError(f"{store} is not a checkpoint store (no checkpoints table)")
    return closing(conn)


def _json(raw: Any) -> dict[str, Any]:
    try:
        data = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _matches(meta: dict[str, Any], sop: str | None) -> bool:
    if sop is None:
        return True
    path = meta.get("sop_path")
    return sop == meta.get("sop_id") or (
        path is not None and Path(sop).resolve() in (Path(path), Path(path).parent)
    )


def _journal_only(conn: sqlite3.Connection) -> list[tuple[str, dict[str, Any]]]:
    """Threads the node journal holds and no checkpoint does, with their first run config."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "sopgraph_invocations" not in tables:
        return []
    rows = conn.execute(
        "SELECT thread_id, configurable FROM sopgraph_invocations WHERE parent = ''"
        " AND thread_id NOT IN (SELECT thread_id FROM checkpoints) ORDER BY thread_id DESC"
    ).fetchall()
    return [(t, _json(c)) for t, c in rows]


def _stopped(thread_id: str, conf: dict[str, Any]) -> RunRecord:
    result = RunResult(thread_id=thread_id, sop_id=conf.get("sop_id") or "?", status="done")
    return RunRecord(
        thread_id=thread_id, sop_id=conf.get("sop_id"), sop_path=conf.get("sop_path"),
        status="stopped", outcome="stopped", started=_id_time(thread_id),
        final="stopped before its first checkpoint", result=result,
    )  # fmt: skip


def _record(conn: sqlite3.Connection, saver: SqliteSaver, thread_id: str) -> RunRecord:
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    latest = saver.get_tuple(config)
    assert latest is not None  # the caller saw a checkpoint of this thread
    meta = dict(latest.metadata or {})
    channels = latest.checkpoint.get("channel_values") or {}
    values = {k: v for k, v in channels.items() if not k.startswith(("branch:", "__"))}
    answered = {w[0] for w in latest.pending_writes or [] if w[1] == "__resume__"}
    pending = [
        i
        for task, channel, value in latest.pending_writes or []
        if channel == "__interrupt__" and task not in answered
        for i in (value if isinstance(value, list | tuple) else [value])
    ]
    result = build_result(thread_id, str(meta.get("sop_id") or "?"), values, pending)
    status: RunStatus = "finished"
    if result.status == "interrupted":
        status = "interrupted"
    elif _unfinished(conn, thread_id, latest.config) or (
        any(k.startswith("branch:to:") for k in channels) and result.status == "done"
    ):
        status = "stopped"
    elif result.status in _FAILED:
        status = "failed"
    first = conn.execute(
        "SELECT MIN(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''",
        (thread_id,),
    ).fetchone()[0]
    earliest = saver.get_tuple({"configurable": {**config["configurable"], "checkpoint_id": first}})
    trail = result.trail
    return RunRecord(
        thread_id=thread_id,
        sop_id=meta.get("sop_id"),
        sop_path=meta.get("sop_path"),
        status=status,
        outcome=result.status,
        started=_id_time(thread_id) or (earliest.checkpoint.get("ts") if earliest else None),
        updated=latest.checkpoint.get("ts"),
        steps=len(trail),
        last_step=trail[-1]["node"] if trail else None,
        final=_final(result, status),
        result=result,
    )


def _unfinished(conn: sqlite3.Connection, thread_id: str, config: dict[str, Any]) -> bool:
    """Whether a journaled invocation started from the latest checkpoint and never wrote one."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "sopgraph_invocations" not in tables:
        return False
    parent = (config.get("configurable") or {}).get("checkpoint_id") or ""
    return bool(
        conn.execute(
            "SELECT 1 FROM sopgraph_invocations WHERE thread_id = ? AND parent = ?",
            (thread_id, parent),
        ).fetchone()
    )


def _final(result: RunResult, status: RunStatus) -> str:
    """The last action taken, or the approval waited for, or why the run failed."""
    if result.interrupts:
        return "waiting: " + ", ".join(f"approve {i.get('node')}" for i in result.interrupts)
    if status == "stopped":
        return "stopped after " + (result.path[-1] if result.path else "no step")
    if status == "failed":
        why = {**result.refused, **result.unresolved, **result.unmatched, **result.bounded}
        node, reason = next(iter(why.items()))
        return f"{result.status}: {node}: {reason}"
    if result.actions:
        act = result.actions[-1]
        return f"action {act['node']} {act.get('status', '')}".strip()
    return "no action"


def _id_time(thread_id: str) -> str | None:
    """The creation time a generated thread id starts with (``runner.new_thread_id``)."""
    if len(thread_id) != 32 or any(c not in "0123456789abcdef" for c in thread_id):
        return None
    ms = int(thread_id[:12], 16)
    if not 1_500_000_000_000 < ms < 4_000_000_000_000:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()
