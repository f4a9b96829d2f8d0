"""The enterprise server honours a gated action's idempotency key (issue 53): ``create_ticket``
repeated with the key of one gated execution (a resumed or retried run) gives back the ticket
the first request raised and raises no second one; another key raises its own, and a write
outside an action (no key) is refused at the client. The real server over stdio, through
sopgraph's own MCP pool, which sends the running action's key in ``params._meta``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sopgraph.graphs.idempotency import ACTION_KEY
from sopgraph.nodes.mcp import McpPool, ServerConfig, WriteRefused

IT_STAFF = "emp_0431"


async def test_create_ticket_with_a_repeated_key_raises_one_ticket(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    server = ServerConfig(
        command=sys.executable,
        args=["-m", "sopgraph.mcp_servers.enterprise", "--as", IT_STAFF, "--audit", str(audit)],
    )
    args = {"issue": "printer on fire"}
    async with McpPool({"enterprise": server}) as pool:
        token = ACTION_KEY.set("t1/act_raise_ticket/1")
        try:
            first = await pool.call("enterprise", "create_ticket", args)
            repeat = await pool.call("enterprise", "create_ticket", args)
        finally:
            ACTION_KEY.reset(token)
        token = ACTION_KEY.set("t2/act_raise_ticket/1")
        try:
            other = await pool.call("enterprise", "create_ticket", args)
        finally:
            ACTION_KEY.reset(token)
        with pytest.raises(WriteRefused, match="only an approved action"):  # no action: no key
            await pool.call("enterprise", "create_ticket", args)
        mine = await pool.call(
            "enterprise", "search_tickets", {"filters": [{"field": "Issue", "op": "eq",
                                                          "value": "printer on fire"}]}
        )  # fmt: skip
    assert repeat == first
    assert first["id"] != other["id"]
    assert mine["count"] == 2
