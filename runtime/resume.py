"""Answering a paused run: which answers a run accepts, within the answering process's policy.

How far each approval policy lets gated actions go: ``reject`` executes none, ``ask`` pauses at
each, ``approve`` executes them. A run continued by another process never goes further than
that process's own policy, whatever the run was started with.
"""

from __future__ import annotations

from typing import Any

from langgraph.types import Command

from sopgraph.graphs.approval import DecisionError, decide_approval
from sopgraph.graphs.input_schema import InputError
from sopgraph.runtime.answers import Answer, AnswerBook, now


class StaleAnswer(InputError):
    """An answer to a gated action the run no longer waits on (answered, or never asked)."""


_REACH = {"reject": 0, "ask": 1, "approve": 2}


def within_policy(recorded: str | None, policy: str) -> str:
    """``recorded`` (a run's approval policy) unless it reaches further than ``policy``."""
    recorded = recorded or "ask"
    return recorded if _REACH.get(recorded, 2) <= _REACH[policy] else policy


def pending_answered(
    thread_id: str,
    snapshot: Any,
    decision: Any,
    interrupt_id: str | None,
    policy: str,
    node: str | None = None,
) -> Any:
    """The pending interrupt of ``thread_id`` (its ``snapshot``) that ``decision`` answers: the
    one named by ``interrupt_id`` (and ``node``, when given), or the only one at ``node``. One
    ``InputError`` says why the run takes no such answer here: nothing pending, a word that is
    neither approve nor reject, an approval under ``reject``, an answer naming no gated action
    (it would answer whichever gate is pending when it arrives) or one the run no longer waits
    on (``stale``: a duplicate or late answer)."""
    if not snapshot.values:
        raise InputError(f"no run with thread id {thread_id!r}; start one with `sopgraph run`")
    if not snapshot.interrupts:
        state = "has finished" if not snapshot.next else "is not paused at a gated action"
        raise StaleAnswer(
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
    pending = list(snapshot.interrupts)
    waits = "; ".join(f"node {gate_node(i)!r} (interrupt {i.id})" for i in pending)
    if interrupt_id is None and node is None:
        raise InputError(
            f"run {thread_id!r}: name the gated action this answer is for, or it would answer "
            f"whichever one is pending when it arrives; the run waits at {waits} "
            "(--interrupt ID or --node NODE; resume_run's interrupt_id)"
        )
    matches = [
        i for i in pending
        if (interrupt_id is None or i.id == interrupt_id) and (node is None or gate_node(i) == node)
    ]  # fmt: skip
    if not matches:
        named = f"interrupt {interrupt_id!r}" if interrupt_id else f"node {node!r}"
        raise StaleAnswer(
            f"run {thread_id!r} is not waiting at {named}: it waits at {waits}; "
            "an answer is for the gated action it was shown for"
        )
    if len(matches) > 1:
        raise InputError(f"run {thread_id!r} waits at {waits}: name one with its interrupt id")
    return matches[0]


def gate_node(intr: Any) -> str:
    """The action node a pending interrupt waits at ("" for one sopgraph did not raise)."""
    return str(intr.value.get("node", "")) if isinstance(intr.value, dict) else ""


def decision_word(decision: Any) -> str:
    """``approve`` or ``reject`` for a decision ``decide_approval`` takes."""
    return "approve" if decide_approval(decision) else "reject"


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


class DuplicateAnswer(InputError):
    """An answer to a gated action another answer already claimed: it changed nothing."""


async def claim_gate(book: AnswerBook, answer: Answer) -> None:
    """Claim ``answer``'s interrupt before it drives the run, or raise ``DuplicateAnswer``
    naming the answer that holds it. A claim whose process stopped mid-way (killed inside the
    action, say) is taken over by an answer with the same decision, so it is continued once;
    every outcome goes in the answer log."""
    held = await book.claim(answer)
    if held is None:
        await book.log(answer, "accepted")
        return
    gate = (
        f"run {answer.thread_id!r}: gated action {answer.node!r} (interrupt {answer.interrupt_id})"
    )
    if held.abandoned and held.answer.decision == answer.decision:
        if await book.take_over(held, answer):
            await book.log(answer, "continued", f"took over {held.answer.words()}, stopped mid-way")
            return
    await book.log(answer, "duplicate", f"claimed by {held.answer.words()}")
    if held.abandoned:
        raise DuplicateAnswer(
            f"{gate} was answered {held.answer.words()} by a process that stopped mid-way; "
            f"only the same decision continues it (`sopgraph run --thread {answer.thread_id}`)"
        )
    state = "and is being carried out now" if held.state == "claimed" else ""
    raise DuplicateAnswer(
        f"{gate} was already answered {held.answer.words()} {state}; this answer "
        f"({answer.decision!r} by {answer.by}) changed nothing".replace("  ", " ")
    )


async def log_refused(
    book: AnswerBook, thread_id: str, interrupt_id: str | None, node: str | None,
    decision: Any, by: str, error: InputError,
) -> InputError:  # fmt: skip
    """Record an answer the run did not take (stale, refused) and give back its error, with
    who answered the interrupt it names when that is known."""
    outcome = "stale" if isinstance(error, StaleAnswer) else "refused"
    if interrupt_id:
        earlier = [
            a for a in await book.history(thread_id)
            if a["interrupt_id"] == interrupt_id and a["outcome"] in ("accepted", "continued")
        ]  # fmt: skip
        if earlier:
            a = earlier[-1]
            error = type(error)(f"{error} (interrupt {interrupt_id} was answered "
                                f"{a['decision']!r} by {a['by']} at {a['at']})")  # fmt: skip
    word = str(decision) if not isinstance(decision, dict) else str(decision.get("decision"))
    answer = Answer(thread_id, interrupt_id or "", node or "", word[:40], by, now())
    await book.log(answer, outcome, str(error)[:500])
    return error


async def answer_gate(
    session: Any,
    thread_id: str,
    decision: Any,
    interrupt_id: str | None,
    node: str | None,
    on_step: Any,
    approver: str | None,
    approval: str | None,
) -> Any:
    """``Session.resume``: check the answer against the pending gate it names, claim that
    gate, then drive the run with the answer bound to it (its key) and mark the claim."""
    policy = approval or session.approval
    # The answer decides the action it answers (a reject stands under any policy); later
    # gated actions of this resume pause for their own answer.
    config = session._config(thread_id, "ask")
    snapshot = await session.graph.aget_state(config)
    book, by = session.answers, approver or "unknown (no approver given)"
    try:
        intr = pending_answered(thread_id, snapshot, decision, interrupt_id, policy, node)
    except InputError as exc:
        raise await log_refused(book, thread_id, interrupt_id, node, decision, by, exc) from None
    gate = gate_node(intr)
    await claim_gate(book, Answer(thread_id, intr.id, gate, decision_word(decision), by, now()))
    try:
        killed = session._killed_invocation(thread_id, snapshot)
        if killed is not None:  # answered before, and that resume was killed
            if not continues_killed_resume(killed, decision):
                raise killed_resume_error(thread_id)
            result = await session._continue_journaled(
                thread_id, killed, on_step, snapshot, policy, approver
            )
        else:
            key = intr.value.get("key") if isinstance(intr.value, dict) else None
            answer = {"decision": decision, "by": approver, "node": gate, "key": key}
            resume = Command(resume={intr.id: answer})
            result = await session._invoke(resume, config, on_step, "resume", snapshot)
    except BaseException:
        await book.stop(thread_id, intr.id)
        raise
    await book.finish(thread_id, intr.id)
    return result


async def take_over_resume(
    book: AnswerBook, thread_id: str, killed: Any, approver: str | None
) -> list[str]:
    """Claim each gate a stopped resume (``killed``) answered, for its continuation
    (``claim_gate``): a continuation running elsewhere now, or another answer, raises
    ``DuplicateAnswer``; the interrupt ids claimed."""
    for interrupt_id, value in (killed.payload or {}).items():
        who = approver or (value.get("by") if isinstance(value, dict) else None)
        node = value.get("node", "") if isinstance(value, dict) else ""
        answer = Answer(
            thread_id, interrupt_id, node or "", decision_word(value), who or "?", now()
        )
        await claim_gate(book, answer)
    return list(killed.payload or {})
