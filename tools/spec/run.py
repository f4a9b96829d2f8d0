"""A spec run: lookups, then every measurement, then the value, the comparison and the verdict.

The kit builds nothing here that a person has to repeat: ``observed`` is the value in the SOP
text's unit (after ``scale``), ``threshold`` the parameter's value, and the explanation names
each measurement's number. What each query was is kept on the verdict's explanation only in
short form; ``trace(check, input, ctx)`` returns the queries too, for the make record.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sopgraph.graphs.model import Verdict
from sopgraph.tools.spec import fields, rows, series
from sopgraph.tools.spec.bind import Bound
from sopgraph.tools.spec.expr import evaluate, names
from sopgraph.tools.spec.measures import OPS
from sopgraph.tools.spec.model import Check

READERS = {"series": series.read, "rows": rows.read, "field": fields.read}


async def trace(check: Check, input: dict[str, Any], ctx: Any) -> tuple[Verdict, dict[str, Any]]:
    """The verdict and what was read: each measurement's number and query."""
    number = Bound.threshold(check.threshold, ctx)
    threshold = number if check.verdict_threshold == "" else check.verdict_threshold  # stated
    timestamp = str(input.get("timestamp", ""))
    bound = {k: v for k, v in input.items() if v is not None}
    seen: dict[str, Any] = {}
    for name, x in check.lookups.items():
        bound[name] = await rows.lookup(x, bound, ctx)
        seen[f"${name}"] = bound[name]
        if bound[name] is None:
            return _verdict(
                check.missing, None, threshold, f"no {x.table}.{x.column} for ${name}"
            ), seen
    needed = names(check.value) | (names(check.guard) if check.guard else set())
    readers = {
        name: READERS[m.kind](Bound.measure(m, ctx), bound, timestamp, ctx)
        for name, m in check.measures.items()
        if name in needed
    }
    got = dict(zip(readers, await asyncio.gather(*readers.values()), strict=True))
    values: dict[str, float] = {}
    absent = []
    for name, (value, query) in got.items():
        seen[name] = {"value": value, "query": query}
        if value is None:
            value = check.measures[name].default
        if value is None:
            absent.append(name)
        else:
            values[name] = value
    if absent:
        own = [check.measures[n].missing for n in absent if check.measures[n].missing]
        outcome = own[0] if own else check.missing
        return _verdict(outcome, None, threshold, f"no value for {', '.join(absent)}"), seen
    if check.guard:
        try:
            guarded = evaluate(check.guard, values) > 0
        except ZeroDivisionError:
            guarded = False
        if not guarded:
            return _verdict(check.missing, None, threshold, f"{check.guard} is not above 0"), seen
    try:
        value = evaluate(check.value, values) * check.scale
    except ZeroDivisionError:
        return _verdict(
            check.zero_division, None, threshold, f"{check.value}: division by zero"
        ), seen
    holds = OPS[check.op](value, number)
    observed = round(value, check.round_to)
    read = ", ".join(f"{k}={v:g}" for k, v in values.items())
    return (
        _verdict(
            "true" if holds else "false",
            observed,
            threshold,
            f"{check.value} = {observed:g}{check.unit} ({read}); "
            f"{check.op} {number:g}{check.unit}: {'yes' if holds else 'no'}",
        ),
        seen,
    )


def _verdict(value: str, observed: Any, threshold: Any, why: str) -> Verdict:
    return Verdict(value=value, observed=observed, threshold=threshold, explanation=why)  # type: ignore[arg-type]


async def evaluate_check(check: Check, input: dict[str, Any], ctx: Any) -> Verdict:
    return (await trace(check, input, ctx))[0]


def tool(spec: Check | dict[str, Any]):
    """``async def run(input, ctx) -> Verdict`` for ``spec`` (checked once, here)."""
    check = Check.from_dict(spec) if isinstance(spec, dict) else spec
    check.validate()

    async def run(input, ctx):
        return await evaluate_check(check, input, ctx)

    run.spec = check  # type: ignore[attr-defined]
    return run
