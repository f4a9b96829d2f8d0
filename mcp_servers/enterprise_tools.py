"""The enterprise server's tools: employees, IT tickets and CRM customers, each call checked
against the policy as the caller the server fixed (``CALLER``), on every row and field."""

from __future__ import annotations

import contextvars
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from sopgraph.mcp_servers.enterprise_policy import TEXT_REVEALS, AccessDenied, Caller
from sopgraph.mcp_servers.enterprise_store import (
    CUSTOMER_FIELDS,
    EMPLOYEE_FIELDS,
    NUMERIC_EMPLOYEE_FIELDS,
    TICKET_FIELDS,
    today,
)
from sopgraph.mcp_servers.idempotency import Done, request_key

MAX_LIMIT = 200
READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)  # fmt: skip
CREATE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)  # fmt: skip
CHANGE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)  # fmt: skip
CALLER: contextvars.ContextVar[Caller] = contextvars.ContextVar("enterprise_caller")
RETURNED: contextvars.ContextVar[list[str]] = contextvars.ContextVar("enterprise_returned")
SCOPES = ("visible", "self", "reportees", "direct_reportees", "department")


class Filter(BaseModel):
    """One condition on a field: ``{"field": "Salary", "op": "gt", "value": 100000}``."""

    model_config = ConfigDict(extra="forbid")
    field: str
    op: Literal["eq", "ne", "lt", "le", "gt", "ge", "contains"] = "eq"
    value: str | int | float


Filters = Annotated[list[Filter], Field(description="Conditions every row meets: field, op, value.")]  # fmt: skip
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Most rows returned.")]
Fields = Annotated[
    list[str] | None,
    Field(description="Fields to return (default: every field you may read on each row)."),
]
TicketId = Annotated[str, Field(description="The ticket's id, e.g. 717.")]
SortBy = Annotated[str | None, Field(description="A field to sort by (one you may read).")]


def _note(ids: list[str]) -> None:
    RETURNED.get([]).extend(ids)


def _known(kind: str, name: str, fields: tuple[str, ...]) -> None:
    if name not in fields:
        raise ToolError(f"{kind} have no field {name!r}; the fields are {', '.join(fields)}")


def _matches(row: dict[str, Any], f: Filter, numeric: bool) -> bool:
    have = row.get(f.field)
    if f.op == "contains":
        return str(f.value).lower() in str(have or "").lower()
    if have is None:
        return False
    if numeric:
        try:
            want: Any = float(f.value)
        except ValueError:
            raise ToolError(f"filter on {f.field!r}: {f.value!r} is not a number") from None
        have = float(have)
    else:
        have, want = str(have), str(f.value)
    ops = {"eq": have == want, "ne": have != want, "lt": have < want, "le": have <= want}
    return {**ops, "gt": have > want, "ge": have >= want}[f.op]


def _sort(rows: list[dict], field: str | None, descending: bool, numeric: bool) -> list[dict]:
    if field is None:
        return rows
    present = [r for r in rows if r.get(field) is not None]
    missing = [r for r in rows if r.get(field) is None]
    present.sort(key=lambda r: float(r[field]) if numeric else str(r[field]), reverse=descending)
    return present + missing


def add_tools(mcp: Any) -> None:
    """Register the tools on ``mcp`` (an ``EnterpriseMCP``: ``company`` and ``policy``)."""
    company, policy = mcp.company, mcp.policy
    created = Done()  # create_ticket's idempotency keys: as long-lived as the store

    def readable(me: Caller, name: str) -> frozenset[str]:
        return policy.employee_field_rows(me, company, name)

    def project(me: Caller, row: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
        names = fields or [f for f in EMPLOYEE_FIELDS if row["emp_id"] in readable(me, f)]
        return {f: row[f] for f in names}

    def served(me: Caller, emp_ids: list[str]) -> list[dict[str, Any]]:
        """The records as ``me`` is served them (and filters and sorts see them): a free text
        that could tell a field ``me`` may not read on that record is its neutral version."""
        may_read = {text: readable(me, protected) for text, protected in TEXT_REVEALS.items()}
        out = []
        for emp in emp_ids:
            rec = company.employees[emp]
            swaps = {t: company.neutral[t][emp] for t, ok in may_read.items() if emp not in ok}
            out.append({**rec, **swaps} if swaps else rec)
        return out

    def seen_employee(me: Caller, emp_id: str, what: str) -> None:
        """Refuse ``emp_id`` unless ``me`` may see its record; an id of no employee gets the very
        same answer, so no refusal tells whether a hidden id exists."""
        if emp_id not in policy.employee_rows(me, company):
            raise AccessDenied(
                f"{what} {emp_id[:40]!r}",
                f"not a record {me.emp_id} may see (employees.rows: "
                f"{', '.join(policy.employees.rows)})",
            )

    def need_field(me: Caller, what: str, name: str, rows: set[str], hint: str = "") -> None:
        _known("employees", name, EMPLOYEE_FIELDS)
        if not rows <= readable(me, name):
            raise AccessDenied(
                what,
                f"{me.emp_id} may not read {name} on every record it covers ({name} is readable "
                f"by {policy.who_reads(name)}){hint}",
            )

    @mcp.tool(annotations=READ)
    def whoami() -> dict[str, Any]:
        """The employee every call acts as (fixed by the server), with department and grade."""
        me = CALLER.get()
        return {"emp_id": me.emp_id, "department": me.department, "grade": me.grade}

    @mcp.tool(annotations=READ)
    def search_employees(
        filters: Filters | None = None,
        scope: Annotated[
            Literal["visible", "self", "reportees", "direct_reportees", "department"],
            Field(description="Whose records to search: all you may see, or one relation."),
        ] = "visible",
        sort_by: SortBy = None,
        descending: bool = False,
        fields: Fields = None,
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """Employees you may see that meet every filter; ``count`` is how many matched.

        A filter, sort or field on something you may not read on every record searched is
        refused (narrow ``scope``, e.g. to ``reportees``, to filter on their pay).
        """
        me = CALLER.get()
        rows = policy.employee_rows(me, company)
        if scope != "visible":
            rows &= policy.granted_rows(me, company, [scope])
        for f in filters or []:
            need_field(me, f"search_employees filter on {f.field!r}", f.field, set(rows),
                       f"; narrow scope (now {scope!r}) to records where you may")  # fmt: skip
        if sort_by is not None:
            need_field(me, f"search_employees sort by {sort_by!r}", sort_by, set(rows),
                       f"; narrow scope (now {scope!r}) to records where you may")  # fmt: skip
        records = served(me, sorted(rows))
        for f in filters or []:
            records = [r for r in records if _matches(r, f, f.field in NUMERIC_EMPLOYEE_FIELDS)]
        records = _sort(records, sort_by, descending, sort_by in NUMERIC_EMPLOYEE_FIELDS)
        for name in fields or []:
            need_field(me, f"search_employees field {name!r}", name, {r["emp_id"] for r in records})
        page = records[:limit]
        _note([r["emp_id"] for r in page])
        return {"count": len(records), "rows": [project(me, r, fields) for r in page]}

    @mcp.tool(annotations=READ)
    def get_employee(
        emp_id: Annotated[str, Field(description="The employee's id, e.g. emp_0431.")],
        fields: Fields = None,
    ) -> dict[str, Any]:
        """One employee's record: the fields you may read on it."""
        me = CALLER.get()
        seen_employee(me, emp_id, "get_employee")
        for name in fields or []:
            need_field(me, f"get_employee {emp_id} field {name!r}", name, {emp_id})
        _note([emp_id])
        return project(me, served(me, [emp_id])[0], fields)

    def visible_tickets(me: Caller) -> list[dict[str, Any]]:
        return [t for t in company.rows("tickets") if policy.ticket_allows(me, "read", t)]

    def ticket_for(me: Caller, ticket_id: str, action: str, tool: str) -> dict[str, Any]:
        found = company.rows("tickets", "WHERE id = ?", (ticket_id,))
        ticket = found[0] if found else None
        if ticket is None or not policy.ticket_allows(me, "read", ticket):
            raise AccessDenied(
                f"{tool} ticket {ticket_id[:40]!r}",
                f"not a ticket {me.emp_id} may see (tickets.read: {', '.join(policy.tickets.read)})",
            )
        if action != "read" and not policy.ticket_allows(me, action, ticket):
            grants = ", ".join(getattr(policy.tickets, action)) or "no one"
            raise AccessDenied(
                f"{tool} ticket {ticket_id}", f"{me.emp_id} may not {action} it (tickets.{action}: {grants})"
            )  # fmt: skip
        return ticket

    @mcp.tool(annotations=READ)
    def search_tickets(
        filters: Filters | None = None,
        sort_by: SortBy = None,
        descending: bool = False,
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """IT tickets you may see (yours raised or assigned, or all for IT) meeting the filters;
        fields: id, priority, status, raised_by_emp_id, emp_id (assignee), assigned_date, Issue,
        Resolution."""
        me = CALLER.get()
        for f in filters or []:
            _known("tickets", f.field, TICKET_FIELDS)
        if sort_by is not None:
            _known("tickets", sort_by, TICKET_FIELDS)
        rows = visible_tickets(me)
        for f in filters or []:
            rows = [t for t in rows if _matches(t, f, f.field == "id")]
        rows = _sort(rows, sort_by, descending, sort_by == "id")
        _note([f"ticket:{t['id']}" for t in rows[:limit]])
        return {"count": len(rows), "rows": rows[:limit]}

    @mcp.tool(annotations=READ)
    def get_ticket(ticket_id: TicketId) -> dict[str, Any]:
        """One IT ticket you may see."""
        ticket = ticket_for(CALLER.get(), ticket_id, "read", "get_ticket")
        _note([f"ticket:{ticket_id}"])
        return ticket

    @mcp.tool(annotations=CREATE)
    def create_ticket(
        issue: Annotated[str, Field(min_length=1, max_length=4000, description="The problem.")],
        priority: Literal["low", "medium", "high"] = "medium",
        ctx: Context | None = None,
    ) -> dict[str, Any]:
        """Raise an IT ticket as yourself (the raiser is always the caller); it starts open and
        unassigned."""
        # A request repeating a gated action's idempotency key (a retried or resumed run) gets
        # the ticket the first one raised; no second ticket is raised. (Kept out of the
        # description: it is the operator's guarantee, not something the caller chooses.)
        return created.once(request_key(ctx), lambda: raise_ticket(issue, priority))

    def raise_ticket(issue: str, priority: str) -> dict[str, Any]:
        me = CALLER.get()
        if not policy.ticket_allows(me, "create", None):
            raise AccessDenied(
                "create_ticket", f"{me.emp_id} may not raise tickets (tickets.create)"
            )
        ticket = {
            "id": company.next_ticket_id(), "priority": priority, "status": "open",
            "raised_by_emp_id": me.emp_id, "emp_id": None, "assigned_date": None,
            "Issue": issue, "Resolution": None,
        }  # fmt: skip
        company.insert_ticket(ticket)
        _note([f"ticket:{ticket['id']}"])
        return ticket

    @mcp.tool(annotations=CHANGE)
    def update_ticket(
        ticket_id: TicketId,
        priority: Literal["low", "medium", "high"] | None = None,
        assignee: Annotated[str | None, Field(description="emp_id to assign it to.")] = None,
        resolution: Annotated[str | None, Field(max_length=4000)] = None,
    ) -> dict[str, Any]:
        """Change a ticket's priority, assignee or resolution (overwrites them)."""
        me = CALLER.get()
        ticket_for(me, ticket_id, "update", "update_ticket")
        changes: dict[str, Any] = {}
        if priority is not None:
            changes["priority"] = priority
        if assignee is not None:  # one the caller may see: a hidden id answers as an unknown one
            seen_employee(me, assignee, "update_ticket assignee")
            changes.update(emp_id=assignee, assigned_date=today())
        if resolution is not None:
            changes["Resolution"] = resolution
        if not changes:
            raise ToolError("update_ticket: give priority, assignee or resolution to change")
        company.update_ticket(ticket_id, changes)
        _note([f"ticket:{ticket_id}"])
        return company.rows("tickets", "WHERE id = ?", (ticket_id,))[0]

    @mcp.tool(annotations=CHANGE)
    def close_ticket(
        ticket_id: TicketId,
        resolution: Annotated[str, Field(min_length=1, max_length=4000)],
    ) -> dict[str, Any]:
        """Close a ticket with its resolution."""
        me = CALLER.get()
        ticket_for(me, ticket_id, "close", "close_ticket")
        company.update_ticket(ticket_id, {"status": "closed", "Resolution": resolution})
        _note([f"ticket:{ticket_id}"])
        return company.rows("tickets", "WHERE id = ?", (ticket_id,))[0]

    def need_crm(me: Caller, tool: str) -> None:
        if not policy.customers_readable(me):
            raise AccessDenied(
                tool,
                f"{me.emp_id} ({me.department}) may not read the CRM (customers.read: "
                f"{', '.join(policy.customers.read)})",
            )

    @mcp.tool(annotations=READ)
    def search_customers(
        name_contains: Annotated[str, Field(description="Part of the name; empty: all.")] = "",
        limit: Limit = 20,
    ) -> dict[str, Any]:
        """CRM customers whose name contains the text (Sales, BPO and Business Development)."""
        need_crm(CALLER.get(), "search_customers")
        rows = [
            c
            for c in company.rows("customers")
            if name_contains.lower() in str(c["customer_name"]).lower()
        ]
        _note([f"customer:{c['customer_id']}" for c in rows[:limit]])
        return {"count": len(rows), "rows": rows[:limit]}

    @mcp.tool(annotations=READ)
    def get_customer(
        customer_id: Annotated[str, Field(description="The customer's id, e.g. arout.")],
    ) -> dict[str, Any]:
        """One CRM customer: name and the paths of its invoices and orders."""
        need_crm(CALLER.get(), "get_customer")
        found = company.rows("customers", "WHERE customer_id = ?", (customer_id,))
        if not found:
            raise ToolError(f"no customer {customer_id[:40]!r}; search_customers lists them")
        _note([f"customer:{customer_id}"])
        return found[0]


__all__ = ["CALLER", "CUSTOMER_FIELDS", "RETURNED", "SCOPES", "add_tools"]
