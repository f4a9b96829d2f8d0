"""Audit a logged conversation against a dialogue SOP, and predict the next action of a prefix.

The SOP's path on the conversation (``runtime.dialogue.Replayer``: data conditions decided by
the compiled tools on the scenario, conversation conditions by the judge) gives the actions the
procedure calls for; the agent's action turns are aligned with them in order (a longest common
subsequence of buttons). Each action turn then satisfies a step or is a violation:

- ``out_of_order``: a step of the path, done at the wrong place;
- ``membership``: an action of a branch the customer's membership level rules out;
- ``not_called_for``: an action of a branch the conversation's (or the data's) conditions did
  not call for, or no step of the SOP at all;

and each step of the path that no action satisfies is ``missing``. Two notes are not
violations: ``repeated`` (the same button again right after, a retry) and ``unchecked`` (an
action after the point where the SOP could not decide, e.g. data the scenario lacks).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sopgraph.graphs.model import Node, Sop
from sopgraph.runtime.dialogue import LEVELS, Conversation, Replayer, Step

VIOLATIONS = ("missing", "out_of_order", "membership", "not_called_for")
NOTES = ("ok", "repeated", "unchecked")
MEMBERSHIP_DATA = "customer.member_level"


@dataclass
class Finding:
    """What one action turn did (``kind`` ok or a violation or a note), or a missing step."""

    kind: str
    turn: int | None  # the action turn; None for a missing step
    button: str
    step: str | None = None  # the SOP node it satisfies, or the missing one
    detail: str = ""

    @property
    def violation(self) -> bool:
        return self.kind in VIOLATIONS


@dataclass
class AuditReport:
    sop_id: str
    convo_id: str
    member_level: str | None
    decisions: list[Step]
    expected: list[Step]  # the action steps of the path
    findings: list[Finding]
    stopped: str | None = None  # why the SOP's path stopped early

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.violation]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["violations"] = len(self.violations)
        return out


def is_membership_node(node: Node) -> bool:
    return not node.is_action and MEMBERSHIP_DATA in node.data


def reachable_buttons(sop: Sop, starts: list[str]) -> dict[str, str]:
    """Button -> the first action node with it, among the nodes reachable from ``starts``."""
    seen: set[str] = set()
    out: dict[str, str] = {}
    todo = list(starts)
    while todo:
        nid = todo.pop(0)
        if nid in seen or nid not in sop.nodes:
            continue
        seen.add(nid)
        node = sop.nodes[nid]
        if node.is_action:
            out.setdefault(button_of(node), nid)
        todo += node.next.children()
    return out


def button_of(node: Node) -> str:
    return node.api.name if node.api else node.id


def branches_not_taken(sop: Sop, decisions: list[Step]) -> list[tuple[Step, dict[str, str]]]:
    """For each decision on the path: the buttons of the branches it did not take."""
    out = []
    for d in decisions:
        node = sop.nodes[d.node]
        other = [c for c in node.next.children() if c not in d.fired]
        if other:
            out.append((d, reachable_buttons(sop, other)))
    return out


def _lcs(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b`` (earliest matches)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
            )
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def compare(
    sop: Sop,
    steps: list[Step],
    conv: Conversation,
    stopped: str | None = None,
    other_levels: dict[str, list[Step]] | None = None,
) -> list[Finding]:
    """The findings of ``conv``'s action turns against the path ``steps`` (see the module);
    ``other_levels``: the paths the same conversation takes at the other membership levels."""
    expected = [s for s in steps if s.button]
    decisions = [s for s in steps if not s.button]
    actions = conv.actions
    pairs = _lcs([s.button or "" for s in expected], [t.button or "" for t in actions])
    by_turn = {actions[j].index: expected[i] for i, j in pairs}
    open_steps = [i for i in range(len(expected)) if i not in {p[0] for p in pairs}]
    not_taken = branches_not_taken(sop, decisions)
    findings: list[Finding] = []
    previous: str | None = None
    for t in actions:
        button = t.button or ""
        if t.index in by_turn:
            findings.append(Finding("ok", t.index, button, by_turn[t.index].node))
        elif same := [i for i in open_steps if expected[i].button == button]:
            open_steps.remove(same[0])
            step = expected[same[0]]
            findings.append(
                Finding("out_of_order", t.index, button, step.node, _order_detail(step, expected))
            )
        elif previous == button:
            findings.append(Finding("repeated", t.index, button, None, "the same action again"))
        else:
            on_path = {s.button for s in expected}
            levels = {
                lv: next(s.node for s in path if s.button == button)
                for lv, path in (other_levels or {}).items()
                if button not in on_path and any(s.button == button for s in path)
            }
            if levels and not stopped:
                lv, node = next(iter(levels.items()))
                why = (
                    f"{node} is the SOP's step for {', '.join(levels)} members, not {_level(conv)}"
                )
                findings.append(Finding("membership", t.index, button, node, why))
            else:
                findings.append(_off_path(sop, t.index, button, not_taken, stopped))
        previous = button
    for i in open_steps:
        step = expected[i]
        done = [actions[j].index for k, j in pairs if k < i]
        where = f"expected after turn {done[-1]}" if done else "expected before any action"
        findings.append(Finding("missing", None, step.button or "", step.node, where))
    return findings


def _order_detail(step: Step, expected: list[Step]) -> str:
    i = expected.index(step)
    before = f"after {expected[i - 1].node}" if i else "first"
    return f"step {step.node} comes {before} in the SOP"


def _off_path(
    sop: Sop,
    turn: int,
    button: str,
    not_taken: list[tuple[Step, dict[str, str]]],
    stopped: str | None,
) -> Finding:
    if stopped:
        return Finding("unchecked", turn, button, None, f"the SOP stopped: {stopped}")
    for d, buttons in not_taken:
        if button in buttons:
            why = (
                f"{buttons[button]} is on the {_other(d)} branch of {d.node} "
                f"({sop.nodes[d.node].text}: {d.verdict}, by {d.executor})"
            )
            return Finding("not_called_for", turn, button, buttons[button], why)
    anywhere = reachable_buttons(sop, list(sop.nodes))
    if button in anywhere:
        return Finding("not_called_for", turn, button, anywhere[button], "not on this path")
    return Finding("not_called_for", turn, button, None, "no step of this SOP")


def _level(conv: Conversation) -> str:
    return str((conv.scenario.get("personal") or {}).get("member_level"))


def _other(d: Step) -> str:
    return {"true": "false", "false": "true"}.get(str(d.verdict), "other")


async def audit(replayer: Replayer, conv: Conversation) -> AuditReport:
    """Replay ``conv`` with ``replayer`` and compare its action turns with the SOP's path."""
    steps, stopped = await replayer.expected(conv)
    sop = replayer.sop
    level = _level(conv)
    others = {}
    if any(is_membership_node(sop.nodes[s.node]) for s in steps) and level in LEVELS:
        for other in LEVELS:  # what the same conversation calls for at another level
            if other != level:
                others[other] = (await replayer.expected(conv, level=other))[0]
    return AuditReport(
        sop_id=sop.id,
        convo_id=conv.convo_id,
        member_level=level,
        decisions=[s for s in steps if not s.button],
        expected=[s for s in steps if s.button],
        findings=compare(sop, steps, conv, stopped, others),
        stopped=stopped,
    )


@dataclass
class NextAction:
    """Where a conversation prefix stands in the SOP and what comes next."""

    turn: int  # the prefix is the turns before this one
    reached: str | None  # the last step the prefix's actions satisfied
    next_step: str | None  # the next action node (None: the path ends or cannot be decided)
    button: str | None
    decided_by: list[dict[str, Any]] = field(default_factory=list)  # decisions between them
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def next_action(replayer: Replayer, conv: Conversation, turn: int) -> NextAction:
    """The SOP step the first ``turn`` turns reached and the next action: the graph decides
    data conditions exactly (compiled tools), the judge those on the conversation prefix."""
    # the judge must not read ahead
    prefix = Conversation(
        conv.convo_id, conv.scenario, conv.turns[:turn], conv.conditions, conv.entry
    )
    steps, stopped = await replayer.expected(prefix, upto=turn)
    expected = [i for i, s in enumerate(steps) if s.button]
    pairs = _lcs(
        [steps[i].button or "" for i in expected], [t.button or "" for t in prefix.actions]
    )
    last = expected[pairs[-1][0]] if pairs else -1
    reached = steps[last].node if last >= 0 else None
    after = [i for i in expected if i > last]
    if not after:
        return NextAction(turn, reached, None, None, _between(steps, last, len(steps)), stopped)
    nxt = steps[after[0]]
    return NextAction(turn, reached, nxt.node, nxt.button, _between(steps, last, after[0]))


def _between(steps: list[Step], start: int, end: int) -> list[dict[str, Any]]:
    return [
        {"node": s.node, "verdict": s.verdict, "executor": s.executor}
        for s in steps[start + 1 : end]
        if not s.button
    ]
