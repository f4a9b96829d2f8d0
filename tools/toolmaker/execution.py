"""Candidates chosen by execution: a spec runs on the training cases on the host.

A spec that passed field-by-field validation is data, not model-written code: the host runs it
through ``sopgraph.tools.spec`` (parameterised queries through the kit), so it does not pay
the sandbox's start-up. Every MCP reply is cached by (server, tool, arguments) for the make,
so the many candidates and the search's variants that read the same data query it once.

Example:
    >>> runner = SpecRunner(pool, params_for)                       # doctest: +SKIP
    >>> score = await runner.score(spec_dict, train)               # doctest: +SKIP
    >>> score.passed, score.cases                                  # doctest: +SKIP
    (88, 90)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sopgraph.tools.spec import Check, SpecError, trace
from sopgraph.tools.toolmaker.record import Case, CaseResult

CONCURRENCY = 16


class CachedMcp:
    """``call(server, tool, args)`` through the pool, each distinct call made once."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.cache: dict[str, Any] = {}
        self.calls = 0

    async def call(self, server: str, tool: str, args: dict[str, Any]) -> Any:
        key = json.dumps([server, tool, args], sort_keys=True, default=str)
        if key not in self.cache:
            self.calls += 1
            try:
                self.cache[key] = ("ok", await self.pool.call(server, tool, args))
            except Exception as exc:  # noqa: BLE001 - the same error again, from the cache
                self.cache[key] = ("error", exc)
        kind, value = self.cache[key]
        if kind == "error":
            raise value
        return value

    async def list_tools(self, server: str) -> Any:
        """The pool's tool list (``kit.sql`` reads which SQL tool a server has)."""
        return await self.pool.list_tools(server)


@dataclass
class Score:
    passed: int = 0
    cases: int = 0
    problem: str | None = None  # the spec did not validate, or raised on every case
    results: list[CaseResult] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0


class SpecRunner:
    def __init__(self, pool: Any, params_for: Callable[[dict[str, Any]], dict[str, Any]]):
        self.mcp = CachedMcp(pool)
        self.params_for = params_for
        self._sem = asyncio.Semaphore(CONCURRENCY)

    async def one(self, check: Check, case: Case) -> CaseResult:
        inp = case.run_input
        ctx = SimpleNamespace(params=self.params_for(inp), mcp=self.mcp)
        async with self._sem:
            try:
                verdict, seen = await trace(check, inp, ctx)
            except Exception as exc:  # noqa: BLE001 - a raising spec fails the case
                return CaseResult(case=case, error=f"{type(exc).__name__}: {exc}"[:300])
        return CaseResult(
            case=case, value=verdict.value, observed={"value": verdict.observed, "read": seen},
            threshold=verdict.threshold,
        )  # fmt: skip

    async def score(self, spec: dict[str, Any] | Check, cases: list[Case]) -> Score:
        try:
            check = Check.from_dict(spec)
        except SpecError as exc:
            return Score(cases=len(cases), problem=f"spec rejected: {exc}")
        results = await asyncio.gather(*(self.one(check, c) for c in cases))
        score = Score(
            passed=sum(r.correct for r in results), cases=len(cases), results=list(results)
        )
        errors = [r.error for r in results if r.error]
        if errors and len(errors) == len(results):
            score.problem = f"every case raised, e.g. {errors[0]}"
        return score


def failures_text(score: Score, limit: int = 4) -> str:
    """The failing cases with what the spec measured: the reflector's evidence."""
    if score.problem:
        return score.problem
    wrong = [r for r in score.results if not r.correct]
    if not wrong:
        return "none"
    out = [f"{len(wrong)} of {score.cases} training cases wrong; for example:"]
    for r in wrong[:limit]:
        c = r.case
        got = r.value if r.error is None else f"error {r.error}"
        measured = json.dumps(r.observed, default=str)[:300] if r.observed else "-"
        out.append(
            f"- site={c.site} time={c.timestamp} station={c.input.get('station')}: expected "
            f"{c.expected}, got {got}; measured {measured}"
        )
    return "\n".join(out)
