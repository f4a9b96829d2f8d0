"""The runs a checkpoint store holds (a SQLite file or a ``postgres://`` URL), read without
their SOP: one summary a run (``list_runs``) or one run in full (``read_run``), for ``sopgraph
runs list|show`` and the console.

A run's SOP is known from its checkpoints' metadata (``Session`` records ``sop_id`` and
``sop_path`` in every run config); runs checkpointed before that show none. A journaled run
killed before its first checkpoint is only in the node journal (SQLite stores): it is listed as
``stopped``.

Example:
    >>> for run in list_runs(default_checkpoint_path(), limit=5):
    ...     print(run.thread_id, run.status, run.final)
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from sopgraph.runtime.answers import HISTORY, answer_entry
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


def list_runs(
    store: Path | str, *, sop: str | None = None, limit: int | None = 20
) -> list[RunInfo]:
    """The runs in ``store`` (a SQLite file or a ``postgres://`` URL), newest first (runs
    stopped before their first checkpoint lead); ``sop``: only those of that SOP id or SOP
    path; at most ``limit``."""
    with _open(store) as db:
        out: list[RunInfo] = []
        if "checkpoints" not in db.tables:
            return out
        for thread_id, conf in _journal_only(db):
            if _matches(conf, sop):
                out.append(_stopped(thread_id, conf))
        rows = db.query(
            "SELECT thread_id, MAX(checkpoint_id) FROM checkpoints"
            " WHERE checkpoint_ns = '' GROUP BY thread_id ORDER BY MAX(checkpoint_id) DESC"
        )
        for thread_id, latest in rows:
            if limit is not None and len(out) >= limit:
                break
            (meta,) = db.query(
                "SELECT metadata FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"
                " AND checkpoint_id = ?",
                (thread_id, latest),
            )[0]
            if _matches(_json(meta), sop):
                out.append(_record(db, thread_id))
        info = [RunInfo(**r.model_dump(exclude={"result"})) for r in out]
        return info[:limit] if limit is not None else info


def read_run(store: Path | str, thread_id: str) -> RunRecord:
    """The run on ``thread_id`` in ``store``; ``RunsError`` when there is none."""
    with _open(store) as db:
        if "checkpoints" in db.tables and db.query(
            "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' LIMIT 1",
            (thread_id,),
        ):
            record = _record(db, thread_id)
            return record.model_copy(update={"answers": db.answers(thread_id)})
        for tid, conf in _journal_only(db):
            if tid == thread_id:
                return _stopped(thread_id, conf)
    raise RunsError(
        f"no run {thread_id!r} in {store_name(store)}; `sopgraph runs list` shows the runs there"
    )


def store_name(store: Path | str) -> str:
    """``store`` as it may be printed: a ``postgres://`` URL without its password."""
    text = str(store)
    if not text.startswith(("postgres://", "postgresql://")):
        return text
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(text)
    if parts.password is None:
        return text
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class _Store:
    """One open checkpoint store: its saver, ``query`` with ``?`` parameters, its tables."""

    def __init__(self, conn: Any, saver: Any, where: Path | str, postgres: bool):
        self.conn, self.saver, self.where, self.postgres = conn, saver, where, postgres
        listing = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            if postgres
            else "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
        self.tables = {r[0] for r in self.query(listing)}

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            from psycopg.rows import tuple_row

            with self.conn.cursor(row_factory=tuple_row) as cur:
                return cur.execute(sql.replace("?", "%s"), args).fetchall()
        return self.conn.execute(sql, args).fetchall()

    def answers(self, thread_id: str) -> list[dict[str, Any]]:
        """The answer log of ``thread_id`` (none before any answer was given in the store)."""
        if "sopgraph_answers" not in self.tables:
            return []
        return [answer_entry(r) for r in self.query(HISTORY, (thread_id,))]


@contextmanager
def _open(store: Path | str) -> Iterator[_Store]:
    if str(store).startswith(("postgres://", "postgresql://")):
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        try:
            conn = psycopg.connect(str(store), autocommit=True, row_factory=dict_row)
        except psycopg.OperationalError as exc:
            first = (str(exc).strip().splitlines() or ["unreachable"])[0]
            raise RunsError(
                f"cannot open the checkpoint store {store_name(store)}: {first}"
            ) from None
        with conn:
            # a database no run has used yet holds no tables: an empty store
            yield _Store(conn, PostgresSaver(conn), store, postgres=True)
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    store = Path(store)
    if not store.is_file():
        raise RunsError(f"no checkpoint store at {store}")
    conn = sqlite3.connect(store, check_same_thread=False)
    try:
        db = _Store(conn, SqliteSaver(conn), store, postgres=False)
        if "checkpoints" not in db.tables or "writes" not in db.tables:
            raise RunsError(f"{store} is not a checkpoint store (no checkpoints table)")
        yield db
    finally:
        conn.close()


def _json(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):  # Postgres: jsonb
        return raw
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


def _journal_only(db: _Store) -> list[tuple[str, dict[str, Any]]]:
    """Threads the node journal holds and no checkpoint does, with their first run config."""
    if "sopgraph_invocations" not in db.tables:
        return []
    rows = db.query(
        "SELECT thread_id, configurable FROM sopgraph_invocations WHERE parent = ''"
        " AND thread_id NOT IN (SELECT thread_id FROM checkpoints) ORDER BY thread_id DESC"
    )
    return [(t, _json(c)) for t, c in rows]


def _stopped(thread_id: str, conf: dict[str, Any]) -> RunRecord:
    result = RunResult(thread_id=thread_id, sop_id=conf.get("sop_id") or "?", status="done")
    return RunRecord(
        thread_id=thread_id, sop_id=conf.get("sop_id"), sop_path=conf.get("sop_path"),
        status="stopped", outcome="stopped", started=_id_time(thread_id),
        final="stopped before its first checkpoint", result=result,
    )  # fmt: skip


def _record(db: _Store, thread_id: str) -> RunRecord:
    saver = db.saver
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
    elif (
        _unfinished(db, thread_id, latest.config)
        or meta.get("source") == "input"  # its input saved, no step taken: killed at its start
        or (any(k.startswith("branch:to:") for k in channels) and result.status == "done")
    ):
        status = "stopped"
    elif result.status in _FAILED:
        status = "failed"
    first = db.query(
        "SELECT MIN(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''",
        (thread_id,),
    )[0][0]
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


def _unfinished(db: _Store, thread_id: str, config: dict[str, Any]) -> bool:
    """Whether a journaled invocation started from the latest checkpoint and never wrote one."""
    if "sopgraph_invocations" not in db.tables:
        return False
    parent = (config.get("configurable") or {}).get("checkpoint_id") or ""
    return bool(
        db.query(
            "SELECT 1 FROM sopgraph_invocations WHERE thread_id = ? AND parent = ?",
            (thread_id, parent),
        )
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
