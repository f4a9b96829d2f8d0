"""EnterpriseBench's company (employees, IT tickets, CRM customers) in an in-memory SQLite
database, with the org chart the access policy reads: who reports to whom, transitively.

The JSON files are EnterpriseBench's, unchanged (``examples/enterprise/data/``, MIT). Tickets
get a ``status`` the data lacks: ``resolved`` when loaded with a resolution, ``open`` when
created here, ``closed`` once ``close_ticket`` ran.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EMPLOYEE_FIELDS = (
    "emp_id", "Name", "email", "category", "Level", "reports_to", "reportees", "DOJ", "DOL",
    "skills", "Experience", "description", "Age", "Gender", "Marital Status",
    "Performance Rating", "Total Casual Leaves", "Remaining Casual Leaves", "Total Sick Leaves",
    "Remaining Sick Leaves", "Total Vacation Leaves", "Remaining Vacation Leaves",
    "Total Leaves Taken", "Salary",
)  # fmt: skip
NUMERIC_EMPLOYEE_FIELDS = frozenset(
    {
        "Age",
        "Performance Rating",
        "Salary",
        "Total Casual Leaves",
        "Remaining Casual Leaves",
        "Total Sick Leaves",
        "Remaining Sick Leaves",
        "Total Vacation Leaves",
        "Remaining Vacation Leaves",
        "Total Leaves Taken",
    }
)
TICKET_FIELDS = (
    "id", "priority", "status", "raised_by_emp_id", "emp_id", "assigned_date", "Issue",
    "Resolution",
)  # fmt: skip
CUSTOMER_FIELDS = (
    "customer_id",
    "customer_name",
    "invoice_paths",
    "purchase_order_paths",
    "shipping_order_paths",
)
# Free text about an employee, served neutralised (``neutral_text``) to a reader the policy
# withholds a field from that the text could reveal (``enterprise_policy.TEXT_REVEALS``).
FREE_TEXT_FIELDS = ("description",)
DEFAULT_DATA = Path(__file__).resolve().parents[1] / "examples" / "enterprise" / "data"


def grade_of(level: str | None) -> int:
    """The grade in a ``Level`` such as ``EN14`` (14); 0 when it has none."""
    digits = "".join(c for c in str(level or "") if c.isdigit())
    return int(digits) if digits else 0


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Company:
    """The database and the org chart: ``subordinates[e]`` is everyone below ``e``."""

    db: sqlite3.Connection
    employees: dict[str, dict[str, Any]]
    # neutral[field][emp_id]: the FREE_TEXT_FIELDS with no gendered word (``neutral_text``)
    neutral: dict[str, dict[str, str | None]] = field(default_factory=dict)
    subordinates: dict[str, frozenset[str]] = field(default_factory=dict)
    by_department: dict[str, frozenset[str]] = field(default_factory=dict)

    def employee(self, emp_id: str) -> dict[str, Any] | None:
        return self.employees.get(emp_id)

    def rows(self, table: str, where: str = "", params: tuple = ()) -> list[dict[str, Any]]:
        cur = self.db.execute(f"SELECT * FROM {table} {where}", params)
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            rec = dict(zip(names, row, strict=True))
            if table == "employees":
                rec["reportees"] = json.loads(rec["reportees"] or "[]")
            out.append(rec)
        return out

    def next_ticket_id(self) -> str:
        (top,) = self.db.execute("SELECT MAX(CAST(id AS INTEGER)) FROM tickets").fetchone()
        return str((top or 0) + 1)

    def insert_ticket(self, ticket: dict[str, Any]) -> None:
        cols = ", ".join(_q(c) for c in TICKET_FIELDS)
        marks = ", ".join("?" for _ in TICKET_FIELDS)
        self.db.execute(
            f"INSERT INTO tickets ({cols}) VALUES ({marks})", [ticket.get(c) for c in TICKET_FIELDS]
        )

    def update_ticket(self, ticket_id: str, changes: dict[str, Any]) -> None:
        sets = ", ".join(f"{_q(c)} = ?" for c in changes)
        self.db.execute(f"UPDATE tickets SET {sets} WHERE id = ?", [*changes.values(), ticket_id])


def load_company(data_dir: Path = DEFAULT_DATA) -> Company:
    """The company in ``data_dir`` (``employees.json``, ``it_tickets.json``, ``customers.json``).

    Raises:
        FileNotFoundError / ValueError: a file missing or not EnterpriseBench's shape.
    """
    data_dir = Path(data_dir)
    employees = json.loads((data_dir / "employees.json").read_text(encoding="utf-8"))
    tickets = json.loads((data_dir / "it_tickets.json").read_text(encoding="utf-8"))
    customers = json.loads((data_dir / "customers.json").read_text(encoding="utf-8"))
    db = sqlite3.connect(":memory:", check_same_thread=False)
    emp_cols = ", ".join(
        f"{_q(c)} {'INTEGER' if c in NUMERIC_EMPLOYEE_FIELDS else 'TEXT'}" for c in EMPLOYEE_FIELDS
    )
    db.execute(f"CREATE TABLE employees ({emp_cols}, PRIMARY KEY (emp_id))")
    db.execute(f"CREATE TABLE tickets ({', '.join(_q(c) + ' TEXT' for c in TICKET_FIELDS)})")
    db.execute(f"CREATE TABLE customers ({', '.join(_q(c) + ' TEXT' for c in CUSTOMER_FIELDS)})")
    by_id: dict[str, dict[str, Any]] = {}
    for raw in employees:
        rec = {c: raw.get(c) for c in EMPLOYEE_FIELDS}
        for c in NUMERIC_EMPLOYEE_FIELDS:
            rec[c] = int(rec[c]) if str(rec[c] or "").strip().lstrip("-").isdigit() else None
        rec["reportees"] = list(raw.get("reportees") or [])
        by_id[rec["emp_id"]] = rec
        marks = ", ".join("?" for _ in EMPLOYEE_FIELDS)
        values = [json.dumps(rec[c]) if c == "reportees" else rec[c] for c in EMPLOYEE_FIELDS]
        db.execute(f"INSERT INTO employees VALUES ({marks})", values)
    for raw in tickets:
        rec = {c: raw.get(c) for c in TICKET_FIELDS}
        rec["status"] = "resolved" if raw.get("Resolution") else "open"
        db.execute(f"INSERT INTO tickets VALUES ({', '.join('?' for _ in TICKET_FIELDS)})", list(rec.values()))  # fmt: skip
    for raw in customers:
        values = [raw.get(c) for c in CUSTOMER_FIELDS]
        db.execute(f"INSERT INTO customers VALUES ({', '.join('?' for _ in values)})", values)
    db.commit()
    company = Company(db=db, employees=by_id)
    company.neutral = {
        f: {e: neutral_text(r[f], r["Name"]) for e, r in by_id.items()} for f in FREE_TEXT_FIELDS
    }
    company.subordinates = _subordinates(by_id)
    departments: dict[str, set[str]] = {}
    for emp_id, rec in by_id.items():
        departments.setdefault(str(rec["category"]), set()).add(emp_id)
    company.by_department = {k: frozenset(v) for k, v in departments.items()}
    return company


_GENDERED = re.compile(r"\b(?:he|she|him|his|hers|himself|herself|her)\b", re.IGNORECASE)
_NEXT_WORD = re.compile(r"\s*([A-Za-z'-]*)")
# After an object "her" ("makes her a valuable asset", "helps her to", "serves her well"),
# not a possessive one ("her team"): determiners, prepositions, conjunctions, adverbs.
_AFTER_OBJECT = frozenset(
    "a an the to as and or but for in on at with from into by than well apart up out".split()
)


def neutral_text(text: str | None, name: str | None) -> str | None:
    """``text`` about the employee ``name`` with every gendered pronoun replaced by the
    first name (``he``/``she``/``him`` by ``Raj``, ``his``/``hers`` and a possessive ``her``
    by ``Raj's``, ``himself``/``herself`` by ``themself``), so the sentence still reads.

    EnterpriseBench's descriptions (942 of 1,260) say he/she/his/her: to a reader who may not
    read ``Gender`` they would tell it. The name is left as it is: it is the directory entry
    the operator's policy grants.

    Example:
        >>> neutral_text("She leads her team.", "Priya Shah")
        "Priya leads Priya's team."
    """
    if not text:
        return text
    first = (name or "").split()[0] if (name or "").split() else "this employee"

    def swap(m: re.Match[str]) -> str:
        word = m[0].lower()
        if word in ("himself", "herself"):
            out = "themself"
        elif word in ("he", "she", "him"):
            out = first
        elif word in ("his", "hers"):
            out = f"{first}'s"
        else:  # her: an object (him) or a possessive (his), by the word that follows
            after = _NEXT_WORD.match(text, m.end())[1].lower()
            is_object = not after or after in _AFTER_OBJECT or after.endswith("ly")
            out = first if is_object else f"{first}'s"
        return out[:1].upper() + out[1:] if m[0][:1].isupper() else out

    return _GENDERED.sub(swap, text)


def _subordinates(by_id: dict[str, dict[str, Any]]) -> dict[str, frozenset[str]]:
    """Everyone below each employee along ``reportees`` (a cycle in the data stops the walk)."""
    out: dict[str, frozenset[str]] = {}
    for emp_id in by_id:
        seen: set[str] = set()
        stack = list(by_id[emp_id]["reportees"])
        while stack:
            other = stack.pop()
            if other in seen or other == emp_id or other not in by_id:
                continue
            seen.add(other)
            stack.extend(by_id[other]["reportees"])
        out[emp_id] = frozenset(seen)
    return out


def today() -> str:
    """The date a change is stamped with: ``ENTERPRISE_TODAY`` (YYYY-MM-DD, for a replayable
    run) or the machine's date."""
    fixed = os.environ.get("ENTERPRISE_TODAY", "").strip()
    if fixed:
        try:
            return dt.date.fromisoformat(fixed).isoformat()
        except ValueError:
            raise ValueError(f"ENTERPRISE_TODAY={fixed!r} is not a date (YYYY-MM-DD)") from None
    return dt.date.today().isoformat()
