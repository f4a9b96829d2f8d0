"""Logged conversations in ABCD's turn format, and their replay against a dialogue SOP: the SOP
runs on the conversation's scenario (served by the SOP's own data server) and its judge reads
the conversation, giving the path the procedure calls for.

A conversation is ABCD's: ``convo_id``, ``scenario`` (personal, order, product, flow,
subflow), ``original`` ([speaker, text] turns: agent, customer, action) and ``delexed`` (the
same turns; an action turn's ``targets[2]`` is the button the agent clicked). This project
adds one optional key, ``conditions``: the conversation conditions that hold, each with the
index of the turn from which it holds (the labels a scripted judge answers from).

Example:
    >>> conv = read_conversation(Path("examples/abcd/data/abcd_sample.json"), "3592")
    >>> async with Replayer("examples/abcd/return_size", [conv]) as r:
    ...     steps, stop = await r.expected(conv)
"""

from __future__ import annotations

import json
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sopgraph.graphs.model import Sop
from sopgraph.nodes.label_judge import LabelJudge
from sopgraph.nodes.mcp import McpPool, load_server_configs
from sopgraph.runtime.runner import InputError, Session

JUDGES = ("labels", "model")
LEVELS = ("gold", "silver", "bronze", "guest")  # ABCD's membership levels


class ConversationError(InputError):
    """A conversation file or option the user must fix; ``str`` is one line."""


@dataclass
class Turn:
    index: int
    speaker: str  # agent, customer or action
    text: str
    button: str | None = None  # an action turn's button (kb.json's name)


@dataclass
class Conversation:
    convo_id: str
    scenario: dict[str, Any]
    turns: list[Turn]
    conditions: dict[str, int] | None = None  # the labels; None: a model must judge
    entry: str | None = None  # the SOP entry (input ``type``) when it has several

    @property
    def actions(self) -> list[Turn]:
        return [t for t in self.turns if t.speaker == "action"]

    def dialogue(self, upto: int | None = None) -> list[list[str]]:
        """The turns as ``[speaker, text]`` (what the judge reads), the first ``upto``."""
        return [[t.speaker, t.text] for t in self.turns[:upto]]

    def to_abcd(self) -> dict[str, Any]:
        """The conversation in ABCD's shape (``original`` and ``delexed``), labels kept."""
        intent = self.scenario.get("subflow", "")
        delexed = []
        for t in self.turns:
            kind = "take_action" if t.button else "retrieve_utterance"
            delexed.append(
                {"speaker": t.speaker, "text": t.text, "turn_count": t.index + 1,
                 "targets": [intent, kind, t.button, [], -1]}
            )  # fmt: skip
        out: dict[str, Any] = {"convo_id": self.convo_id, "scenario": self.scenario}
        out |= {"original": self.dialogue(), "delexed": delexed}
        if self.conditions is not None:
            out["conditions"] = self.conditions
        if self.entry is not None:
            out["entry"] = self.entry
        return out


def parse_conversation(raw: Any, where: str) -> Conversation:
    """One ABCD conversation object; a malformed one is one ``ConversationError`` line."""
    try:
        original = raw["original"]
        delexed = raw.get("delexed") or [{} for _ in original]
        turns = []
        for i, ((speaker, text), d) in enumerate(zip(original, delexed, strict=True)):
            button = None
            if speaker == "action":
                targets = d.get("targets") or []
                button = targets[2] if len(targets) > 2 and targets[2] else None
                if button is None:
                    raise ConversationError(
                        f"{where}: action turn {i} names no button (delexed[{i}].targets[2]); "
                        "give ABCD's delexed turns"
                    )
            turns.append(Turn(i, str(speaker), str(text), button))
        conditions = raw.get("conditions")
        if conditions is not None:
            conditions = {str(k): int(v) for k, v in conditions.items()}
        entry = raw.get("entry")
        return Conversation(
            str(raw["convo_id"]), dict(raw["scenario"]), turns, conditions, entry and str(entry)
        )
    except ConversationError:
        raise
    except (KeyError, TypeError, ValueError):
        raise ConversationError(
            f"{where}: not an ABCD conversation (convo_id, scenario, original, delexed)"
        ) from None


def read_conversations(path: Path) -> list[Conversation]:
    """The conversations of a file: one ABCD conversation or a list of them (abcd_sample.json)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConversationError(f"{path}: no such conversation file") from None
    except json.JSONDecodeError as exc:
        raise ConversationError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    items = data if isinstance(data, list) else [data]
    return [parse_conversation(c, f"{path}[{i}]") for i, c in enumerate(items)]


def read_conversation(path: Path, convo_id: str | None = None) -> Conversation:
    """The one conversation of ``path``, or the one with ``convo_id`` in a list."""
    convs = read_conversations(path)
    if convo_id is not None:
        found = [c for c in convs if c.convo_id == str(convo_id)]
        if not found:
            ids = ", ".join(c.convo_id for c in convs)
            raise ConversationError(f"{path}: no conversation {convo_id}; it holds {ids}")
        return found[0]
    if len(convs) != 1:
        ids = ", ".join(c.convo_id for c in convs)
        raise ConversationError(
            f"{path} holds {len(convs)} conversations ({ids}); pick one with --convo"
        )
    return convs[0]


@dataclass
class Step:
    """One node of the path the SOP took: a decision with its verdict and executor, or an
    action with its button."""

    node: str
    kind: str
    verdict: str | None = None
    executor: str | None = None
    explanation: str = ""
    fired: list[str] = field(default_factory=list)
    button: str | None = None


def serve_scenarios(sop_dir: Path, scenarios_file: Path) -> dict[str, Any]:
    """The SOP's data servers with every ``--scenarios FILE`` argument pointing at ours."""
    configs = load_server_configs(sop_dir)
    for cfg in configs.values():
        if "--scenarios" in cfg.args:
            cfg.args[cfg.args.index("--scenarios") + 1] = str(scenarios_file)
    return configs


class Replayer:
    """An SOP opened to replay conversations: their scenarios served by its data server, a
    judge for its conversation conditions (``labels``: each conversation's ``conditions``;
    ``model``: the configured model, SOPGRAPH_MODEL).

    ``today`` fills a scenario's ``today`` (the date return windows count to) when it has none:
    ABCD's own scenarios do not record the conversation's date.
    """

    def __init__(
        self,
        sop_path: str | Path,
        conversations: list[Conversation],
        judge: str = "labels",
        today: str | None = None,
    ) -> None:
        if judge not in JUDGES:
            raise ConversationError(f"--judge {judge}: use one of {', '.join(JUDGES)}")
        if judge == "labels":
            unlabelled = [c.convo_id for c in conversations if c.conditions is None]
            if unlabelled:
                raise ConversationError(
                    f"conversation {', '.join(unlabelled)} has no 'conditions' labels for the "
                    "scripted judge; pass --conditions FILE or --judge model (SOPGRAPH_MODEL)"
                )
        self.sop_path, self.judge_kind, self.today = Path(sop_path), judge, today
        self.conversations = conversations
        self.labels = LabelJudge()
        self._stack = AsyncExitStack()
        self.session: Session | None = None

    @property
    def sop(self) -> Sop:
        assert self.session is not None
        return self.session.sop

    async def __aenter__(self) -> Replayer:
        tmp = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="sopgraph-")))
        scenarios = {}
        for c in self.conversations:
            s = dict(c.scenario)
            if self.today and "today" not in s:
                s["today"] = self.today
            scenarios[c.convo_id] = s
            level = (s.get("personal") or {}).get("member_level")
            for other in LEVELS if level in LEVELS else ():  # the same customer, another level
                personal = {**s["personal"], "member_level": other}
                scenarios[f"{c.convo_id}@{other}"] = {**s, "personal": personal}
        path = tmp / "scenarios.json"
        path.write_text(json.dumps(scenarios), encoding="utf-8")
        sop_dir = self.sop_path if self.sop_path.is_dir() else self.sop_path.parent
        pool = McpPool(serve_scenarios(sop_dir, path))
        kw: dict[str, Any] = {"checkpoint": "memory", "journal": False, "mcp_pool": pool}
        if self.judge_kind == "labels":
            from sopgraph.nodes.judge import JudgeExecutor

            kw |= {"executors": [JudgeExecutor(judge=self.labels)], "router": self.labels}
        else:
            from sopgraph.nodes.architectures import load_models

            models = load_models()
            if models.chat is None:
                raise ConversationError(
                    "--judge model needs a model: set SOPGRAPH_MODEL (e.g. local)"
                )
            kw |= {"arch": "direct", "model": models.chat, "lm": models.lm}
        self.session = await self._stack.enter_async_context(Session(self.sop_path, **kw))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def expected(
        self, conv: Conversation, upto: int | None = None, level: str | None = None
    ) -> tuple[list[Step], str | None]:
        """The SOP's path on ``conv`` (its first ``upto`` turns; with ``level``, as if the
        customer had that membership level), and why it stopped early (a node no executor
        could decide, or data the scenario lacks), or None when it ran to an end."""
        assert self.session is not None
        self.labels.labels, self.labels.upto = dict(conv.conditions or {}), upto
        sid = conv.convo_id if level is None else f"{conv.convo_id}@{level}"
        inp: dict[str, Any] = {"scenario_id": sid, "conversation": conv.dialogue(upto)}
        if conv.entry is not None:
            inp["type"] = conv.entry
        result = await self.session.run(inp)
        sop = self.session.sop
        steps = []
        for s in result.trail:
            node = sop.nodes[s["node"]]
            if s.get("status") not in ("decided", "executed"):
                continue
            button = node.api.name if node.is_action and node.api else None
            if node.is_action and button is None:
                button = node.id
            steps.append(
                Step(node.id, node.kind, s.get("verdict"), s.get("executor"),
                     str(s.get("explanation") or ""), list(s.get("fired") or []), button)
            )  # fmt: skip
        stop = None
        problems = {**result.unresolved, **result.unmatched, **result.refused}
        for st in steps:  # no data and no branch for it: the path cannot go on
            if st.verdict == "no_data" and not st.fired:
                problems.setdefault(st.node, f"no data ({st.explanation})")
        if problems:
            stop = "; ".join(f"{n}: {why}" for n, why in problems.items())
        return steps, stop
