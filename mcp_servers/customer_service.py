"""Customer-service MCP server for the SOP-agent service-interruption example.

Each tool is one API of the SOP. It takes a ``case_id`` and returns the outcome scripted for
that case in a cases file, as the Grounded Customer Service Benchmark's simulator does, so the
imported SOP runs without an LLM. Every call is recorded per case (``get_call_log`` and an
optional JSON-lines file) so a test can read the path the SOP took. The APIs whose outcome a
branch tests declare it as a typed record (MCP ``outputSchema``: the field and its values), so a
client, and the tool-maker's grammar, knows the fields without calling.

Cases file (JSON)::

    {"defaults": {"check_outage_resolution_time": {"estimated_resolution_time": "4 hours"}},
     "cases": {"c00": {"authenticate_customer": {"authentication_status": "failed"}}}}

Run::

    python -m sopgraph.mcp_servers.customer_service --cases examples/service_interruption/cases.json
    python -m sopgraph.mcp_servers.customer_service --cases ... --transport streamable-http --port 8765
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

SERVER_NAME = "customer_service"
CASES_ENV = "CUSTOMER_SERVICE_CASES"
CALL_LOG_ENV = "CUSTOMER_SERVICE_CALL_LOG"

CaseId = Annotated[str, Field(description="The test case whose scripted outcome to return.")]
Outcome = dict[str, Any]

_LOOKUP = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
_ACTS = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)


class Authentication(BaseModel):
    authentication_status: Literal["success", "failed"]


class Account(BaseModel):
    account_status: Literal["active", "inactive due to unpaid bill"]


class AreaOutages(BaseModel):
    outage_status: Literal["outage reported", "none"]


class LineConnection(BaseModel):
    connection_status: Literal["operational", "interruption_detected"]


class ProblemResolution(BaseModel):
    problem_status: Literal["resolved", "persists"]


class CasesFile(BaseModel):
    """Scripted outcomes: per case, per API, the dict the API returns."""

    model_config = ConfigDict(extra="forbid")
    defaults: dict[str, Outcome] = Field(default_factory=dict)
    cases: dict[str, dict[str, Outcome]]


class ConfigError(Exception):
    """A cases file the user must fix; ``str()`` is one line."""


def load_cases(path: Path) -> CasesFile:
    try:
        return CasesFile.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such cases file; pass --cases or set {CASES_ENV}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "top level"
        raise ConfigError(
            f"{path}: {where}: {err['msg']}; a cases file is "
            '{"defaults": {api: outcome}, "cases": {case_id: {api: outcome}}}'
        ) from None


class World:
    """The scripted outcomes and the calls made so far."""

    def __init__(self, cases: CasesFile, source: str, call_log: Path | None = None):
        self.cases = cases
        self.source = source
        self.call_log = call_log
        self.calls: dict[str, list[dict[str, Any]]] = {}

    def record(self, api: str, case_id: str, model: type[BaseModel]) -> Any:
        """The scripted outcome as the API's declared record (its output schema)."""
        outcome = self.outcome(api, case_id)
        try:
            return model.model_validate(outcome)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ToolError(
                f"case '{case_id}' scripts {outcome!r} for {api}: {err['msg']} at "
                f"{'.'.join(str(p) for p in err['loc'])}; fix it in {self.source}"
            ) from None

    def outcome(self, api: str, case_id: str) -> Outcome:
        case = self.cases.cases.get(case_id)
        if case is None:
            raise ToolError(f"unknown case '{case_id}'; the cases are in {self.source}")
        result = case.get(api, self.cases.defaults.get(api))
        # A call the case does not script is still a call on the path: record it, then refuse.
        self._record({"case_id": case_id, "api": api, "result": result})
        if result is None:
            raise ToolError(
                f"case '{case_id}' scripts no outcome for {api}; add it to the case or to "
                f"'defaults' in {self.source}"
            )
        return result

    def _record(self, record: dict[str, Any]) -> None:
        self.calls.setdefault(record["case_id"], []).append(record)
        if self.call_log is not None:
            with self.call_log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


def build_server(world: World, host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """The MCP server over ``world``: one tool per SOP API, plus ``get_call_log``."""
    mcp = FastMCP(
        SERVER_NAME,
        instructions="Customer-service APIs of a telecom operator (scripted per test case).",
        host=host,
        port=port,
    )

    @mcp.tool(name="ServiceInterruptionHandle", annotations=_LOOKUP)
    def service_interruption_handle(case_id: CaseId) -> Outcome:
        """Service Int. Handling SOP: open the handling of a reported service interruption."""
        return world.outcome("ServiceInterruptionHandle", case_id)

    @mcp.tool(annotations=_LOOKUP)
    def authenticate_customer(case_id: CaseId) -> Authentication:
        """Confirm customer's identity and account details.

        Returns ``authentication_status``: ``success`` or ``failed``.
        """
        return world.record("authenticate_customer", case_id, Authentication)

    @mcp.tool(annotations=_LOOKUP)
    def verify_customer_account(case_id: CaseId) -> Account:
        """Check the customer's account status.

        Returns ``account_status``: ``active`` or ``inactive due to unpaid bill``.
        """
        return world.record("verify_customer_account", case_id, Account)

    @mcp.tool(annotations=_LOOKUP)
    def check_area_outages(case_id: CaseId) -> AreaOutages:
        """Check for any known outages in the customer's area.

        Returns ``outage_status``: ``outage reported`` or ``none``.
        """
        return world.record("check_area_outages", case_id, AreaOutages)

    @mcp.tool(annotations=_LOOKUP)
    def check_outage_resolution_time(case_id: CaseId) -> Outcome:
        """Provide an estimated time for when the service will be restored."""
        return world.outcome("check_outage_resolution_time", case_id)

    @mcp.tool(annotations=_LOOKUP)
    def assess_line_connection_status(case_id: CaseId) -> LineConnection:
        """Check the customer's connection status.

        Returns ``connection_status``: ``operational`` or ``interruption_detected``.
        """
        return world.record("assess_line_connection_status", case_id, LineConnection)

    @mcp.tool(annotations=_LOOKUP)
    def check_interruption_troubleshooting_guide(case_id: CaseId) -> Outcome:
        """Check the interruption self-troubleshooting guide."""
        return world.outcome("check_interruption_troubleshooting_guide", case_id)

    @mcp.tool(annotations=_LOOKUP)
    def query_problem_resolution_status(case_id: CaseId) -> ProblemResolution:
        """Ask the customer if the problem is successfully resolved.

        Returns ``problem_status``: ``resolved`` or ``persists``.
        """
        return world.record("query_problem_resolution_status", case_id, ProblemResolution)

    @mcp.tool(annotations=_ACTS)
    def escalate_issue_to_technical_support(case_id: CaseId) -> Outcome:
        """Escalate the issue to the technical support team (opens a ticket)."""
        return world.outcome("escalate_issue_to_technical_support", case_id)

    @mcp.tool(annotations=_LOOKUP)
    def get_call_log(case_id: CaseId) -> list[dict[str, Any]]:
        """The API calls made for a case so far, in order: ``[{api, result}, ...]``."""
        return [{"api": r["api"], "result": r["result"]} for r in world.calls.get(case_id, [])]

    return mcp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sopgraph.mcp_servers.customer_service", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--cases", default=os.environ.get(CASES_ENV), help=f"cases JSON file (env {CASES_ENV})"
    )
    parser.add_argument(
        "--call-log",
        default=os.environ.get(CALL_LOG_ENV),
        help=f"append every call as a JSON line to this file (env {CALL_LOG_ENV})",
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if not args.cases:
        print(f"error: no cases file; pass --cases FILE or set {CASES_ENV}", file=sys.stderr)
        return 2
    try:
        cases = load_cases(Path(args.cases))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    call_log = Path(args.call_log) if args.call_log else None
    if call_log is not None:
        call_log.parent.mkdir(parents=True, exist_ok=True)
    server = build_server(World(cases, args.cases, call_log), host=args.host, port=args.port)
    server.run(transport=args.transport)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
