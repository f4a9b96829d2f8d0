"""Run a candidate tool against cases inside the sandbox and grade what it returns.

A candidate is untrusted model output: it never runs in this process. One sandbox run per
candidate executes it on every case in turn through a small harness (a stand-in ``Verdict``,
a ``ctx`` whose ``mcp.call`` goes through the sandbox's tool proxy, and a driver for the
``async def run`` coroutine, since the sandbox allows no asyncio). A candidate that imports
``os``, opens a file or reaches the network stops the whole run: the validation fails with the
sandbox's own reason and no case counts as passed.

Example:
    >>> v = await validate(code, cases, params_for, catalog)  # doctest: +SKIP
    >>> v.ok, v.rate, v.reason                                # doctest: +SKIP
    (True, 0.97, None)
"""

from __future__ import annotations

import ast
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

from sopgraph.nodes.sandbox import SandboxLimits, SandboxUnavailable, run_code
from sopgraph.tools.jailed import harness
from sopgraph.tools.toolmaker.catalog import Catalog, preview
from sopgraph.tools.toolmaker.record import Case, CaseResult, McpExchange, Validation

VALUES = ("true", "false", "no_data")


def check_source(code: str) -> str | None:
    """Why ``code`` cannot be a tool before it runs (syntax, no ``async def run``), else None.

    Parsing only: nothing of the candidate executes here.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"syntax error line {exc.lineno}: {exc.msg}"
    runs = [n for n in tree.body if isinstance(n, ast.AsyncFunctionDef) and n.name == "run"]
    if not runs:
        return "the file defines no top-level `async def run(input, ctx)`"
    if len(runs[0].args.args) != 2:
        return "`run` must take exactly (input, ctx): the run's input and the context"
    return None


async def validate(
    code: str,
    cases: list[Case],
    params_for: Callable[[dict[str, Any]], dict[str, Any]],
    catalog: Catalog,
    *,
    node_id: str = "",
    node_text: str = "",
    limits: SandboxLimits | None = None,
) -> Validation:
    """Run ``code`` on ``cases`` in the sandbox; results in case order.

    Args:
        params_for: a case's run input -> the node's parameters for it (the parameter store).
        catalog: the MCP tools the candidate may call, served through the open pool.
    """
    start = time.perf_counter()
    problem = check_source(code)
    if problem:
        return Validation(ok=False, reason=problem, seconds=time.perf_counter() - start)
    payload = [
        {"input": c.run_input, "params": params_for(c.run_input), "node_id": node_id,
         "text": node_text}
        for c in cases
    ]  # fmt: skip
    n = max(1, len(cases))
    limits = limits or SandboxLimits(
        cpu_seconds=max(5, n // 5),
        wall_timeout_s=15 + 0.5 * n,
        max_tool_calls=20 * n,
        max_output_bytes=max(64_000, 4_000 * n),
    )
    nonce = secrets.token_hex(8)
    try:
        result = await run_code(harness(code, payload, nonce), catalog.sandbox_tools(), limits)
    except SandboxUnavailable as exc:
        return Validation(ok=False, reason=f"sandbox unavailable: {exc}")
    lines = {}
    for line in result.stdout.splitlines():
        if line.startswith(nonce + " "):
            row = json.loads(line[len(nonce) + 1 :])
            lines[row["i"]] = row
    calls = list(result.tool_calls)
    results: list[CaseResult] = []
    offset = 0
    for i, case in enumerate(cases):
        row = lines.get(i)
        if row is None:
            results.append(CaseResult(case=case, error=result.reason or "did not run"))
            continue
        mine = calls[offset : offset + row["calls"]]
        offset += row["calls"]
        exchanges = [
            McpExchange(
                server=c.tool.split(".", 1)[0],
                tool=c.tool.split(".", 1)[-1],
                args=c.args,
                result=preview(c.result),
                error=c.error,
            )
            for c in mine
        ]
        value, error = row.get("value"), row.get("error")
        if error is None and value not in VALUES:
            error = f"run returned verdict value {value!r}, not one of {', '.join(VALUES)}"
            value = None
        results.append(
            CaseResult(
                case=case,
                value=value if error is None else None,
                observed=row.get("observed"),
                threshold=row.get("threshold"),
                error=error,
                exchanges=exchanges,
            )
        )
    ok = result.ok
    reason = None if ok else (result.reason or "sandbox run failed")
    if not ok:
        detail = (result.error or "").strip().splitlines()
        if detail and detail[-1] not in reason:
            reason = f"{reason}: {detail[-1][:300]}"
        # A stopped run counts nothing as passed, whatever it printed before it was stopped.
        results = [
            CaseResult(case=r.case, error=f"sandbox: {reason}", exchanges=r.exchanges)
            for r in results
        ]
    return Validation(ok=ok, reason=reason, results=results, seconds=time.perf_counter() - start)
