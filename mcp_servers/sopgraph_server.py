"""sopgraph's own MCP server: list, describe, run and resume SOPs from any MCP client.

SOPs are found on a search path (``SOPGRAPH_SOPS``, colon-separated folders, then
``examples/*/sop.yaml`` under the current directory and the repository). Each SOP is opened
once (its MCP servers started, its graph compiled) on first use and kept open for the server's
lifetime; every run is checkpointed, so a run paused on a gated action can be resumed later,
even by another server process sharing the checkpoint store.

Run::

    sopgraph mcp serve                                                # stdio
    sopgraph mcp serve --transport http --port 8000 --tokens FILE     # streamable HTTP at /mcp

Over HTTP every client needs a bearer token from the operator's tokens file (format in
``mcp_servers/server_auth.py``); the token's identity is recorded as the approver of the gated
actions that client answers; wrong tokens are throttled per client address and for all
(``login_throttle.TokenThrottle``: 429 with Retry-After). Over stdio the approver is the OS user.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from sopgraph.mcp_servers.http_transport import guard_session_manager
from sopgraph.mcp_servers.login_throttle import LoginThrottle, TokenThrottle
from sopgraph.mcp_servers.server_auth import (
    TokenError,
    TokenTable,
    auth_settings,
    local_operator,
    request_identity,
)
from sopgraph.mcp_servers.sop_catalog import RunSummary, SopInfo, SopSummary, add_resources
from sopgraph.mcp_servers.sop_sessions import Hub

SERVER_NAME = "sopgraph"
INSTRUCTIONS = """\
sopgraph runs Standard Operating Procedures (SOPs) compiled into decision graphs.
Call list_sops to see the SOPs, describe_sop to learn the input a SOP expects, then run_sop.
A run that reaches a gated action (approval required) stops with status "interrupted";
answer it with resume_run(run_id, "approve" or "reject", interrupt_id) naming the gated action
shown (pending[].id). get_run fetches any run by id.
The SOP text (YAML) and its Mermaid diagram are resources sop://<sop_id>/text and
sop://<sop_id>/mermaid."""

_READ = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
# run_sop performs the SOP's actions (their tools), so it is destructive like resume_run.
_RUN = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
_RESUME = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)

# What the operator lets clients do at gated actions (``--approval``); clients never decide
# more than this: ``ask`` pauses every gated action for resume_run, ``approve``/``reject``
# decide them all by the operator's policy, ``client`` lets run_sop's ``approval`` decide.
SERVER_APPROVALS = ("ask", "approve", "reject", "client")
# Streamable HTTP bodies up to this size reach the tools, which refuse a run input over
# graphs.input_schema.MAX_INPUT_BYTES with a tool error; larger bodies get HTTP 413.
MAX_HTTP_BODY = 16 * 1024 * 1024

SopId = Annotated[str, Field(description="An SOP id as returned by list_sops.")]
RunId = Annotated[
    str, Field(description="A run id as returned by run_sop: '<sop_id>:<thread_id>'.")
]


class SopgraphMCP(FastMCP):
    """FastMCP whose argument errors are one line a model can act on, not pydantic's report.

    ``throttle`` counts the wrong bearer tokens over HTTP (a fresh ``LoginThrottle`` if None).
    """

    throttle: LoginThrottle | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            err = cause.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "arguments"
            got = repr(err.get("input"))[:80]
            raise ToolError(
                f"{name}: argument {where!r}: {err['msg']} (got {got}); see the tool's input schema"
            ) from None

    def streamable_http_app(self) -> Any:
        """The SDK's app, refused without tokens (deny by default), with the JSON depth limit,
        inside ``TokenThrottle`` (wrong tokens throttled per client address and for all)."""
        if self._token_verifier is None:
            raise TokenError(
                "sopgraph's MCP server is not served over HTTP without bearer tokens: pass "
                "create_server(tokens=...) or `sopgraph mcp serve --tokens FILE`"
            )
        app = super().streamable_http_app()
        guard_session_manager(self.session_manager)
        return TokenThrottle(app, self.throttle)

    def sse_app(self, mount_path: str | None = None) -> Any:
        raise TokenError("sopgraph's MCP server is served over stdio or streamable HTTP only")


@contextmanager
def _input_errors() -> Iterator[None]:
    from sopgraph.runtime.runner import InputError  # lazily: listing tools need not load LangGraph

    try:
        yield
    except InputError as exc:
        raise ToolError(str(exc)) from None


def _reporter(ctx: Context) -> Any:
    """An ``on_step`` callback sending one MCP progress notification per executed node."""
    done = 0

    async def on_step(node: str, update: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        # No total: which branches fire depends on the data.
        await ctx.report_progress(done, None, _progress_message(node, update))

    return on_step


def _progress_message(node: str, update: dict[str, Any]) -> str:
    steps = update.get("trail") or []
    if not steps:
        return node
    step = steps[-1]
    verdict = f" {step['verdict']}" if step.get("verdict") else ""
    return f"{node}: {step.get('status', 'done')}{verdict}"


def _client_policy(server_policy: str, asked: str) -> str:
    """The approval policy a run_sop call gets: the operator's unless it lets the client pick."""
    if server_policy == "client":
        return asked
    if asked != "ask" and asked != server_policy:
        raise ToolError(
            f"approval {asked!r} is not allowed: this server's approval policy is "
            f"{server_policy!r} (the operator's `sopgraph mcp serve --approval`); call run_sop "
            "without 'approval' and answer gated actions with resume_run"
        )
    return server_policy


def _resume_ceiling(server_policy: str, decision: str) -> str:
    """The policy a resume_run answer goes through: ``reject`` servers approve nothing."""
    if server_policy == "reject" and decision != "reject":
        raise ToolError(
            f"decision {decision!r} is not allowed: this server's approval policy is 'reject' "
            "(the operator's `sopgraph mcp serve --approval`), so it executes no gated action; "
            "answer 'reject', or have the run resumed where approving is allowed"
        )
    return "reject" if server_policy == "reject" else "ask"


def create_server(
    hub: Hub,
    approval: str = "ask",
    *,
    tokens: TokenTable | None = None,
    operator: str | None = None,
    throttle: LoginThrottle | None = None,
    queue: str | None = None,
    **settings: Any,
) -> FastMCP:
    """The FastMCP server over ``hub``'s SOPs; ``settings`` go to ``FastMCP`` (host, port...).

    ``approval`` is the operator's policy at gated actions (``SERVER_APPROVALS``). ``tokens``
    (required to serve HTTP) authenticates every request and names its approver; without them
    (stdio) the approver is ``operator``, default the OS user. ``throttle`` counts the wrong
    tokens over HTTP (default: a fresh ``LoginThrottle``, 5 a minute per address, 50 for all).
    ``queue`` (a Postgres URL, the hub's checkpoint store) adds ``submit_run``.
    """
    if approval not in SERVER_APPROVALS:
        raise ValueError(f"approval must be one of {', '.join(SERVER_APPROVALS)}")
    catalog = hub.catalog
    approval_policy = approval
    operator = local_operator(operator)
    settings.setdefault("max_request_body_size", MAX_HTTP_BODY)
    if tokens is not None:
        url = f"http://{settings.get('host', '127.0.0.1')}:{settings.get('port', 8000)}"
        settings.update(auth=auth_settings(url), token_verifier=tokens)

    @asynccontextmanager
    async def lifespan(_: FastMCP) -> AsyncIterator[Hub]:
        async with hub.use():
            yield hub

    server = SopgraphMCP(
        SERVER_NAME, instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING", **settings
    )
    server.throttle = throttle

    @server.tool(annotations=_READ)
    def list_sops() -> list[SopSummary]:
        """List the SOPs this server can run.

        Returns each SOP's id, title, version, description, entry (input) types and node
        counts (decision nodes, action nodes, gated actions that pause for approval).
        Use an id with describe_sop to learn the input it expects, then run_sop.
        """
        return [e.summary() for e in catalog.entries()]

    @server.tool(annotations=_READ)
    def describe_sop(sop_id: SopId) -> SopInfo:
        """Describe one SOP: what to pass to run_sop and what the run will do.

        Returns the entry types with, for each, the input fields its tools read and an example
        input; the parameters (thresholds) with their defaults; every node (kind, text,
        children); and the gated actions that pause a run for approval.
        """
        return catalog.get(sop_id).info()

    def policy_of(approval: str, ctx: Context) -> tuple[str, str]:
        """A run's approval policy and who set it: the client's choice where allowed."""
        policy = _client_policy(approval_policy, approval)
        if approval_policy == "client":  # the authenticated client chose the policy
            return policy, request_identity(ctx, tokens, operator)
        return policy, f"operator (--approval {policy})"

    @server.tool(annotations=_RUN)
    async def run_sop(
        sop_id: SopId,
        input: Annotated[
            dict[str, Any],
            Field(
                description=(
                    "The run input: a JSON object. 'type' picks the entry (optional when the "
                    "SOP has one entry type); 'site' and 'timestamp' are passed to every tool; "
                    "add the fields describe_sop lists for that entry type."
                )
            ),
        ],
        ctx: Context,
        thread_id: Annotated[
            str | None,
            Field(
                description=(
                    "Optional thread id. Reusing the thread id of an unfinished run continues "
                    "it; of a finished run returns its result. Default: a new id."
                )
            ),
        ] = None,
        approval: Annotated[
            Literal["ask", "approve", "reject"],
            Field(
                description=(
                    "What to do at gated actions: 'ask' pauses the run (status 'interrupted') "
                    "for resume_run; 'approve' or 'reject' decides all of them now, only where "
                    "the server's operator allows it (otherwise a tool error)."
                )
            ),
        ] = "ask",
    ) -> RunSummary:
        """Run an SOP on one input and return the outcome.

        The result has run_id (keep it for get_run and resume_run), status ('done',
        'interrupted' when a gated action awaits approval, 'unresolved' when some node could
        not be decided), the path of node ids executed, each node's verdict, the actions
        taken and any pending approvals. Sends a progress notification per executed node.
        """
        entry = catalog.get(sop_id)
        policy, who = policy_of(approval, ctx)
        session = await hub.session(sop_id)
        run_id = f"{entry.sop.id}:{thread_id or uuid.uuid4().hex[:12]}"
        with _input_errors():
            result = await session.run(
                input, thread_id=run_id, approval=policy, on_step=_reporter(ctx), approver=who
            )
        return RunSummary.of(result)

    @server.tool(annotations=_READ)
    async def get_run(
        run_id: RunId,
        include_trail: Annotated[
            bool, Field(description="Also return the step-by-step trail (larger).")
        ] = False,
    ) -> RunSummary:
        """Fetch a run by id: its status, path, verdicts, actions and pending approvals.

        Works for runs started by this or an earlier server sharing the checkpoint store.
        """
        session = await hub.run_session(run_id)
        return RunSummary.of(await session.result(run_id), trail=include_trail)

    @server.tool(annotations=_RESUME)
    async def resume_run(
        run_id: RunId,
        decision: Annotated[
            Literal["approve", "reject"],
            Field(description="'approve' executes the gated action; 'reject' skips it."),
        ],
        interrupt_id: Annotated[
            str,
            Field(
                description="The id of the pending gated action this answer is for: "
                "'pending[].id' of the run as run_sop or get_run returned it. An answer "
                "for a gate the run no longer waits on, or one another client answered "
                "first, is refused and changes nothing.",
                max_length=200,
            ),
        ],
        ctx: Context,
    ) -> RunSummary:
        """Answer the gated action an interrupted run is waiting on, and continue the run.

        Only for runs whose status is 'interrupted'. Returns the run's new state; it may be
        interrupted again at a later gated action. Sends a progress notification per node.
        A server whose operator's policy is 'reject' accepts only 'reject'.
        """
        ceiling = _resume_ceiling(approval_policy, decision)
        who = request_identity(ctx, tokens, operator)
        session = await hub.run_session(run_id)
        with _input_errors():
            result = await session.resume(
                run_id,
                decision,
                interrupt_id=interrupt_id,
                on_step=_reporter(ctx),
                approver=who,
                approval=ceiling,
            )
        return RunSummary.of(result)

    add_resources(server, catalog)
    if queue:
        from sopgraph.mcp_servers.queue_tool import add_queue_tool

        add_queue_tool(server, catalog, queue, policy_of)
    return server
