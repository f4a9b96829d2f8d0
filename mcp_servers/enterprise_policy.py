"""The operator's access policy over the company data (a YAML file, docs/access-control.md), and
the checks the enterprise MCP server makes with it on every row and every field.

A grant names who gets something: a relation between the caller and the record (``self``,
``reportees`` (everyone below the caller along ``reports_to``), ``direct_reportees``,
``department``, ``raiser``, ``assignee``), ``everyone``, or a group the policy defines by
department and minimum grade. Nothing is granted that the policy does not name.

Example:
    >>> policy = load_policy(Path("examples/enterprise/policy.yaml"))
    >>> caller = Caller.of(company, "emp_0431")
    >>> policy.employee_field_rows(caller, company, "Salary")   # the rows whose pay it may read
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sopgraph.mcp_servers.enterprise_store import (
    CUSTOMER_FIELDS,
    EMPLOYEE_FIELDS,
    TICKET_FIELDS,
    Company,
    grade_of,
)

REFUSED = "access denied: "  # the first words of every refusal (graphs.executors.REFUSAL_PREFIX)
EMPLOYEE_RELATIONS = ("self", "reportees", "direct_reportees", "department", "everyone")
TICKET_RELATIONS = ("raiser", "assignee", "everyone")
CUSTOMER_RELATIONS = ("everyone",)
# Free-text fields that can tell a field the policy protects, and that field. On a record where
# the caller may read the text but not the protected field, the server serves the text
# neutralised (``enterprise_store.neutral_text``: no he/she/his/her), and filters and sorts on
# it see that same text, so ``contains "she"`` probes nothing. Withholding ``description`` from
# peers altogether would take away what the directory is for (a colleague's role and skills);
# the pronouns are the part that tells ``Gender``, so they are what goes, and the policy stays
# the one place that says who reads ``Gender`` (self, reportees, HR in the example).
TEXT_REVEALS = {"description": "Gender"}


class PolicyError(ValueError):
    """A policy file the operator must fix; ``str()`` is one line."""


class AccessDenied(Exception):
    """A call the policy refuses; ``str()`` is one line starting ``access denied:``."""

    def __init__(self, what: str, why: str):
        super().__init__(f"{REFUSED}{what}: {why}")


class Group(BaseModel):
    """Callers by department (an employee's ``category``) and grade (the digits of ``Level``)."""

    model_config = ConfigDict(extra="forbid")
    department: list[str] = Field(default_factory=list)
    min_grade: int = 0

    @field_validator("department", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class FieldGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fields: list[str]
    to: list[str]


class EmployeeRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rows: list[str]
    fields: dict[str, FieldGroup]


class TicketRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    read: list[str]
    create: list[str] = Field(default_factory=list)
    update: list[str] = Field(default_factory=list)
    close: list[str] = Field(default_factory=list)


class CustomerRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    read: list[str]


@dataclass(frozen=True)
class Caller:
    """Who a call acts as: an employee of the company, fixed by the server, never an argument."""

    emp_id: str
    department: str
    grade: int

    @classmethod
    def of(cls, company: Company, emp_id: str) -> Caller:
        rec = company.employee(emp_id)
        if rec is None:
            raise AccessDenied(
                f"identity {emp_id[:40]!r}", "it is not an employee id of the company's data"
            )
        return cls(emp_id, str(rec["category"]), grade_of(rec["Level"]))


class Policy(BaseModel):
    """The access policy file: groups, then the rules per kind of record."""

    model_config = ConfigDict(extra="forbid")
    version: int = 1
    groups: dict[str, Group] = Field(default_factory=dict)
    employees: EmployeeRules
    tickets: TicketRules
    customers: CustomerRules
    source: str = ""

    def check_names(self) -> None:
        """Every grant and field is one the data and the relations know (else PolicyError)."""

        def grants(where: str, names: list[str], relations: tuple[str, ...]) -> None:
            for name in names:
                if name not in relations and name not in self.groups:
                    known = ", ".join((*relations, *self.groups))
                    raise PolicyError(
                        f"{self.source}: {where}: unknown grant {name!r}; use one of {known}"
                    )

        grants("employees.rows", self.employees.rows, EMPLOYEE_RELATIONS)
        seen: dict[str, str] = {}
        for gname, group in self.employees.fields.items():
            grants(f"employees.fields.{gname}.to", group.to, EMPLOYEE_RELATIONS)
            for f in group.fields:
                if f not in EMPLOYEE_FIELDS:
                    raise PolicyError(
                        f"{self.source}: employees.fields.{gname}: unknown field {f!r}; the "
                        f"fields are {', '.join(EMPLOYEE_FIELDS)}"
                    )
                if f in seen:
                    raise PolicyError(
                        f"{self.source}: employees.fields: {f!r} is in both {seen[f]} and "
                        f"{gname}; list each field once"
                    )
                seen[f] = gname
        for action in ("read", "create", "update", "close"):
            grants(f"tickets.{action}", getattr(self.tickets, action), TICKET_RELATIONS)
        grants("customers.read", self.customers.read, CUSTOMER_RELATIONS)

    # -- who is in a group ------------------------------------------------------------------

    def in_group(self, caller: Caller, name: str) -> bool:
        group = self.groups.get(name)
        if group is None:
            return False
        in_dept = not group.department or caller.department in group.department
        return in_dept and caller.grade >= group.min_grade

    # -- employees ----------------------------------------------------------------------------

    def granted_rows(self, caller: Caller, company: Company, grants: list[str]) -> frozenset:
        rows: set[str] = set()
        for g in grants:
            if g == "everyone" or self.in_group(caller, g):
                return frozenset(company.employees)
            if g == "self":
                rows.add(caller.emp_id)
            elif g == "reportees":
                rows |= company.subordinates.get(caller.emp_id, frozenset())
            elif g == "direct_reportees":
                rows |= set(company.employees[caller.emp_id]["reportees"])
            elif g == "department":
                rows |= company.by_department.get(caller.department, frozenset())
        return frozenset(rows)

    def employee_rows(self, caller: Caller, company: Company) -> frozenset[str]:
        """The employee records the caller may see at all."""
        return self.granted_rows(caller, company, self.employees.rows)

    def field_group(self, name: str) -> tuple[str, FieldGroup] | None:
        for gname, group in self.employees.fields.items():
            if name in group.fields:
                return gname, group
        return None

    def employee_field_rows(self, caller: Caller, company: Company, name: str) -> frozenset[str]:
        """The employee records on which the caller may read field ``name`` (none when the
        policy lists the field nowhere)."""
        found = self.field_group(name)
        if found is None:
            return frozenset()
        return self.granted_rows(caller, company, found[1].to) & self.employee_rows(caller, company)

    def who_reads(self, name: str) -> str:
        """``'self, reportees (employees.fields.pay)'``: the grants of a field, for refusals."""
        found = self.field_group(name)
        if found is None:
            return "no one (the policy lists the field in no group)"
        return f"{', '.join(found[1].to)} (employees.fields.{found[0]})"

    # -- tickets and customers ----------------------------------------------------------------

    def ticket_allows(self, caller: Caller, action: str, ticket: dict[str, Any] | None) -> bool:
        for g in getattr(self.tickets, action):
            if g == "everyone" or self.in_group(caller, g):
                return True
            if ticket is not None and g == "raiser" and ticket["raised_by_emp_id"] == caller.emp_id:
                return True
            if ticket is not None and g == "assignee" and ticket["emp_id"] == caller.emp_id:
                return True
        return False

    def customers_readable(self, caller: Caller) -> bool:
        return any(g == "everyone" or self.in_group(caller, g) for g in self.customers.read)


def load_policy(path: Path) -> Policy:
    """The policy file at ``path``; a mistake in it is one ``PolicyError`` line."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"--policy {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise PolicyError(
            f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    if not isinstance(raw, dict):
        raise PolicyError(f"{path}: a policy is a mapping with employees, tickets and customers")
    try:
        policy = Policy.model_validate({**raw, "source": str(path)})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "top level"
        raise PolicyError(
            f"{path}: {where}: {err['msg']}; see docs/access-control.md for the format"
        ) from None
    policy.check_names()
    return policy


ALL_FIELDS = {"employees": EMPLOYEE_FIELDS, "tickets": TICKET_FIELDS, "customers": CUSTOMER_FIELDS}
