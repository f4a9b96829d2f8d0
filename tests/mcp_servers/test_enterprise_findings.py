"""Issue 53's lower findings against the enterprise MCP server, in process (the server object
``create_server`` builds, called as its stdio transport would call it):

- an assignee id IT staff may not see answers exactly as one that does not exist;
- a peer's free-text ``description`` carries no gendered pronoun (the policy withholds
  ``Gender`` from peers), while those who may read ``Gender`` get the text as written;
- the audit log stores at most a fixed budget of a call's arguments, with their full size
  and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp.server.fastmcp.exceptions import ToolError

from sopgraph.mcp_servers.enterprise import (
    AUDIT_ARGUMENTS_BYTES,
    EnterpriseMCP,
    audit_arguments,
    create_server,
)
from sopgraph.mcp_servers.enterprise_policy import Caller, load_policy
from sopgraph.mcp_servers.enterprise_store import load_company, neutral_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "enterprise"
COMPANY = load_company(EXAMPLE / "data")
POLICY = load_policy(EXAMPLE / "policy.yaml")
ENGINEER = "emp_0675"  # EN09, Engineering, no reportees
MANAGER = "emp_0106"  # EN12, Engineering, 7 below
IT_STAFF = "emp_0626"  # IN09, Information Technology
HR_JUNIOR = "emp_0540"  # HR09: personal fields (Gender among them) of everyone
HIDDEN_FROM_IT = "emp_0545"  # HR director: a real id IT staff may not see
GENDERED = re.compile(r"\b(he|she|him|her|his|hers|himself|herself)\b", re.IGNORECASE)


def server(identity: str, audit: Path | None = None) -> EnterpriseMCP:
    """A fresh server (its own company: updates do not leak between tests) acting as
    ``identity``, as ``--as`` would start it."""
    return create_server(load_company(EXAMPLE / "data"), POLICY, operator=identity, audit=audit)


async def call(mcp: EnterpriseMCP, tool: str, args: dict[str, Any]) -> Any:
    """The tool's JSON answer, or the one-line error text it was refused with."""
    try:
        result = await mcp.call_tool(tool, args)
    except ToolError as exc:
        return f"ERROR {exc}"
    content = result[0] if isinstance(result, tuple) else result
    return json.loads(content[0].text)


# -- 1. no existence oracle through update_ticket's assignee ---------------------------------


async def test_hidden_and_unknown_assignees_are_refused_alike(tmp_path: Path) -> None:
    """Before: a hidden id was assigned (the answer showed the ticket), an unknown one got
    "is not an employee id": IT staff could tell which ids exist."""
    assert COMPANY.employee(HIDDEN_FROM_IT) is not None
    assert HIDDEN_FROM_IT not in POLICY.employee_rows(Caller.of(COMPANY, IT_STAFF), COMPANY)
    audit = tmp_path / "audit.jsonl"
    mcp = server(IT_STAFF, audit)
    answers = {}
    for who in (HIDDEN_FROM_IT, "emp_9999"):
        answers[who] = await call(mcp, "update_ticket", {"ticket_id": "717", "assignee": who})
    hidden, unknown = answers[HIDDEN_FROM_IT], answers["emp_9999"]
    assert isinstance(hidden, str) and hidden.startswith("ERROR access denied: "), hidden
    assert hidden.replace(HIDDEN_FROM_IT, "ID") == unknown.replace("emp_9999", "ID")
    assert "\n" not in hidden and "may see" in hidden  # what, and why: one line
    log = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["outcome"] for r in log] == ["refused", "refused"]
    assert log[0]["reason"].replace(HIDDEN_FROM_IT, "ID") == log[1]["reason"].replace(
        "emp_9999", "ID"
    )
    ticket = await call(mcp, "get_ticket", {"ticket_id": "717"})
    assert ticket["emp_id"] == "emp_0750"  # nothing was assigned
    # an assignee IT staff may see is still assigned
    done = await call(mcp, "update_ticket", {"ticket_id": "717", "assignee": IT_STAFF})
    assert done["emp_id"] == IT_STAFF


# -- 2. a peer's description does not tell their gender ---------------------------------------


async def test_a_peer_reads_no_gendered_pronoun_in_any_description() -> None:
    """Every record an engineer may see, through get_employee and search_employees: no
    gendered pronoun in another employee's description (before: 396 of 478 had one); a
    ``contains`` filter on the raw text is no way round it."""
    me = Caller.of(COMPANY, ENGINEER)
    visible = sorted(POLICY.employee_rows(me, COMPANY))
    mcp = server(ENGINEER)
    served: dict[str, str] = {}
    for emp in visible:
        rec = await call(mcp, "get_employee", {"emp_id": emp})
        served[emp] = rec["description"] or ""
    page = await call(mcp, "search_employees", {"scope": "department", "limit": 200})
    for rec in page["rows"]:
        assert rec["description"] == served[rec["emp_id"]]
    peers = [e for e in visible if e != ENGINEER]
    raw = sum(bool(GENDERED.search(COMPANY.employees[e]["description"] or "")) for e in peers)
    assert raw > 300  # the data does carry them
    assert sum(bool(GENDERED.search(served[e])) for e in peers) == 0
    for word in (" she ", " he ", " his ", " her "):
        probe = [{"field": "description", "op": "contains", "value": word}]
        found = await call(mcp, "search_employees", {"scope": "department", "filters": probe})
        assert [r["emp_id"] for r in found["rows"]] in ([], [ENGINEER]), word
    # the text still says who the person is: the name stands where the pronoun stood
    sample = next(e for e in peers if GENDERED.search(COMPANY.employees[e]["description"]))
    assert COMPANY.employees[sample]["Name"].split()[0] in served[sample]
    # the engineer's own record is as written
    assert served[ENGINEER] == COMPANY.employees[ENGINEER]["description"]


@pytest.mark.parametrize(
    ("reader", "subject"),
    [(HR_JUNIOR, "emp_0431"), (MANAGER, "emp_0675"), (ENGINEER, ENGINEER)],
    ids=["hr", "manager_of_reportee", "self"],
)
async def test_readers_of_gender_get_the_description_as_written(reader: str, subject: str) -> None:
    """HR, a manager (of those below), the employee: the policy gives them Gender, so the
    description is the data's own text."""
    assert subject in POLICY.employee_field_rows(Caller.of(COMPANY, reader), COMPANY, "Gender")
    rec = await call(server(reader), "get_employee", {"emp_id": subject})
    assert rec["description"] == COMPANY.employees[subject]["description"]
    assert GENDERED.search(rec["description"])


def test_neutral_text_keeps_the_sentence_and_drops_every_pronoun() -> None:
    text = (
        "Priya leads her team. She is known for her ability, which makes her a valuable "
        "asset to him and his peers; he prides himself on it, and hers is the credit."
    )
    got = neutral_text(text, "Priya Shah")
    assert not GENDERED.search(got), got
    assert got.startswith("Priya leads Priya's team. Priya is known for Priya's ability")
    assert "makes Priya a valuable asset" in got


# -- 3. the audit log stores a bounded part of each call's arguments ---------------------------


async def test_five_refused_calls_with_3_mb_arguments_grow_the_log_by_little(
    tmp_path: Path,
) -> None:
    """Before: 5 refused calls with 3 MB of arguments grew the log by ~15 MB."""
    audit = tmp_path / "audit.jsonl"
    mcp = server(ENGINEER, audit)
    big = "x" * (3 * 1024 * 1024)
    calls = [
        ("whoami", {"padding": big}),  # an argument whoami does not take
        ("search_employees", {"filters": [{"field": "Salary", "op": "eq", "value": big}]}),
        ("get_employee", {"emp_id": big}),
        ("get_ticket", {"ticket_id": big}),
        ("search_customers", {"name_contains": big}),
    ]
    for tool, args in calls:
        answer = await call(mcp, tool, args)
        assert isinstance(answer, str) and answer.startswith("ERROR access denied: "), answer
        assert len(answer) < 1000  # the refusal is one short line, too
    size = audit.stat().st_size
    assert size < 64 * 1024, size
    log = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["outcome"] for r in log] == ["refused"] * 5
    for (tool, args), entry in zip(calls, log, strict=True):
        full = json.dumps(args, sort_keys=True, separators=(",", ":"))
        assert entry["tool"] == tool
        assert entry["arguments_truncated"] is True
        assert entry["arguments_bytes"] == len(full.encode())
        assert entry["arguments_sha256"] == hashlib.sha256(full.encode()).hexdigest()
        assert len(entry["arguments"].encode()) <= AUDIT_ARGUMENTS_BYTES
        assert full.startswith(entry["arguments"])
    print(f"\naudit log after 5 refused calls with 3 MB arguments: {size:,} bytes")


async def test_allowed_calls_are_capped_too_and_small_arguments_kept_whole(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.jsonl"
    mcp = server(ENGINEER, audit)
    await call(mcp, "create_ticket", {"issue": "printer on fire"})
    filters = [{"field": "Name", "op": "contains", "value": "a" * 20_000}]
    found = await call(mcp, "search_employees", {"scope": "self", "filters": filters})
    assert found["count"] == 0
    small, capped = [json.loads(line) for line in audit.read_text().splitlines()]
    assert small["outcome"] == "ok" and small["arguments"] == {"issue": "printer on fire"}
    assert "arguments_truncated" not in small
    assert capped["outcome"] == "ok" and capped["arguments_truncated"] is True
    assert capped["arguments_bytes"] > 20_000
    assert len(json.dumps(capped).encode()) < 2 * AUDIT_ARGUMENTS_BYTES


def test_audit_arguments_of_any_text_are_ascii_json_with_a_checkable_digest() -> None:
    """Non-ASCII text and a lone surrogate (JSON may carry one) still give a size and a digest
    an auditor can recompute from the request."""
    args = {"issue": "é\ud800" * AUDIT_ARGUMENTS_BYTES}
    kept = audit_arguments(args)
    full = json.dumps(args, sort_keys=True, separators=(",", ":"))
    assert kept["arguments_truncated"] is True and kept["arguments_bytes"] == len(full)
    assert kept["arguments"].isascii() and len(kept["arguments"]) == AUDIT_ARGUMENTS_BYTES
    assert kept["arguments_sha256"] == hashlib.sha256(full.encode()).hexdigest()
    json.dumps(kept).encode()  # the entry itself writes as UTF-8
