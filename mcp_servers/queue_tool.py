"""``submit_run``: sopgraph's MCP server puts a run on the job queue (``runtime/queue.py``) for
the queue's workers instead of running it itself, when served with ``--queue``."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

# the run it queues performs the SOP's actions, as run_sop does
_SUBMIT = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)


class QueuedRun(BaseModel):
    """A run put on the job queue."""

    run_id: str = Field(description="Pass to get_run once a worker ran it, and to resume_run.")
    sop_id: str
    job_id: int = Field(description="The run's job on the queue.")
    status: Literal["queued"] = "queued"


def add_queue_tool(
    server: Any, catalog: Any, dsn: str, policy_of: Callable[[str, Context], tuple[str, str]]
) -> None:
    """Offer ``submit_run`` on ``server``: a run of a ``catalog`` SOP queued at ``dsn``;
    ``policy_of(asked approval, ctx)`` gives the run's policy and who set it, as for run_sop."""

    @server.tool(annotations=_SUBMIT)
    async def submit_run(
        sop_id: Annotated[str, Field(description="An SOP id as returned by list_sops.")],
        input: Annotated[  # noqa: A002 - the tool's argument, as run_sop names it
            dict[str, Any], Field(description="The run input, as for run_sop.")
        ],
        ctx: Context,
        thread_id: Annotated[
            str | None, Field(description="Optional thread id (default: a new one).")
        ] = None,
        approval: Annotated[
            Literal["ask", "approve", "reject"],
            Field(description="What to do at gated actions, as for run_sop."),
        ] = "ask",
    ) -> QueuedRun:
        """Put a run of an SOP on the job queue, for a queue worker to run, and return its
        run_id at once; get_run shows its result once a worker ran it (status 'not found'
        until its first checkpoint)."""
        from sopgraph.runtime.queue import QueueError, submit
        from sopgraph.runtime.runner import InputError

        entry = catalog.get(sop_id)
        policy, who = policy_of(approval, ctx)
        run_id = f"{entry.sop.id}:{thread_id or uuid.uuid4().hex[:12]}"
        try:
            (queued,) = await submit(
                dsn, entry.path, [input], approval=policy, approver=who, thread_ids=[run_id]
            )
        except (InputError, QueueError) as exc:
            raise ToolError(str(exc)) from None
        return QueuedRun(run_id=run_id, sop_id=entry.sop.id, job_id=queued.job_id)
