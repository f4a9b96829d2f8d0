"""Plain-text rendering of a run for the terminal."""

from __future__ import annotations

from typing import Any


def _short(value: Any, width: int = 60) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def format_run(result: Any) -> str:
    """A run as lines: status, each step with its verdict, actions, interrupts and open nodes."""
    lines = [
        f"run {result.thread_id} ({result.sop_id}): {result.status}"
        + (" (resumed)" if result.resumed else "")
        + (
            " (stored result: this thread ran before; use a new --thread to run again)"
            if getattr(result, "stored", False)
            else ""
        )
    ]
    for step in result.trail:
        status = step.get("status")
        verdict = step.get("verdict") or ""
        observed = step.get("observed")
        extra = f" observed={_short(observed)}" if observed is not None else ""
        if step.get("threshold") is not None:
            extra += f" threshold={step['threshold']}"
        via = step.get("executor") or step.get("approval") or ""
        err = f"  ({step['error']})" if step.get("error") else ""
        lines.append(f"  {step['node']:<40} {status:<10} {verdict:<8} {via}{extra}{err}")
    for act in result.actions:
        lines.append(f"  action {act['node']}: {act['status']} (by {act['by']})")
    for intr in result.interrupts:
        lines.append(
            f"  waiting: {intr.get('node')} needs approval; resume with "
            f"`sopgraph resume <sop> --thread {result.thread_id} --decision approve|reject`"
        )
    for node, why in result.unresolved.items():
        lines.append(f"  unresolved: {node}: {why}")
    tokens = getattr(result, "tokens", None) or {}
    if tokens.get("total_tokens"):
        lines.append(f"  LLM tokens: {tokens['input_tokens']} in, {tokens['output_tokens']} out")
    return "\n".join(lines)
