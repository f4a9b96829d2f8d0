"""A run's outcome as callers see it: built from the run state a checkpoint or an invocation gave."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from sopgraph.graphs.model import Verdict
from sopgraph.graphs.untrusted_text import serialisable

RunStatus = Literal["done", "interrupted", "refused", "unresolved", "unmatched", "bounded"]


class RunResult(BaseModel):
    """The outcome of a run (or of the part that ran before an interrupt).

    ``status``: ``interrupted`` (a gated action waits), else ``refused`` (a data source refused
    the run's identity access), else ``unresolved`` (a node no executor
    could decide), ``unmatched`` (a verdict matched none of a node's ``next.when`` branches),
    ``bounded`` (a loop ran out of ``max_visits`` without taking its exit), else ``done``.
    """

    thread_id: str
    sop_id: str
    status: RunStatus
    input: dict[str, Any] = Field(default_factory=dict)
    verdicts: dict[str, Verdict] = Field(default_factory=dict)
    path: list[str] = Field(default_factory=list)
    actions: list[dict[str, Any]] = Field(default_factory=list)
    trail: list[dict[str, Any]] = Field(default_factory=list)
    unresolved: dict[str, str] = Field(default_factory=dict)
    unmatched: dict[str, str] = Field(default_factory=dict)
    bounded: dict[str, str] = Field(default_factory=dict)
    refused: dict[str, str] = Field(default_factory=dict)
    interrupts: list[dict[str, Any]] = Field(default_factory=list)
    resumed: bool = False
    stored: bool = False  # the thread had already finished or paused: nothing was run now

    @property
    def interrupt(self) -> dict[str, Any] | None:
        return self.interrupts[0] if self.interrupts else None

    @computed_field
    @property
    def tokens(self) -> dict[str, int]:
        """LLM tokens the run spent (sub-agents, failed attempts and routers), from the trail."""
        return run_tokens(self.trail)


def run_tokens(trail: list[dict[str, Any]]) -> dict[str, int]:
    """Sum ``input_tokens``/``output_tokens`` of every step's ``detail``, its attempts' and its
    router's (``route``)."""
    n_in = n_out = 0
    for step in trail:
        details = [step.get("detail"), step.get("route")]
        details += [a.get("detail") for a in step.get("attempts") or []]
        for detail in details:
            if isinstance(detail, dict):
                n_in += int(detail.get("input_tokens") or 0)
                n_out += int(detail.get("output_tokens") or 0)
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}


def build_result(
    thread_id: str,
    sop_id: str,
    values: dict[str, Any],
    pending: Iterable[Any],
    *,
    resumed: bool = False,
    stored: bool = False,
) -> RunResult:
    """The ``RunResult`` of run state ``values`` and its ``pending`` interrupts (LangGraph's
    ``Interrupt``s)."""
    # Models and MCP servers wrote much of this: a lone surrogate must not stop the result
    # from serialising (`--json`, the MCP server's replies).
    values = serialisable(values)
    interrupts = serialisable(
        [
            {"id": i.id, **(i.value if isinstance(i.value, dict) else {"value": i.value})}
            for i in pending
        ]
    )
    unresolved = values.get("unresolved") or {}
    unmatched, bounded = values.get("unmatched") or {}, values.get("bounded") or {}
    status = next(
        (name for name, hit in (
            ("interrupted", interrupts), ("refused", values.get("refused")),
            ("unresolved", unresolved),
            ("unmatched", unmatched), ("bounded", bounded),
        ) if hit),
        "done",
    )  # fmt: skip
    trail = values.get("trail") or []
    return RunResult(
        thread_id=thread_id,
        sop_id=sop_id,
        status=status,
        input=values.get("input") or {},
        verdicts=values.get("verdicts") or {},
        path=[s["node"] for s in trail if s.get("status") not in ("bound",)],
        actions=values.get("actions") or [],
        trail=trail,
        unresolved=unresolved,
        unmatched=unmatched,
        bounded=bounded,
        refused=values.get("refused") or {},
        interrupts=interrupts,
        resumed=resumed,
        stored=stored,
    )
