"""Answering a paused run: which answers a run accepts, within the answering process's policy.

How far each approval policy lets gated actions go: ``reject`` executes none, ``ask`` pauses at
each, ``approve`` executes them. A run continued by another process never goes further than
that process's own policy, whatever the run was started with.
"""

from __future__ import annotations

from typing import Any

from sopgraph.graphs.approval import DecisionError, decide_approval
from sopgraph.graphs.input_schema import InputError

_REACH = {"reject": 0, "ask": 1, "approve": 2}


def within_policy(recorded: str | None, policy: str) -> str:
    """``recorded`` (a run's approval policy) unless it reaches further than ``policy``."""
    recorded = recorded or "ask"
    return recorded if _REACH.get(recorded, 2) <= _REACH[policy] else policy


def check_answer(
    thread_id: str, snapshot: Any, decision: Any, interrupt_id: str | None, policy: str
) -> list[str]:
    """The ids of the pending interrupts of ``thread_id`` (its ``snapshot``) that ``decision``
    answers, or one ``InputError`` saying why the run takes no such answer here."""
    if not snapshot.values:
        raise InputError(f"no run with thread id {thread_id!r}; start one with `sopgraph run`")
    if not snapshot.interrupts:
        state = "has finished" if not snapshot.next else "is not paused at a gated action"
        raise InputError(
            f"run {thread_id!r} {state}: it is not waiting for a decision, "
            "so there is nothing to approve or reject"
        )
    try:
        approves = decide_approval(decision)
    except DecisionError as exc:
        raise InputError(str(exc)) from None
    if approves and policy == "reject":
        raise InputError(
            f"run {thread_id!r} cannot be approved here: the approval policy is 'reject', "
            "which executes no gated action; answer 'reject', or resume it where "
            "approving is allowed"
        )
    ids = [i.id for i in snapshot.interrupts]
    if interrupt_id is not None:
        if interrupt_id not in ids:
            raise InputError(f"run {thread_id!r} has no pending interrupt {interrupt_id!r}")
        ids = [interrupt_id]
    return ids


def continues_killed_resume(killed: Any, decision: Any) -> bool:
    """Whether ``decision`` is the answer a stopped resume (``killed``, a journaled invocation)
    carried, so answering again continues that resume; any other answer is refused."""
    return killed.kind == "resume" and all(
        decide_approval(a) == decide_approval(decision) for a in killed.payload.values()
    )


def killed_resume_error(thread_id: str) -> InputError:
    """The error for an answer to a run whose answered resume was stopped mid-way."""
    return InputError(
        f"run {thread_id!r} was already answered and continued by a process that "
        f"was stopped; finish it with `sopgraph run --thread {thread_id}` (or "
        "run_sop with its thread id), which repeats no finished node"
    )
