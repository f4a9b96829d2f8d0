"""Field measurements (issue 52) against a real stdio MCP server that serves records: a field
equals something, is one of several things, is within N days of the input's time or of another
field, or is a number; no record or a null field is missing data; a failing tool is an error."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import pytest_asyncio

from sopgraph.nodes.mcp import McpError, McpPool, ServerConfig
from sopgraph.tools.spec import Check, SpecError, tool, trace

SERVER = Path(__file__).resolve().parents[1] / "servers" / "toy_records.py"
NOW = "2026-01-06T09:00:00Z"
shared_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool():
    async with McpPool({"records": ServerConfig(command=sys.executable, args=[str(SERVER)])}) as p:
        yield p


def ctx(pool, **params):
    return SimpleNamespace(mcp=pool, params=params)


def ticket(**test) -> dict:
    m = {"server": "records", "tool": "get_ticket", "args": {"ticket_id": "$ticket_id"}, **test}
    return {"measures": {"t": m}, "value": "t", "op": "==", "threshold": 1,
            "verdict_threshold": None}  # fmt: skip


def order(**test) -> dict:
    m = {"server": "records", "tool": "get_order", "args": {"order_id": "$order_id"}, **test}
    return {"measures": {"o": m}, "value": "o", "op": ">", "threshold": "limit"}


@shared_loop
@pytest.mark.parametrize(("ticket_id", "expected"), [("717", "true"), ("718", "false"),
                                                     ("719", "true")])  # fmt: skip
async def test_a_field_is_one_of_several_values(pool, ticket_id, expected):
    run = tool(ticket(field="status", one_of=["open", "in_progress"]))
    verdict = await run({"ticket_id": ticket_id, "timestamp": NOW}, ctx(pool))
    assert verdict.value == expected and verdict.threshold is None


@shared_loop
async def test_a_nested_field_equals_an_input_field_and_the_trace_shows_the_call(pool):
    check = Check.from_dict(ticket(field="owner.team", equals="$team"))
    verdict, seen = await trace(check, {"ticket_id": "717", "team": "network"}, ctx(pool))
    assert verdict.value == "true"
    assert seen["t"]["query"] == "records.get_ticket(ticket_id='717').owner.team = 'network'"
    verdict, _ = await trace(check, {"ticket_id": "718", "team": "network"}, ctx(pool))
    assert verdict.value == "false"
    # the owner is null on 719: no value, the check's missing outcome
    verdict, _ = await trace(check, {"ticket_id": "719", "team": "network"}, ctx(pool))
    assert verdict.value == "no_data" and "no value for t" in verdict.explanation


@shared_loop
@pytest.mark.parametrize(("ticket_id", "expected"), [("717", "true"), ("718", "false"),
                                                     ("719", "true")])  # fmt: skip
async def test_a_time_field_is_within_n_days_of_the_inputs_time(pool, ticket_id, expected):
    run = tool(ticket(field="opened_at", within_days="recent_days"))  # a site parameter
    verdict = await run({"ticket_id": ticket_id, "timestamp": NOW}, ctx(pool, recent_days=7))
    assert verdict.value == expected


@shared_loop
async def test_within_n_days_of_another_field_of_the_record(pool):
    spec = order(field="returned_at", within_days=30, of="delivered_at")
    spec |= {"op": "==", "threshold": 1}
    verdict, seen = await trace(Check.from_dict(spec), {"order_id": "o1"}, ctx(pool))
    assert verdict.value == "true" and "19 days from delivered_at" in seen["o"]["query"]
    spec["measures"]["o"]["within_days"] = 10
    assert (await trace(Check.from_dict(spec), {"order_id": "o1"}, ctx(pool)))[0].value == "false"


@shared_loop
async def test_a_numeric_field_is_compared_with_a_parameter(pool):
    run = tool(order(field="amount"))
    verdict = await run({"order_id": "o1"}, ctx(pool, limit=100))
    assert (verdict.value, verdict.observed, verdict.threshold) == ("true", 120.5, 100)
    assert (await run({"order_id": "o2"}, ctx(pool, limit=100))).value == "false"


@shared_loop
async def test_no_record_or_a_null_field_is_missing_data_with_its_outcomes(pool):
    no_record = await tool(order(field="amount"))({"order_id": "o9"}, ctx(pool, limit=1))
    assert no_record.value == "no_data"
    null = order(field="delivered_at", within_days=30)
    assert (await tool(null)({"order_id": "o2", "timestamp": NOW}, ctx(pool, limit=0))).value == (
        "no_data"
    )
    null["measures"]["o"]["missing"] = "false"  # the measurement's own outcome
    assert (await tool(null)({"order_id": "o2", "timestamp": NOW}, ctx(pool, limit=0))).value == (
        "false"
    )
    null["measures"]["o"] |= {"missing": None, "default": 0}
    assert (await tool(null)({"order_id": "o2", "timestamp": NOW}, ctx(pool, limit=-1))).value == (
        "true"
    )


@shared_loop
async def test_a_failing_tool_is_an_error_and_text_without_a_test_is_refused(pool):
    with pytest.raises(McpError, match="no ticket '404'"):
        await tool(ticket(field="status", equals="open"))({"ticket_id": "404"}, ctx(pool))
    with pytest.raises(SpecError, match="field: status is 'open', not a number; give equals"):
        await tool(ticket(field="status"))({"ticket_id": "717"}, ctx(pool))
    with pytest.raises(SpecError, match=r"args.ticket_id: \$ticket_id is not an input field"):
        await tool(ticket(field="status", equals="open"))({}, ctx(pool))
